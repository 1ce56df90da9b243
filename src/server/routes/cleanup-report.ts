/**
 * `GET /api/v1/cleanup/report`: what cleanup saved within `since` (read scope): resource-hours
 * freed by deletions and pauses per day, project and environment, with the method and, with the
 * server's prices, money. A token bound to a project sees that project only (`visibleProjects`).
 */
import { Type } from 'typebox';
import { TendError } from '../../errors.js';
import { parseDuration } from '../../cleanup/policy.js';
import { SavingsReport } from '../../api/savings.js';
import type { App, ServerServices } from '../services.js';
import { visibleProjects } from '../auth.js';
import { canSee, narrowTo } from '../db/visible-projects.js';
import { ErrorResponse } from '../../api/views.js';

const minSinceMs = 60_000;
const maxSinceMs = 365 * 86_400_000;

const ReportQuery = Type.Object({
  since: Type.Optional(
    Type.String({
      default: '30d',
      maxLength: 64,
      description: 'The window back from now: "30d", "12h" (1m to 365d).',
    }),
  ),
  project: Type.Optional(Type.String({ minLength: 1, maxLength: 253 })),
});

/** The window of `since` in ms, or a 400 naming the value. */
export function sinceOf(value: string): number {
  const ms = /^[0-9]+[mhd]$/.test(value) ? parseDuration(value) : undefined;
  if (ms === undefined || ms < minSinceMs || ms > maxSinceMs) {
    throw new TendError(
      'TEND_SERVER_BAD_REQUEST',
      `since takes a duration from 1m to 365d such as "30d" or "12h", got "${value.slice(0, 64)}"`,
    );
  }
  return ms;
}

export function registerCleanupReportRoutes(app: App, services: ServerServices): void {
  const schema = {
    operationId: 'getCleanupReport',
    summary:
      'What cleanup saved: resource-hours freed by deletions and pauses, per day, project and environment',
    description:
      'Estimated: freed = what a namespace’s running pods requested before its deletion or pause × the hours since, until the environment came back or now (the answer’s `method`).',
    tags: ['cleanup'],
    querystring: ReportQuery,
    response: { 200: SavingsReport, 400: ErrorResponse, 403: ErrorResponse },
  };
  app.get('/api/v1/cleanup/report', { config: { permission: 'read' }, schema }, async (request) => {
    const sinceMs = sinceOf(request.query.since ?? '30d');
    const visible = visibleProjects(request.principal);
    const wanted = request.query.project;
    if (wanted !== undefined && !canSee(visible, wanted)) {
      throw new TendError(
        'TEND_AUTH_FORBIDDEN',
        `token "${request.principal?.tokenName}" is bound to project "${request.principal?.project}": it sees no other project's report`,
      );
    }
    return services.savings.report(sinceMs, narrowTo(visible, wanted));
  });
}
