/**
 * What the dashboard shows of cleanup, read from the decisions of the last planning pass, the
 * jobs and the cleanup tables: the "Next" of each listed environment, an environment's plan and
 * jobs, and everything on the Cleanup page. Project-bound tokens see only their project, as in
 * the API.
 */
import type { CleanupDecisionRow } from '../db/schema.js';
import type { JobView } from '../../cleanup/protocol.js';
import { policyCovered } from '../cleanup/planner/types.js';
import type { ServerServices } from '../services.js';
import { cleanupStatus, type CleanupStatus } from '../cleanup/status.js';
import { parseDuration } from '../../cleanup/policy.js';
import type { Schedule } from '../../cleanup/schedule.js';

/** One decision, as the pages show it. */
export interface DecisionItem {
  kind: string;
  reason: string | null;
  action: string;
  environmentId: string;
  project: string;
  environment: string;
  namespace: string;
  targetKey: string;
  dueAt: string;
  sentence: string;
  jobId: string | null;
  /** When the warning period starts ("will be deleted at …"), for scheduled decisions. */
  warnAt: string | null;
}

/** A webhook delivery as the Cleanup page shows it. */
export interface DeliveryItem {
  id: string;
  url: string;
  event: string;
  environmentId: string | null;
  project: string | null;
  environment: string | null;
  state: string;
  attempts: number;
  lastStatus: number | null;
  lastError: string | null;
  createdAt: string;
  nextAttemptAt: string;
  finishedAt: string | null;
}

export interface PolicyItem {
  project: string;
  environment: string;
  /** As written in tend.yml (the strictest seen on active environments of that name). */
  afterInactivity: string;
  action: string;
  /** `enforced`, or `dry-run` (new, or stricter than what was enforced). */
  mode: 'enforced' | 'dry-run';
  enforced: { afterMs: number; action: string; at: string; by: string } | null;
}

export interface CleanupOverview extends CleanupStatus {
  plan: DecisionItem[];
  /** More decisions are due within the window than shown. */
  planTruncated: boolean;
  blocked: DecisionItem[];
  jobs: JobView[];
  policies: PolicyItem[];
  deliveries: DeliveryItem[];
}

const planLimit = 200;
const listLimit = 100;

export function decisionItem(r: CleanupDecisionRow): DecisionItem {
  return {
    kind: r.kind,
    reason: r.reason_code,
    action: r.action,
    environmentId: r.environment_id,
    project: r.project,
    environment: r.environment,
    namespace: r.namespace_name,
    targetKey: r.target_key,
    dueAt: r.due_at,
    sentence: r.sentence,
    jobId: r.job_id,
    warnAt: r.warn_at,
  };
}

/** Order of what matters most for an environment's "Next": the soonest due, blocked last. */
function nextRank(d: DecisionItem): [number, string] {
  return [d.kind === 'blocked' ? 1 : 0, d.dueAt];
}

/** The decision to show in an environment's "Next" column, per environment id. */
export async function nextDecisions(
  services: ServerServices,
  environmentIds: string[],
): Promise<Map<string, DecisionItem>> {
  const next = new Map<string, DecisionItem>();
  if (environmentIds.length === 0) return next;
  const rows = await services.database.reader
    .selectFrom('cleanup_decisions')
    .selectAll()
    .where('environment_id', 'in', environmentIds)
    .execute();
  for (const row of rows) {
    const d = decisionItem(row);
    const current = next.get(d.environmentId);
    if (!current) {
      next.set(d.environmentId, d);
      continue;
    }
    const [a, b] = [nextRank(d), nextRank(current)];
    if (a[0] < b[0] || (a[0] === b[0] && a[1] < b[1])) next.set(d.environmentId, d);
  }
  return next;
}

/** The job that cleaned each cleaned environment: its last finished, done delete job (if any). */
export async function cleaningJobs(
  services: ServerServices,
  environmentIds: string[],
): Promise<Map<string, { id: string; finishedAt: string }>> {
  const byEnvironment = new Map<string, { id: string; finishedAt: string }>();
  if (environmentIds.length === 0) return byEnvironment;
  const rows = await services.database.reader
    .selectFrom('cleanup_jobs')
    .select(['id', 'environment_id', 'finished_at'])
    .where('environment_id', 'in', environmentIds)
    .where('action', '=', 'delete')
    .where('result', '=', 'done')
    .where('dry_run', '=', 0)
    .orderBy('finished_at', 'asc')
    .execute();
  // Ascending: the last one written for an environment is its latest.
  for (const row of rows) {
    if (row.finished_at)
      byEnvironment.set(row.environment_id, { id: row.id, finishedAt: String(row.finished_at) });
  }
  return byEnvironment;
}

/** An environment's decisions (one per recorded namespace) and its recent cleanup jobs. */
export async function environmentCleanup(services: ServerServices, environmentId: string) {
  const [decisions, jobs] = await Promise.all([
    services.database.reader
      .selectFrom('cleanup_decisions')
      .selectAll()
      .where('environment_id', '=', environmentId)
      .orderBy('due_at')
      .orderBy('namespace_name')
      .execute(),
    services.cleanup.jobs.listJobs({ environmentId }, 10),
  ]);
  return { decisions: decisions.map(decisionItem), jobs: await services.cleanup.queue.jobHistory(jobs) };
}

/**
 * The policies of active environments, each `enforced` or `dry-run` by the same rule as the
 * planner (`policyCovered`): new, or stricter than what was enforced, is a dry run.
 */
async function policyItems(services: ServerServices, onlyProject: string | null): Promise<PolicyItem[]> {
  let seenQuery = services.database.reader
    .selectFrom('environments')
    .select([
      'project',
      'name',
      'policy_after_inactivity',
      'policy_action',
      'policy_after_close',
      'policy_schedule',
    ])
    .where('state', '=', 'active')
    .where('policy_action', 'is not', null)
    .distinct();
  if (onlyProject) seenQuery = seenQuery.where('project', '=', onlyProject);
  const [seen, enforcedRows] = await Promise.all([seenQuery.execute(), services.cleanup.control.policies()]);
  const enforced = new Map(enforcedRows.map((p) => [`${p.project}\u0000${p.environment}`, p]));
  const byName = new Map<string, PolicyItem>();
  for (const s of seen) {
    const afterMs = s.policy_after_inactivity ? parseDuration(s.policy_after_inactivity) : undefined;
    if (afterMs === undefined || !s.policy_action) continue;
    const key = `${s.project}\u0000${s.name}`;
    const e = enforced.get(key);
    const afterCloseMs = s.policy_after_close ? parseDuration(s.policy_after_close) : undefined;
    const covered = policyCovered(
      {
        afterMs,
        action: s.policy_action,
        ...(afterCloseMs !== undefined ? { afterCloseMs } : {}),
        schedule: s.policy_schedule ? (JSON.parse(s.policy_schedule) as Schedule) : null,
      },
      e
        ? {
            afterMs: Number(e.after_inactivity_ms),
            action: e.action,
            afterCloseMs: e.after_close_ms === null ? null : Number(e.after_close_ms),
            schedule: e.schedule,
          }
        : undefined,
    );
    const current = byName.get(key);
    // Several environments of one name may carry different policies: a dry-run one wins.
    if (current && (current.mode === 'dry-run' || covered)) continue;
    byName.set(key, {
      project: s.project,
      environment: s.name,
      afterInactivity: s.policy_after_inactivity!,
      action: s.policy_action,
      mode: covered ? 'enforced' : 'dry-run',
      enforced: e
        ? {
            afterMs: Number(e.after_inactivity_ms),
            action: e.action,
            at: e.enforced_at,
            by: e.enforced_by,
          }
        : null,
    });
  }
  return [...byName.values()]
    .sort((a, b) => a.project.localeCompare(b.project) || a.environment.localeCompare(b.environment))
    .slice(0, listLimit);
}

/** Everything on the Cleanup page. */
export async function cleanupOverview(
  services: ServerServices,
  onlyProject: string | null,
  now: Date,
): Promise<CleanupOverview> {
  const cleanup = services.cleanup;
  let blockedQuery = services.database.reader
    .selectFrom('cleanup_decisions')
    .selectAll()
    .where('kind', '=', 'blocked');
  if (onlyProject) blockedQuery = blockedQuery.where('project', '=', onlyProject);
  const [status, planRows, blockedRows, jobRows, policies] = await Promise.all([
    cleanupStatus(cleanup, onlyProject, listLimit),
    cleanup.decisions.planPage(
      { dueBefore: new Date(now.getTime() + 86_400_000).toISOString(), onlyProject },
      planLimit + 1,
    ),
    blockedQuery
      .orderBy('project')
      .orderBy('environment')
      .orderBy('namespace_name')
      .limit(listLimit)
      .execute(),
    cleanup.jobs.listJobs({ onlyProject }, 30),
    policyItems(services, onlyProject),
  ]);
  const [deliveries, webhooks] = await Promise.all([
    services.notifications.repository.recentDeliveries(30, onlyProject),
    services.notifications.listWebhooks(),
  ]);
  const urls = new Map(webhooks.map((w) => [w.id, w.url]));
  return {
    ...status,
    deliveries: deliveries.map((d) => ({
      id: d.id,
      url: urls.get(d.webhook_id) ?? '(removed)',
      event: d.event,
      environmentId: d.environment_id,
      project: d.project,
      environment: d.environment_name,
      state: d.state,
      attempts: Number(d.attempts),
      lastStatus: d.last_status === null ? null : Number(d.last_status),
      lastError: d.last_error,
      createdAt: d.created_at,
      nextAttemptAt: d.next_attempt_at,
      finishedAt: d.finished_at,
    })),
    plan: planRows
      .slice(0, planLimit)
      .filter((r) => r.kind !== 'blocked')
      .map(decisionItem),
    planTruncated: planRows.length > planLimit,
    blocked: blockedRows.map(decisionItem),
    jobs: await services.cleanup.queue.jobHistory(jobRows),
    policies,
  };
}
