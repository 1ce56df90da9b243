/**
 * The switches people use on cleanup, from the API and the dashboard alike: clean up now (and
 * resume now), enforce a project's policies, halt and resume, reset a breaker. Each goes through
 * the same job path and checks as the planning pass, and is audited.
 */
import type { Kysely } from 'kysely';
import type { CleanupJob } from '../../cleanup/protocol.js';
import { parseDuration } from '../../cleanup/policy.js';
import { TendError } from '../../errors.js';
import { writeAudit } from '../db/repositories/audit.js';
import type { CleanupControlRepository } from '../db/repositories/cleanup-control.js';
import type { CleanupJobRepository } from '../db/repositories/cleanup-jobs.js';
import type { CleanupJobRow, Database } from '../db/schema.js';
import type { Metrics } from '../metrics.js';
import { decisionAudit } from './audits.js';
import { plan } from './planner/plan.js';
import type { PlannerSettings } from './planner/types.js';
import type { DatabaseCleanupQueue } from './queue.js';
import { loadSnapshot } from './snapshot.js';

export class CleanupSwitches {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly jobs: CleanupJobRepository,
    private readonly control: CleanupControlRepository,
    /** Clean up now answers with the jobs it planned, as the queue shows them. */
    private readonly queue: Pick<DatabaseCleanupQueue, 'jobViews'>,
    private readonly metrics: Metrics,
    private readonly now: () => Date,
    private readonly settings: PlannerSettings,
  ) {}

  /**
   * Clean up now: the same job path and checks, only the inactivity wait skipped. With
   * `resume`, resume now (`POST /environments/:id/resume`): a job that restores what the pause
   * recorded, through the same checks.
   */
  async cleanNow(
    environmentId: string,
    actor: string,
    options: { action?: 'resume' } = {},
  ): Promise<CleanupJob[]> {
    const now = this.now();
    const snapshot = await loadSnapshot(this.db, now, { environmentId });
    const env = snapshot.environments.get(environmentId);
    if (!env) {
      throw new TendError(
        'TEND_CLEANUP_CONFLICT',
        'the environment is not active: there is nothing to clean up',
      );
    }
    if (options.action === 'resume' && env.state !== 'paused') {
      throw new TendError(
        'TEND_CLEANUP_CONFLICT',
        'the environment is not paused: there is nothing to resume',
      );
    }
    if (options.action === undefined && env.state === 'paused' && env.policy?.action !== 'delete') {
      throw new TendError(
        'TEND_CLEANUP_CONFLICT',
        'the environment is already paused (resume it with `tend resume` or POST /environments/:id/resume)',
      );
    }
    const result = plan(snapshot, now.getTime(), this.settings, {
      mode: 'now',
      only: new Set([environmentId]),
      ...(options.action ? { action: options.action } : {}),
    });
    if (result.newJobs.length === 0) {
      const open = result.decisions.find((d) => d.openJobId !== null);
      const blocked = result.decisions.filter((d) => d.kind === 'blocked');
      throw new TendError(
        'TEND_CLEANUP_CONFLICT',
        open
          ? `a cleanup job is already open for ${open.namespaceName} (${open.openJobId})`
          : blocked.length > 0
            ? `cannot clean up now: ${blocked.map((d) => `${d.namespaceName}: ${d.sentence}`).join('; ')}`
            : 'the environment has no recorded namespace to clean up',
        { detail: { reasons: blocked.map((d) => d.reason) } },
      );
    }
    const ids: string[] = [];
    await this.db.transaction().execute(async (trx) => {
      for (const d of result.newJobs) {
        const id = await this.jobs.createJob(trx, d, { trigger: 'now', actor, now });
        if (id) {
          ids.push(id);
          await writeAudit(trx, now, [
            {
              ...decisionAudit(d, d.action === 'resume' ? 'resume-now' : 'cleanup-now', { jobId: id }),
              actor,
            },
          ]);
        }
      }
    });
    for (const d of result.newJobs) this.metrics.recordCleanupJob(d.action, 'planned');
    const rows = await Promise.all(ids.map((id) => this.jobs.job(id, this.db)));
    return this.queue.jobViews(rows.filter((r): r is CleanupJobRow => r !== undefined));
  }

  /**
   * Enforces the policies seen on a project's active environments (one environment name, or
   * all): for each name the strictest policy seen, so every current one is covered.
   */
  async enforce(project: string, environment: string | undefined, actor: string) {
    const seen = await this.control.seenPolicies(project, environment);
    const byName = new Map<string, { afterMs: number; action: string; text: string }>();
    const rank: Record<string, number> = { resume: 0, pause: 1, delete: 2 };
    for (const p of seen) {
      const afterMs = p.policy_after_inactivity ? parseDuration(p.policy_after_inactivity) : undefined;
      if (afterMs === undefined || !p.policy_action) continue;
      const current = byName.get(p.name);
      byName.set(p.name, {
        afterMs: Math.min(current?.afterMs ?? Infinity, afterMs),
        action:
          (rank[p.policy_action] ?? 0) >= (rank[current?.action ?? 'resume'] ?? 0)
            ? p.policy_action
            : current!.action,
        text: current && current.afterMs < afterMs ? current.text : p.policy_after_inactivity!,
      });
    }
    if (byName.size === 0) {
      throw new TendError(
        'TEND_CLEANUP_CONFLICT',
        `no cleanup policy seen on an active environment of project "${project.slice(0, 64)}"${environment ? ` named "${environment.slice(0, 64)}"` : ''}`,
        {
          detail: {
            hint: 'set environments[].cleanup in tend.yml and run a tend command so the server sees it',
          },
        },
      );
    }
    const rows = [...byName].map(([name, p]) => ({ project, environment: name, ...p }));
    await this.control.enforce(rows, actor, this.now());
    return rows.map((r) => ({
      project: r.project,
      environment: r.environment,
      afterInactivity: r.text,
      action: r.action,
    }));
  }

  async setHalted(halted: boolean, actor: string): Promise<{ halted: boolean; changed: boolean }> {
    const changed = await this.control.setHalted(halted, actor, this.now());
    return { halted, changed };
  }

  async resetBreaker(project: string, actor: string): Promise<void> {
    if (!(await this.control.resetBreaker(project, actor, this.now()))) {
      throw new TendError(
        'TEND_CLEANUP_CONFLICT',
        `the breaker of project "${project.slice(0, 64)}" is not open`,
      );
    }
  }
}
