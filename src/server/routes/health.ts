/** `/healthz` (the process answers), `/readyz` (the database answers), `/metrics` (Prometheus, read scope). */
import { Type } from 'typebox';
import { TendError } from '../../errors.js';
import type { App, ServerServices } from '../services.js';
import { cleanupGauges } from '../cleanup/status.js';
import { renderSavingsMetrics } from '../metrics.js';
import { isReachable } from '../db/database.js';

export function registerHealthRoutes(app: App, services: ServerServices): void {
  app.get(
    '/healthz',
    {
      schema: {
        operationId: 'checkLiveness',
        summary: 'Liveness: the process answers',
        tags: ['health'],
        security: [],
        response: { 200: Type.Object({ status: Type.Literal('ok') }) },
      },
    },
    async () => ({ status: 'ok' as const }),
  );

  app.get(
    '/readyz',
    {
      schema: {
        operationId: 'checkReadiness',
        summary: 'Readiness: the database answers',
        tags: ['health'],
        security: [],
        response: {
          200: Type.Object({ status: Type.Literal('ready'), database: Type.String() }),
          503: Type.Object({ status: Type.Literal('unavailable'), database: Type.String() }),
        },
      },
    },
    async (_request, reply) => {
      const database = services.database.dialect;
      if (await isReachable(services.database)) return { status: 'ready' as const, database };
      return reply.status(503).send({ status: 'unavailable' as const, database });
    },
  );

  app.get(
    '/metrics',
    {
      config: { permission: 'read' },
      schema: {
        operationId: 'getMetrics',
        summary: 'Prometheus metrics: ingest, environments by state, cleanup jobs, decisions and executors',
        tags: ['health'],
        produces: ['text/plain'],
        description:
          'Covers every project (the ingest counters are per process, not per project): a token bound to a project is refused (403).',
        response: { 200: Type.String() },
      },
    },
    async (request, reply) => {
      const only = request.principal?.project;
      if (only) {
        throw new TendError(
          'TEND_AUTH_FORBIDDEN',
          `token "${request.principal?.tokenName}" is bound to project "${only}"; /metrics covers every project and needs a token without a project`,
        );
      }
      const [counts, cleanup, savings, archives] = await Promise.all([
        services.environments.countByState(),
        cleanupGauges(services.cleanup, services.now()),
        services.savings.forMetrics(),
        services.cleanup.archives.totals(services.now()),
      ]);
      return reply
        .type('text/plain; version=0.0.4')
        .send(services.metrics.render(counts, cleanup, archives) + renderSavingsMetrics(savings));
    },
  );
}
