/**
 * The executor routes of the cleanup API (scope `agent`: `tend agent`, bound to clusters or
 * targets if its token is): heartbeat, inventory, claim, start, complete — the job queue over HTTP, each route
 * taken from the one table of queue routes in the cleanup protocol — and the archive a started
 * delete job stores before its deletion.
 */
import { Type, type TSchema } from 'typebox';
import { archiveRoute, queueRoutes, restoreOrderRoute, type QueueRoute } from '../../cleanup/protocol.js';
import { TendError } from '../../errors.js';
import type { App, ServerServices } from '../services.js';
import { actorOf, type Principal } from '../auth.js';
import { cleanupErrors } from './cleanup.js';

const JobParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 200 }) });

/** Whether the principal is an agent token bound to clusters or targets. */
function isBound(principal: Principal | null): principal is Principal {
  return Boolean(principal?.clusters || (principal?.via !== 'oidc' && principal?.targets));
}

/**
 * 403 unless an agent token bound to clusters (`kubernetes/<clusterId>`) or to targets of any
 * plugin (`<kind>/<id>`) may act on the target.
 */
function checkTarget(principal: Principal | null, targetKey: string): void {
  if (!isBound(principal)) return;
  const clusters = principal.clusters ?? [];
  const targets = (principal.via !== 'oidc' && principal.targets) || [];
  const cluster = /^kubernetes\/(.+)$/.exec(targetKey)?.[1];
  if ((cluster === undefined || !clusters.includes(cluster)) && !targets.includes(targetKey)) {
    const bound = [
      ...(clusters.length > 0 ? [`clusters ${clusters.join(', ')}`] : []),
      ...(targets.length > 0 ? [`targets ${targets.join(', ')}`] : []),
    ].join(' and ');
    throw new TendError(
      'TEND_AUTH_FORBIDDEN',
      `token "${principal.tokenName}" is bound to ${bound}; it may not act on ${targetKey.slice(0, 100)}`,
    );
  }
}

/**
 * 403 for a token bound to a project: an executor serves a whole target — its inventory speaks
 * for every project's namespaces there (an empty complete one would mark them missing) and its
 * claims take any project's jobs — so no project's token may act as one.
 */
function checkUnbound(principal: Principal | null): void {
  if (!principal?.project) return;
  throw new TendError(
    'TEND_AUTH_FORBIDDEN',
    `token "${principal.tokenName}" is bound to project ${principal.project}; an executor serves every project of its targets: use an agent token bound to no project (tend server token create --scope agent)`,
  );
}

/** The OpenAPI operation of each queue route: stable names for generated clients. */
const queueOperationIds: Record<QueueRoute, string> = {
  heartbeat: 'executorHeartbeat',
  inventory: 'reportInventory',
  claim: 'claimCleanupJobs',
  start: 'startCleanupJob',
  restoreEvents: 'recordRestoreEvents',
  complete: 'completeCleanupJob',
};

/** The options of a queue route (agent scope), from the one table of queue routes. */
function executorRoute<Q extends QueueRoute, P extends TSchema = TSchema>(
  route: Q,
  options: { bodyLimit?: number; params?: P } = {},
) {
  const r: (typeof queueRoutes)[Q] = queueRoutes[route];
  const body: (typeof queueRoutes)[Q]['body'] = r.body;
  const response: (typeof queueRoutes)[Q]['response'] = r.response;
  return {
    config: { permission: 'agent' as const },
    ...(options.bodyLimit ? { bodyLimit: options.bodyLimit } : {}),
    schema: {
      operationId: queueOperationIds[route],
      summary: r.summary,
      tags: ['cleanup executors'],
      // Only the job routes have params (fastify warns of an undefined params schema).
      ...(options.params ? { params: options.params } : ({} as { params: P })),
      body,
      response: { 200: response, ...cleanupErrors },
    },
  };
}

export function registerCleanupExecutorRoutes(app: App, services: ServerServices): void {
  const { queue, jobs } = services.cleanup;

  app.post(queueRoutes.heartbeat.path, executorRoute('heartbeat'), async (request) => {
    const body = request.body;
    checkUnbound(request.principal);
    for (const t of body.targets) checkTarget(request.principal, t.targetKey);
    return queue.heartbeatAs(body, request.principal?.tokenName ?? null);
  });

  app.post(
    queueRoutes.inventory.path,
    executorRoute('inventory', { bodyLimit: services.limits.bodyLimit }),
    async (request) => {
      const body = request.body;
      checkUnbound(request.principal);
      checkTarget(request.principal, body.targetKey);
      return queue.inventoryAs(body, `${actorOf(request.principal!)} (executor ${body.executorId})`);
    },
  );

  app.post(queueRoutes.claim.path, executorRoute('claim'), async (request) => {
    const body = request.body;
    checkUnbound(request.principal);
    for (const t of body.targetKeys) checkTarget(request.principal, t);
    return queue.claim(body);
  });

  /** A token bound to clusters or targets acts only on their jobs; none bound to a project. */
  const checkJobTarget = async (id: string, principal: Principal | null) => {
    checkUnbound(principal);
    if (!isBound(principal)) return;
    const job = await jobs.job(id);
    if (job?.target_key) checkTarget(principal, job.target_key);
  };

  app.post(queueRoutes.start.path, executorRoute('start', { params: JobParams }), async (request) => {
    await checkJobTarget(request.params.id, request.principal);
    return queue.start(request.params.id, request.body);
  });

  app.post(
    queueRoutes.restoreEvents.path,
    executorRoute('restoreEvents', { params: JobParams }),
    async (request) => {
      await checkJobTarget(request.params.id, request.principal);
      return queue.restoreEvents(request.params.id, request.body);
    },
  );

  app.post(queueRoutes.complete.path, executorRoute('complete', { params: JobParams }), async (request) => {
    await checkJobTarget(request.params.id, request.principal);
    return queue.complete(request.params.id, request.body);
  });

  // The archive is gzip-compressed JSON: taken as bytes up to --archive-max-size, decompressed
  // and checked by the archive store (size, storable, schema, the job's namespace).
  const maxBytes = services.cleanup.archives.settings.maxBytes;
  app.addContentTypeParser(
    'application/gzip',
    { parseAs: 'buffer', bodyLimit: maxBytes },
    (_request, body, done) => done(null, body),
  );
  app.post(
    archiveRoute.path,
    {
      config: { permission: 'agent' as const },
      bodyLimit: maxBytes,
      schema: {
        operationId: 'storeJobArchive',
        summary: archiveRoute.summary,
        tags: ['cleanup executors'],
        params: JobParams,
        querystring: Type.Object({ executorId: Type.String({ minLength: 1, maxLength: 200 }) }),
        response: { 200: archiveRoute.response, ...cleanupErrors },
      },
    },
    async (request) => {
      await checkJobTarget(request.params.id, request.principal);
      if (!Buffer.isBuffer(request.body)) {
        throw new TendError(
          'TEND_SERVER_BAD_REQUEST',
          'the archive must be sent as gzip-compressed JSON with content-type application/gzip',
        );
      }
      return queue.archiveCompressed(request.params.id, request.query.executorId, request.body);
    },
  );

  app.get(
    restoreOrderRoute.path,
    {
      config: { permission: 'agent' as const },
      schema: {
        operationId: 'getRestoreJobArchive',
        summary: restoreOrderRoute.summary,
        tags: ['cleanup executors'],
        params: JobParams,
        querystring: Type.Object({ executorId: Type.String({ minLength: 1, maxLength: 200 }) }),
        response: { 200: restoreOrderRoute.response, ...cleanupErrors },
      },
    },
    async (request) => {
      await checkJobTarget(request.params.id, request.principal);
      return queue.restoreOrder(request.params.id, request.query.executorId);
    },
  );
}
