/**
 * The cleanup API for people (the executors' routes are in cleanup-executor.ts). Read routes:
 * the plan of the last pass (paged by due time, with the schedules' sleeps and wakes), one
 * environment's notice for the CLI, jobs, and the state of cleanup (halt, breakers, policies,
 * executors, unrecorded namespaces). Admin routes: enforce, halt, resume, breaker reset, clean up
 * now (and resume now, in keep-alive scope).
 */
import { Type } from 'typebox';
import { CleanupJob, JobView } from '../../cleanup/protocol.js';
import { TendError } from '../../errors.js';
import type { App, ServerServices } from '../services.js';
import { actorOf, visibleProjects, type Principal } from '../auth.js';
import { canSee } from '../db/visible-projects.js';
import { decodeCursor, encodeCursor } from '../db/repositories/environments.js';
import type { CleanupDecisionRow } from '../db/schema.js';
import { cleanupStatus } from '../cleanup/status.js';
import { listTransitions } from '../cleanup/transitions.js';
import { ErrorResponse } from '../../api/views.js';
import { CleanupStatusView, PlanItemView, TransitionView } from '../../api/cleanup.js';
import { maxDurationMs, parseDuration } from '../../cleanup/policy.js';
import { visibleEnvironment } from '../environment-queries.js';

const Nullable = <T extends ReturnType<typeof Type.String>>(t: T) => Type.Union([t, Type.Null()]);
const Time = () => Type.String({ format: 'date-time' });

/** Most scheduled environments whose transitions one plan answer lists. */
const maxScheduledEnvironments = 200;

/** Longest `within` of the plan route. */
const maxWithinMs = maxDurationMs;

/** The error answers of every cleanup route (the executors' too). */
export const cleanupErrors = {
  400: ErrorResponse,
  401: ErrorResponse,
  403: ErrorResponse,
  404: ErrorResponse,
  409: ErrorResponse,
};

const PlanQuery = Type.Object({
  within: Type.Optional(
    Type.String({
      default: '24h',
      description: 'Decisions due within this duration from now ("24h", "7d").',
    }),
  ),
  project: Type.Optional(Type.String({ minLength: 1 })),
  environment: Type.Optional(Type.String({ minLength: 1 })),
  namespace: Type.Optional(Type.String({ minLength: 1 })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 50 })),
  cursor: Type.Optional(Type.String()),
});

const PlanResponse = Type.Object({
  serverTime: Time(),
  generatedAt: Nullable(Time()),
  halted: Type.Boolean(),
  items: Type.Array(PlanItemView),
  nextCursor: Nullable(Type.String()),
  /**
   * First page only: the schedules' sleeps and wakes within \`within\`, soonest first: at most 200
   * environments, 14 transitions each, and a bounded walk through the schedules.
   */
  transitions: Type.Optional(Type.Array(TransitionView)),
  transitionsComplete: Type.Optional(
    Type.Boolean({
      description:
        'First page only: false when some sleeps and wakes within `within` are not listed (more than 14 of an environment, or more schedules than one answer walks through).',
    }),
  ),
});

const NoticeQuery = Type.Object({
  project: Type.String({ minLength: 1, maxLength: 253 }),
  environment: Type.String({ minLength: 1, maxLength: 253 }),
  namespace: Type.String({ minLength: 1, maxLength: 253 }),
});

const NoticeResponse = Type.Object({
  serverTime: Time(),
  generatedAt: Nullable(Time()),
  halted: Type.Boolean(),
  /** The project's circuit breaker is open: `tend cleanup env` is refused until an admin resets it. */
  breakerOpen: Type.Boolean(),
  items: Type.Array(PlanItemView),
  nextCursor: Type.Null(),
});

const JobsQuery = Type.Object({
  state: Type.Optional(
    Type.Union([
      Type.Literal('planned'),
      Type.Literal('executing'),
      Type.Literal('done'),
      Type.Literal('failed'),
      Type.Literal('cancelled'),
    ]),
  ),
  project: Type.Optional(Type.String({ minLength: 1 })),
  environmentId: Type.Optional(Type.String({ minLength: 1 })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 50 })),
  cursor: Type.Optional(Type.String()),
});

const ProjectName = Type.String({ minLength: 1, maxLength: 253 });

const EnforceBody = Type.Object(
  { project: ProjectName, environment: Type.Optional(ProjectName) },
  { additionalProperties: false },
);

const EnforceResponse = Type.Object({
  enforced: Type.Array(
    Type.Object({
      project: Type.String(),
      environment: Type.String(),
      afterInactivity: Type.String(),
      action: Type.String(),
    }),
  ),
});

/** 403 for a project-bound token acting on another project or on a global switch. */
function checkProject(principal: Principal | null, project: string | null): void {
  if (!principal?.project) return;
  if (project === null || project !== principal.project) {
    throw new TendError(
      'TEND_AUTH_FORBIDDEN',
      project === null
        ? `token "${principal.tokenName}" is bound to project ${principal.project}; this switch is global`
        : `token "${principal.tokenName}" is bound to project ${principal.project}`,
    );
  }
}

function planItemView(r: CleanupDecisionRow, now: Date): PlanItemView {
  return {
    kind: r.kind as PlanItemView['kind'],
    reason: r.reason_code as PlanItemView['reason'],
    action: r.action,
    environmentId: r.environment_id,
    project: r.project,
    environment: r.environment,
    namespace: r.namespace_name,
    resourceId: r.resource_id,
    targetKey: r.target_key,
    pluginName: r.plugin,
    dueAt: r.due_at,
    lastActivityAt: r.last_activity_at,
    sentence: r.sentence,
    jobId: r.job_id,
    decidedAt: r.decided_at,
    warnAt: r.warn_at,
    warning: r.kind === 'scheduled' && r.warn_at !== null && r.warn_at <= now.toISOString(),
    dueLocal: r.due_local ?? null,
  };
}

/** A cursor this server gave out, or a 400. */
function cursorOf(value: string | undefined) {
  const cursor = value ? decodeCursor(value) : undefined;
  if (value && !cursor)
    throw new TendError('TEND_SERVER_BAD_REQUEST', 'cursor is not one this server gave out');
  return cursor;
}

function registerPlanRoute(app: App, services: ServerServices): void {
  const schema = {
    operationId: 'getCleanupPlan',
    summary: 'What cleanup will do, when, and why (or why not): the decisions of the last planning pass',
    tags: ['cleanup'],
    querystring: PlanQuery,
    response: { 200: PlanResponse, ...cleanupErrors },
  };
  app.get('/api/v1/cleanup/plan', { config: { permission: 'read' }, schema }, async (request) => {
    const q = request.query;
    const withinMs = parseDuration(q.within ?? '24h');
    if (withinMs === undefined || withinMs > maxWithinMs) {
      throw new TendError(
        'TEND_SERVER_BAD_REQUEST',
        `within takes a duration like "24h" or "7d" (at most 365d), got "${(q.within ?? '').slice(0, 64)}"`,
      );
    }
    const after = cursorOf(q.cursor);
    const limit = q.limit ?? 50;
    const visible = visibleProjects(request.principal);
    const [rows, control] = await Promise.all([
      services.cleanup.decisions.planPage(
        {
          dueBefore: new Date(services.now().getTime() + withinMs).toISOString(),
          project: q.project,
          environment: q.environment,
          namespace: q.namespace,
          visible,
          after,
        },
        limit + 1,
      ),
      services.cleanup.control.control(),
    ]);
    const items = rows.slice(0, limit);
    const last = items[items.length - 1];
    const schedules = q.cursor
      ? undefined
      : await listTransitions(
          await services.cleanup.decisions.scheduledEnvironments(
            { project: q.project, environment: q.environment, visible },
            maxScheduledEnvironments,
          ),
          services.now().getTime(),
          withinMs,
        );
    return {
      serverTime: services.now().toISOString(),
      generatedAt: control.last_pass_at,
      halted: Boolean(control.halted),
      ...(schedules ? { transitions: schedules.transitions, transitionsComplete: schedules.complete } : {}),
      items: items.map((r) => planItemView(r, services.now())),
      nextCursor:
        rows.length > limit && last ? encodeCursor({ at: last.due_at, id: last.resource_id }) : null,
    };
  });
}

function registerNoticeRoute(app: App, services: ServerServices): void {
  const schema = {
    operationId: 'getCleanupNotice',
    summary:
      "One environment's cleanup decisions, for the CLI's warning line and `tend status` (ingest scope: a project-bound token sees its project only)",
    tags: ['cleanup'],
    querystring: NoticeQuery,
    response: { 200: NoticeResponse, ...cleanupErrors },
  };
  app.get('/api/v1/cleanup/notice', { config: { permission: 'ingest' }, schema }, async (request) => {
    const q = request.query;
    checkProject(request.principal, q.project);
    const [rows, control, breakers] = await Promise.all([
      services.cleanup.decisions.planPage(
        {
          dueBefore: new Date(services.now().getTime() + maxWithinMs).toISOString(),
          project: q.project,
          environment: q.environment,
          namespace: q.namespace,
        },
        20,
      ),
      services.cleanup.control.control(),
      services.cleanup.control.breakers(),
    ]);
    return {
      serverTime: services.now().toISOString(),
      generatedAt: control.last_pass_at,
      halted: Boolean(control.halted),
      breakerOpen: breakers.some((b) => b.project === q.project),
      items: rows.map((r) => planItemView(r, services.now())),
      nextCursor: null,
    };
  });
}

function registerJobsRoute(app: App, services: ServerServices): void {
  const schema = {
    operationId: 'listCleanupJobs',
    summary: 'Cleanup jobs, most recently planned first',
    tags: ['cleanup'],
    querystring: JobsQuery,
    response: {
      200: Type.Object({ items: Type.Array(JobView), nextCursor: Nullable(Type.String()) }),
      ...cleanupErrors,
    },
  };
  app.get('/api/v1/cleanup/jobs', { config: { permission: 'read' }, schema }, async (request) => {
    const q = request.query;
    const before = cursorOf(q.cursor);
    const limit = q.limit ?? 50;
    const rows = await services.cleanup.jobs.listJobs(
      {
        state: q.state,
        project: q.project,
        environmentId: q.environmentId,
        visible: visibleProjects(request.principal),
        before,
      },
      limit + 1,
    );
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return {
      items: await services.cleanup.queue.jobHistory(page),
      nextCursor: rows.length > limit && last ? encodeCursor({ at: last.planned_at, id: last.id }) : null,
    };
  });
}

function registerStatusRoute(app: App, services: ServerServices): void {
  const schema = {
    operationId: 'getCleanupStatus',
    summary:
      'The state of cleanup: halt switch, last pass, breakers, enforced policies, executors, suspect inventories, unrecorded namespaces',
    tags: ['cleanup'],
    response: { 200: CleanupStatusView, ...cleanupErrors },
  };
  app.get('/api/v1/cleanup/status', { config: { permission: 'read' }, schema }, async (request) => {
    const visible = visibleProjects(request.principal);
    const [status, policies] = await Promise.all([
      cleanupStatus(services.cleanup, visible),
      services.cleanup.control.policies(),
    ]);
    return {
      ...status,
      policies: policies
        .filter((p) => canSee(visible, p.project))
        .map((p) => ({
          project: p.project,
          environment: p.environment,
          afterInactivityMs: Number(p.after_inactivity_ms),
          action: p.action,
          enforcedAt: p.enforced_at,
          enforcedBy: p.enforced_by,
        })),
    };
  });
}

function registerEnforceRoute(app: App, services: ServerServices): void {
  const schema = {
    operationId: 'enforceCleanupPolicy',
    summary:
      'Enforce the cleanup policy of a project (or one environment name): its decisions stop being dry-run (admin)',
    tags: ['cleanup'],
    body: EnforceBody,
    response: { 200: EnforceResponse, ...cleanupErrors },
  };
  app.post('/api/v1/cleanup/enforce', { config: { permission: 'admin' }, schema }, async (request) => {
    checkProject(request.principal, request.body.project);
    const enforced = await services.cleanup.switches.enforce(
      request.body.project,
      request.body.environment,
      actorOf(request.principal!),
    );
    return { enforced };
  });
}

function registerHaltRoutes(app: App, services: ServerServices): void {
  for (const action of ['halt', 'resume'] as const) {
    const schema = {
      operationId: action === 'halt' ? 'haltCleanup' : 'unhaltCleanup',
      summary:
        action === 'halt'
          ? 'Halt all automatic cleanup: nothing is planned or started until resumed (admin)'
          : 'Resume automatic cleanup (admin)',
      tags: ['cleanup'],
      response: { 200: Type.Object({ halted: Type.Boolean(), changed: Type.Boolean() }), ...cleanupErrors },
    };
    app.post(`/api/v1/cleanup/${action}`, { config: { permission: 'admin' }, schema }, async (request) => {
      checkProject(request.principal, null);
      return services.cleanup.switches.setHalted(action === 'halt', actorOf(request.principal!));
    });
  }
}

function registerBreakerResetRoute(app: App, services: ServerServices): void {
  const schema = {
    operationId: 'resetCleanupBreaker',
    summary: "Close a project's circuit breaker after looking at why it opened (admin)",
    tags: ['cleanup'],
    params: Type.Object({ project: ProjectName }),
    response: { 200: Type.Object({ project: Type.String(), reset: Type.Boolean() }), ...cleanupErrors },
  };
  app.post(
    '/api/v1/cleanup/breakers/:project/reset',
    { config: { permission: 'admin' }, schema },
    async (request) => {
      checkProject(request.principal, request.params.project);
      await services.cleanup.switches.resetBreaker(request.params.project, actorOf(request.principal!));
      return { project: request.params.project, reset: true };
    },
  );
}

/** Clean up now and resume: one job path (cleanNow), different permission and action. */
function registerEnvironmentJobRoute(
  app: App,
  services: ServerServices,
  route: {
    path: string;
    permission: 'clean-now' | 'resume';
    operationId: string;
    summary: string;
    action?: 'resume';
  },
): void {
  const schema = {
    operationId: route.operationId,
    summary: route.summary,
    tags: ['environments'],
    params: Type.Object({ id: Type.String() }),
    response: { 200: Type.Object({ jobs: Type.Array(CleanupJob) }), ...cleanupErrors },
  };
  app.post(route.path, { config: { permission: route.permission }, schema }, async (request) => {
    const env = await visibleEnvironment(services, request.params.id, request.principal);
    const action = route.action;
    return {
      jobs: await services.cleanup.switches.cleanNow(
        env.id,
        actorOf(request.principal!),
        action ? { action } : {},
      ),
    };
  });
}

export function registerCleanupRoutes(app: App, services: ServerServices): void {
  registerPlanRoute(app, services);
  registerNoticeRoute(app, services);
  registerJobsRoute(app, services);
  registerStatusRoute(app, services);
  registerEnforceRoute(app, services);
  registerHaltRoutes(app, services);
  registerBreakerResetRoute(app, services);
  registerEnvironmentJobRoute(app, services, {
    path: '/api/v1/environments/:id/cleanup',
    permission: 'clean-now',
    operationId: 'cleanUpEnvironmentNow',
    summary:
      'Clean up now: plan jobs for the environment through the same path and checks, only the inactivity wait skipped (developer or admin)',
  });
  registerEnvironmentJobRoute(app, services, {
    path: '/api/v1/environments/:id/resume',
    permission: 'resume',
    operationId: 'resumeEnvironment',
    summary:
      'Resume a paused environment: a resume job (restores exactly what the pause recorded) through the same path and checks as every cleanup job (developer scope, like keep-alive)',
    action: 'resume',
  });
}
