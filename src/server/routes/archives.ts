/**
 * The archives of cleaned environments for people (admin): `GET /api/v1/environments/:id/archive`
 * (what `tend restore` re-creates, Secrets unsealed — audited `archive-read`) and
 * `POST /api/v1/environments/:id/archive/restored` (the restore's report — audited
 * `archive-restored`). A token bound to another project gets 404, as for the environment itself.
 */
import { Type } from 'typebox';
import { RestorableArchive } from '../../cleanup/archive.js';
import { ErrorResponse } from '../../api/views.js';
import { TendError } from '../../errors.js';
import { actorOf } from '../auth.js';
import { visibleEnvironment } from '../environment-queries.js';
import type { App, ServerServices } from '../services.js';

const IdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 200 }) });
const errors = { 401: ErrorResponse, 403: ErrorResponse, 404: ErrorResponse, 422: ErrorResponse };
const RestoredBody = Type.Object(
  { archiveId: Type.String({ minLength: 1, maxLength: 200 }) },
  { additionalProperties: false },
);

export function registerArchiveRoutes(app: App, services: ServerServices): void {
  const archives = services.cleanup.archives;

  app.get(
    '/api/v1/environments/:id/archive',
    {
      config: { permission: 'restore' },
      schema: {
        summary: "The environment's latest archive, for tend restore: its objects and Secrets (admin)",
        tags: ['environments'],
        params: IdParams,
        response: { 200: RestorableArchive, ...errors },
      },
    },
    async (request) => {
      const env = await visibleEnvironment(services, request.params.id, request.principal);
      const now = services.now();
      const { row, archive } = await archives.restorable(env.id, now);
      await archives.audited(row, actorOf(request.principal!), now);
      return archive;
    },
  );

  app.post(
    '/api/v1/environments/:id/archive/restored',
    {
      config: { permission: 'restore' },
      schema: {
        summary: 'Record that the archive was restored (admin; tend restore calls it)',
        tags: ['environments'],
        params: IdParams,
        body: RestoredBody,
        response: { 200: Type.Object({ restoredAt: Type.String() }), ...errors, 409: ErrorResponse },
      },
    },
    async (request) => {
      const env = await visibleEnvironment(services, request.params.id, request.principal);
      const now = services.now();
      const { row } = await archives.restorable(env.id, now);
      if (row.id !== request.body.archiveId) {
        throw new TendError(
          'TEND_CLEANUP_CONFLICT',
          `archive ${request.body.archiveId.slice(0, 64)} is not the latest of environment ${env.id}; it is ${row.id}`,
        );
      }
      await archives.markRestored(row, actorOf(request.principal!), now);
      return { restoredAt: now.toISOString() };
    },
  );
}
