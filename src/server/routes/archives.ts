/**
 * The archives of cleaned environments for people (admin): `GET /api/v1/environments/:id/archive`
 * (what `tend restore` re-creates, Secrets unsealed — audited `archive-read`),
 * `POST /api/v1/environments/:id/archive/restored` (the restore's report — audited
 * `archive-restored`), and `POST /api/v1/environments/:id/restore` (a restore job the executor of
 * the archive's cluster runs — the dashboard's Restore button — audited `restore-requested`). A
 * token bound to another project gets 404, as for the environment itself.
 */
import { Type } from 'typebox';
import { RestorableArchive } from '../../cleanup/archive.js';
import { nameMaxLength, namePattern } from '../../config/project.js';
import { JobView } from '../../cleanup/protocol.js';
import { ErrorResponse } from '../../api/views.js';
import { TendError } from '../../errors.js';
import { actorOf } from '../auth.js';
import { visibleEnvironment } from '../environment-queries.js';
import type { App, ServerServices } from '../services.js';

const IdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 200 }) });
const errors = { 401: ErrorResponse, 403: ErrorResponse, 404: ErrorResponse, 422: ErrorResponse };
/** `into`: a namespace name Kubernetes takes (a DNS label), the rule of tend.yml's names. */
const RestoreBody = Type.Object(
  { into: Type.Optional(Type.String({ pattern: namePattern, maxLength: nameMaxLength })) },
  { additionalProperties: false },
);
const ArchiveQuery = Type.Object(
  { into: Type.Optional(Type.String({ pattern: namePattern, maxLength: nameMaxLength })) },
  { additionalProperties: false },
);
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
        operationId: 'getEnvironmentArchive',
        summary: "The environment's latest archive, for tend restore: its objects and Secrets (admin)",
        description:
          'With `into`, the namespace tend restore will write into is checked first, as a restore job checks it: ' +
          'a protected name is refused (400), a namespace recorded for another environment too (409).',
        tags: ['environments'],
        params: IdParams,
        querystring: ArchiveQuery,
        response: { 200: RestorableArchive, ...errors, 409: ErrorResponse },
      },
    },
    async (request) => {
      const env = await visibleEnvironment(services, request.params.id, request.principal);
      const now = services.now();
      if (request.query.into !== undefined) {
        const latest = await archives.requireLatest(env.id, now);
        await services.cleanup.restores.checkTarget(env, latest.target_key, request.query.into);
      }
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
        operationId: 'recordArchiveRestored',
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
      const row = await archives.requireLatest(env.id, now);
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

  app.post(
    '/api/v1/environments/:id/restore',
    {
      config: { permission: 'restore' },
      // A POST without a body restores into the archived namespace.
      preValidation: async (request) => {
        (request as { body: unknown }).body ??= {};
      },
      schema: {
        // Read by the OpenAPI document's transform (app.ts): the body may be left out.
        'x-optional-body': true,
        operationId: 'restoreEnvironment',
        summary:
          "Restore the environment from its latest archive: a job the executor of the archive's cluster runs (admin)",
        description:
          'Re-creates the namespace (or `into`, a new one) and every archived object, as `tend restore` does; ' +
          'refused (409) when the namespace is recorded as present again or a job of it is open. ' +
          'The job is listed in GET /api/v1/cleanup/jobs; its outcome says what was not restored.',
        tags: ['environments'],
        params: IdParams,
        body: RestoreBody,
        response: { 202: Type.Object({ job: JobView }), ...errors, 409: ErrorResponse },
      },
    },
    async (request, reply) => {
      const env = await visibleEnvironment(services, request.params.id, request.principal);
      const job = await services.cleanup.restores.request(
        env,
        actorOf(request.principal!),
        request.body.into,
      );
      const [view] = await services.cleanup.queue.jobHistory([job]);
      return reply.code(202).send({ job: view! });
    },
  );
}
