/** `GET /api/v1/audit`: who changed what and every decision taken, newest first. */
import { Type } from 'typebox';
import { visibleProjects } from '../auth.js';
import { canSee } from '../db/visible-projects.js';
import type { App, ServerServices } from '../services.js';
import { AuditView, ErrorResponse } from '../../api/views.js';
import { auditView } from '../views.js';

export function registerAuditRoutes(app: App, services: ServerServices): void {
  app.get(
    '/api/v1/audit',
    {
      config: { permission: 'read' },
      schema: {
        operationId: 'listAuditEntries',
        summary: 'The audit log, newest first',
        tags: ['audit'],
        querystring: Type.Object({
          environmentId: Type.Optional(Type.String()),
          action: Type.Optional(Type.String()),
          before: Type.Optional(Type.String({ description: 'Entries older than this id (the cursor).' })),
          limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 100 })),
        }),
        response: {
          200: Type.Object({
            items: Type.Array(AuditView),
            nextCursor: Type.Union([Type.String(), Type.Null()]),
          }),
          401: ErrorResponse,
          403: ErrorResponse,
        },
      },
    },
    async (request) => {
      const { limit = 100, ...filter } = request.query;
      const rows = await services.audit.list(filter, limit + 1);
      const items = rows.slice(0, limit);
      // A principal that sees some projects only sees the entries of their environments.
      const projects = visibleProjects(request.principal);
      const visible =
        projects === 'all'
          ? items
          : items.filter((a) => {
              const project = a.detail ? (JSON.parse(a.detail) as { project?: unknown }).project : undefined;
              return typeof project === 'string' && canSee(projects, project);
            });
      return {
        items: visible.map(auditView),
        nextCursor: rows.length > limit ? (items[items.length - 1]?.id ?? null) : null,
      };
    },
  );
}
