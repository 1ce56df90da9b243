/**
 * What the Cleanup page shows, read from the decisions of the last planning pass, the jobs and
 * the cleanup tables: the plan for the next 24 hours, blocked decisions, jobs, policies, webhook
 * deliveries and the cleanup status. Project-bound tokens see only their project, as in the API.
 */
import type { JobView } from '../../../cleanup/protocol.js';
import { policyCovered } from '../../cleanup/planner/types.js';
import type { DashboardCleanupRepository } from '../../db/repositories/dashboard-cleanup.js';
import type { ServerServices } from '../../services.js';
import type { VisibleProjects } from '../../auth.js';
import { cleanupStatus, type CleanupStatus } from '../../cleanup/status.js';
import { parseDuration } from '../../../cleanup/policy.js';
import type { Schedule } from '../../../cleanup/schedule.js';
import { decisionItem, type DecisionItem } from '../common/cleanup-parts.js';

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

/**
 * The policies of active environments, each `enforced` or `dry-run` by the same rule as the
 * planner (`policyCovered`): new, or stricter than what was enforced, is a dry run.
 */
async function policyItems(
  services: ServerServices,
  reads: DashboardCleanupRepository,
  visible: VisibleProjects,
): Promise<PolicyItem[]> {
  const [seen, enforcedRows] = await Promise.all([
    reads.activePolicies(visible),
    services.cleanup.control.policies(),
  ]);
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
  reads: DashboardCleanupRepository,
  visible: VisibleProjects,
  now: Date,
): Promise<CleanupOverview> {
  const cleanup = services.cleanup;
  const [status, planRows, blockedRows, jobRows, policies] = await Promise.all([
    cleanupStatus(cleanup, visible, listLimit),
    cleanup.decisions.planPage(
      { dueBefore: new Date(now.getTime() + 86_400_000).toISOString(), visible },
      planLimit + 1,
    ),
    reads.blockedDecisions(visible, listLimit),
    cleanup.jobs.listJobs({ visible }, 30),
    policyItems(services, reads, visible),
  ]);
  const [deliveries, webhooks] = await Promise.all([
    services.notifications.repository.recentDeliveries(30, visible),
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
