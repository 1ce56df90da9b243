/**
 * `GET /api/v1/environments` (filters, keyset pagination), `GET /api/v1/environments/:id`
 * (resources, recent sessions, activity timeline), and the changes people make:
 * `POST …/protect`, `…/unprotect` (developer), `…/keep-alive` (read). Each change is audited.
 */
import { Type } from 'typebox';
import { ArchiveSummary } from '../../cleanup/archive.js';
import { TendError } from '../../errors.js';
import type { App, ServerServices } from '../services.js';
import { actorOf, type Principal } from '../auth.js';
import { decodeCursor } from '../db/repositories/environments.js';
import { keepAliveUntil, listFilter, ListQuery, visibleEnvironment } from '../environment-queries.js';
import { EnvironmentView, ErrorResponse, ResourceView, SessionView, TimelineView } from '../../api/views.js';
import { environmentView, resourceView, sessionView, timelineView } from '../views.js';

const ListResponse = Type.Object({
  items: Type.Array(EnvironmentView),
  nextCursor: Type.Union([Type.String(), Type.Null()]),
});

const DetailResponse = Type.Object({
  environment: EnvironmentView,
  resources: Type.Array(ResourceView),
  sessions: Type.Array(SessionView),
  timeline: Type.Array(TimelineView),
  /** The archive `tend restore` can bring back (docs/cleanup.md#undo), or null. */
  archive: Type.Union([ArchiveSummary, Type.Null()]),
});

const IdParams = Type.Object({ id: Type.String() });
const ChangeResponse = Type.Object({ environment: EnvironmentView });
const KeepAliveBody = Type.Object({
  for: Type.Optional(
    Type.String({
      pattern: '^[0-9]+[mhd]$',
      default: '24h',
      description: 'How long, e.g. "8h", "3d"; at most 30d.',
    }),
  ),
});

export function registerEnvironmentRoutes(app: App, services: ServerServices): void {
  app.get(
    '/api/v1/environments',
    {
      config: { permission: 'read' },
      schema: {
        operationId: 'listEnvironments',
        summary: 'List environments, most recently active first',
        tags: ['environments'],
        querystring: ListQuery,
        response: { 200: ListResponse, 400: ErrorResponse, 401: ErrorResponse, 403: ErrorResponse },
      },
    },
    async (request) => {
      const q = request.query;
      const cursor = q.cursor ? decodeCursor(q.cursor) : undefined;
      if (q.cursor && !cursor)
        throw new TendError('TEND_SERVER_BAD_REQUEST', 'cursor is not one this server gave out');
      const page = await services.environments.list(
        listFilter(q, request.principal, services.now()),
        q.limit ?? 50,
        cursor,
      );
      return { items: page.items.map(environmentView), nextCursor: page.nextCursor };
    },
  );

  app.get(
    '/api/v1/environments/:id',
    {
      config: { permission: 'read' },
      schema: {
        operationId: 'getEnvironment',
        summary: 'One environment with its resources, recent sessions and activity timeline',
        tags: ['environments'],
        params: IdParams,
        response: { 200: DetailResponse, 401: ErrorResponse, 403: ErrorResponse, 404: ErrorResponse },
      },
    },
    async (request) => {
      const env = await visibleEnvironment(services, request.params.id, request.principal);
      const [resources, sessions, timeline, archive] = await Promise.all([
        services.environments.resources(env.id),
        services.environments.recentSessions(env.id),
        services.environments.timeline(env.id),
        services.cleanup.archives.summary(env.id, services.now()),
      ]);
      return {
        environment: environmentView(env),
        resources: resources.map(resourceView),
        sessions: sessions.map(sessionView),
        timeline: timeline.map(timelineView),
        archive: archive ?? null,
      };
    },
  );

  const change = (request: { params: { id: string }; principal: Principal | null }) =>
    visibleEnvironment(services, request.params.id, request.principal);

  for (const action of ['protect', 'unprotect'] as const) {
    app.post(
      `/api/v1/environments/:id/${action}`,
      {
        config: { permission: 'protect' },
        schema: {
          operationId: action === 'protect' ? 'protectEnvironment' : 'unprotectEnvironment',
          summary:
            action === 'protect'
              ? 'Protect an environment: automatic cleanup never touches it (developer or admin)'
              : 'Remove the protection (developer or admin)',
          tags: ['environments'],
          params: IdParams,
          response: { 200: ChangeResponse, 401: ErrorResponse, 403: ErrorResponse, 404: ErrorResponse },
        },
      },
      async (request) => {
        const env = await change(request);
        const updated = await services.environments.setProtected(
          env.id,
          action === 'protect',
          actorOf(request.principal!),
          services.now(),
        );
        return { environment: environmentView(updated ?? env) };
      },
    );
  }

  app.post(
    '/api/v1/environments/:id/keep-alive',
    {
      config: { permission: 'keep-alive' },
      // A POST without a body keeps alive for the default duration.
      preValidation: async (request) => {
        (request as { body: unknown }).body ??= {};
      },
      schema: {
        operationId: 'keepEnvironmentAlive',
        summary:
          'Keep an environment alive: no automatic cleanup before now + `for` (default 24h, at most 30d)',
        tags: ['environments'],
        // Read by the OpenAPI document's transform (app.ts): the body may be left out.
        'x-optional-body': true,
        params: IdParams,
        body: KeepAliveBody,
        response: {
          200: ChangeResponse,
          400: ErrorResponse,
          401: ErrorResponse,
          403: ErrorResponse,
          404: ErrorResponse,
        },
      },
    },
    async (request) => {
      const env = await change(request);
      const now = services.now();
      const until = keepAliveUntil(request.body.for, now);
      const updated = await services.environments.keepAlive(env.id, until, actorOf(request.principal!), now);
      return { environment: environmentView(updated ?? env) };
    },
  );
}
