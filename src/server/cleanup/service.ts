/**
 * The cleanup job queue over the database (`CleanupQueue`, what every executor talks to, in
 * process or through the agent routes) and the server's side of cleanup: the planning pass
 * (one replica at a time, under a lease in the database), the re-check when a job starts,
 * clean up now, and the administrator's switches (enforce, halt, resume, breaker reset).
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { Kysely } from 'kysely';
import type {
  CleanupAction,
  ClaimRequest,
  ClaimResponse,
  CleanupJob,
  CleanupQueue,
  CompleteRequest,
  CompleteResponse,
  HeartbeatRequest,
  HeartbeatResponse,
  InventoryReport,
  InventoryResponse,
  JobView,
  StartRequest,
  StartResponse,
} from '../../cleanup/protocol.js';
import { TendError } from '../../errors.js';
import { CleanupRepository, writeAudit, type AuditInput } from '../db/repositories/cleanup.js';
import type { CleanupDecisionRow, CleanupJobRow, Database } from '../db/schema.js';
import type { Metrics } from '../metrics.js';
import { parseDuration } from '../../cleanup/policy.js';
import { plan } from './planner/plan.js';
import { PlanMemo } from './planner/memo.js';
import type { Decision, PlannerSettings } from './planner/types.js';
import { loadSnapshot, SnapshotCache } from './snapshot.js';

export interface CleanupSettings extends PlannerSettings {
  /** Lease of a claimed job when the executor asks for none (ms). */
  defaultLeaseMs: number;
  /** Attempts before a failing job is given up (each retried after a backoff). */
  maxAttempts: number;
}

export const defaultCleanupSettings: CleanupSettings = {
  intervalMs: 30_000,
  maxPerPass: 10,
  systemNamespace: 'tend-system',
  protectPatterns: [],
  defaultLeaseMs: 120_000,
  maxAttempts: 5,
};

/** Backoff before retry n (1-based): 30 s, 1 m, 2 m, … at most 1 h. */
export function retryBackoffMs(attempt: number): number {
  return Math.min(3_600_000, 30_000 * 2 ** Math.max(0, attempt - 1));
}

export interface PassReport {
  decisions: number;
  planned: number;
  cancelled: number;
  breakersOpened: string[];
  durationMs: number;
  /** Where the time went: loading the snapshot, the pure plan, storing what changed. */
  phasesMs: { snapshot: number; plan: number; store: number };
  /** Environments whose evaluation the planner's memo carried over from the last pass. */
  reused: number;
}

type DecisionState = Pick<
  CleanupDecisionRow,
  'kind' | 'reason_code' | 'due_at' | 'sentence' | 'job_id' | 'last_activity_at' | 'warn_at'
>;

export class CleanupService implements CleanupQueue {
  readonly repository: CleanupRepository;
  /** Identifies this process as holder of the planning lease. */
  private readonly replicaId = randomUUID();
  /** The decisions this replica last wrote, valid while no other replica ran a pass since. */
  private cache: { seq: number; rows: Map<string, Decision | DecisionState> } | undefined;
  /** The planning pass's snapshot, re-read where it changed since the last pass. */
  private readonly snapshots: SnapshotCache;
  /** The planner's evaluations of the last pass, reused where nothing they read changed. */
  private readonly memo = new PlanMemo();

  constructor(
    private readonly db: Kysely<Database>,
    private readonly reader: Kysely<Database>,
    private readonly metrics: Metrics,
    private readonly now: () => Date,
    readonly settings: CleanupSettings,
  ) {
    this.repository = new CleanupRepository(db, reader);
    this.snapshots = new SnapshotCache(reader, db);
  }

  // ── the queue ────────────────────────────────────────────────────────────────────────────

  heartbeat(body: HeartbeatRequest): Promise<HeartbeatResponse> {
    return this.heartbeatAs(body, null);
  }

  async heartbeatAs(body: HeartbeatRequest, tokenName: string | null): Promise<HeartbeatResponse> {
    const now = this.now();
    await this.repository.heartbeat({ ...body, tokenName, now });
    return {
      serverTime: now.toISOString(),
      intervalSeconds: Math.max(1, Math.round(this.settings.intervalMs / 1000)),
    };
  }

  inventory(body: InventoryReport): Promise<InventoryResponse> {
    return this.inventoryAs(body, `executor:${body.executorId}`);
  }

  async inventoryAs(body: InventoryReport, actor: string): Promise<InventoryResponse> {
    const names = new Set<string>();
    for (const item of body.items) {
      if (names.has(item.namespaceName)) {
        throw new TendError(
          'TEND_SERVER_BAD_REQUEST',
          `the inventory lists namespace "${item.namespaceName.slice(0, 64)}" twice`,
        );
      }
      names.add(item.namespaceName);
    }
    return this.repository.storeInventory({
      executorId: body.executorId,
      actor,
      targetKey: body.targetKey,
      pluginName: body.pluginName,
      complete: body.complete,
      error: body.error ?? null,
      items: body.items,
      now: this.now(),
    });
  }

  async claim(body: ClaimRequest): Promise<ClaimResponse> {
    const now = this.now();
    const { claimed, expired } = await this.repository.claim({
      executorId: body.executorId,
      targetKeys: body.targetKeys,
      max: body.max ?? 10,
      leaseMs: (body.leaseSeconds ?? this.settings.defaultLeaseMs / 1000) * 1000,
      now,
    });
    if (expired.length > 0) {
      await writeAudit(
        this.db,
        now,
        expired.map((j) => leaseExpiredAudit(j, body.executorId)),
      );
    }
    return { jobs: await this.jobViews(claimed) };
  }

  async start(jobId: string, body: StartRequest): Promise<StartResponse> {
    const now = this.now();
    const job = await this.heldJob(jobId, body.executorId, now);
    if (job.state === 'executing') return { proceed: true, job: (await this.jobViews([job]))[0]! };
    const why = await this.recheck(job, now);
    if (why) {
      const finished = await this.repository.finish({
        job,
        executorId: body.executorId,
        outcome: 'cancelled',
        message: why,
        now,
        audit: jobAudit(job, 'cleanup-cancelled', `executor:${body.executorId}`, why),
      });
      if (!finished) throw leaseLost(jobId);
      this.metrics.recordCleanupJob(job.action, 'cancelled');
      return { proceed: false, reason: why };
    }
    const leaseMs = job.lease_expires_at
      ? Math.max(this.settings.defaultLeaseMs, Date.parse(job.lease_expires_at) - now.getTime())
      : this.settings.defaultLeaseMs;
    if (!(await this.repository.markExecuting(jobId, body.executorId, leaseMs, now))) throw leaseLost(jobId);
    const updated = await this.repository.job(jobId);
    return { proceed: true, job: (await this.jobViews([updated!]))[0]! };
  }

  async complete(jobId: string, body: CompleteRequest): Promise<CompleteResponse> {
    const now = this.now();
    const job = await this.heldJob(jobId, body.executorId, now);
    if (body.outcome === 'done' && job.state !== 'executing') {
      // The state machine: only a started job (re-checked by the server) can be done.
      throw new TendError(
        'TEND_CLEANUP_CONFLICT',
        `job ${jobId.slice(0, 64)} was not started: call start (the server's re-check) before reporting it done`,
      );
    }
    const retry =
      body.outcome === 'failed' && job.attempts < this.settings.maxAttempts
        ? new Date(now.getTime() + retryBackoffMs(Math.max(1, job.attempts)))
        : undefined;
    const action =
      body.outcome === 'done'
        ? 'cleanup-done'
        : body.outcome === 'cancelled'
          ? 'cleanup-cancelled'
          : retry
            ? 'cleanup-retry'
            : 'cleanup-failed';
    const finished = await this.repository.finish({
      job,
      executorId: body.executorId,
      outcome: body.outcome,
      message: body.message,
      retryAt: retry,
      now,
      audit: jobAudit(job, action, `executor:${body.executorId}`, body.message, {
        attempts: job.attempts,
        ...(retry ? { retryAt: retry.toISOString() } : {}),
      }),
    });
    if (!finished) throw leaseLost(jobId);
    this.metrics.recordCleanupJob(job.action, retry ? 'retried' : body.outcome);
    const updated = await this.repository.job(jobId);
    return { job: (await this.jobViews([updated!]))[0]! };
  }

  /**
   * The job, if this executor holds its live lease; 404 or 409 otherwise. Read on the reader:
   * the updates that follow check the lease again.
   */
  private async heldJob(jobId: string, executorId: string, now: Date): Promise<CleanupJobRow> {
    const job = await this.repository.job(jobId);
    if (!job)
      throw new TendError('TEND_CLEANUP_JOB_NOT_FOUND', `no cleanup job with id "${jobId.slice(0, 64)}"`);
    const live =
      (job.state === 'planned' || job.state === 'executing') &&
      job.lease_owner === executorId &&
      job.lease_expires_at !== null &&
      job.lease_expires_at >= now.toISOString();
    if (!live) throw leaseLost(jobId, job.state);
    return job;
  }

  /**
   * Why the job must not run now (the registry re-checked: activity since the decision,
   * ownership, protection, keep-alive, sessions, policy, breaker, halt), or undefined.
   */
  private async recheck(job: CleanupJobRow, now: Date): Promise<string | undefined> {
    // One environment's rows, on the reader: starting 1,000 jobs must not queue behind the writer.
    const snapshot = await loadSnapshot(this.reader, now, { environmentId: job.environment_id });
    const env = snapshot.environments.get(job.environment_id);
    if (!env) return 'the environment is no longer active';
    const mode = job.trigger === 'now' ? 'now' : 'policy';
    if (mode === 'policy' && !env.policy) return 'the environment no longer has a cleanup policy';
    if (job.action === 'resume' && env.state !== 'paused') return 'the environment is no longer paused';
    if (job.action === 'pause' && env.state === 'paused') return 'the environment is already paused';
    const result = plan(snapshot, now.getTime(), this.settings, {
      mode,
      only: new Set([env.id]),
      ...(mode === 'now' ? { action: job.action as CleanupAction } : {}),
    });
    const decision = result.decisions.find((d) => d.resourceId === job.resource_id);
    if (!decision) return 'the namespace is no longer recorded as present';
    const expected = job.expected_last_activity_at ? Date.parse(job.expected_last_activity_at) : 0;
    if (decision.lastActivityAt > expected) {
      return `used since the decision (activity at ${new Date(decision.lastActivityAt).toISOString()})`;
    }
    if (job.namespace_uid !== decision.namespaceUid) return 'the namespace was re-created since the decision';
    if (decision.kind !== 'due') return decision.sentence;
    return undefined;
  }

  async jobViews(rows: CleanupJobRow[]): Promise<CleanupJob[]> {
    const targets = await this.repository.targetsOf(
      rows.map((r) => r.resource_id).filter((id): id is string => id !== null),
    );
    return rows.map((r) => ({
      id: r.id,
      action: r.action as CleanupJob['action'],
      state: r.state,
      environmentId: r.environment_id,
      project: r.project ?? '',
      environment: r.environment ?? '',
      resourceId: r.resource_id ?? '',
      pluginName: r.plugin ?? '',
      targetKey: r.target_key ?? '',
      target: JSON.parse(targets.get(r.resource_id ?? '') ?? '{}') as Record<string, unknown>,
      namespaceName: r.namespace_name ?? '',
      namespaceUid: r.namespace_uid,
      expectedLastActivityAt: r.expected_last_activity_at ?? r.planned_at,
      reason: r.reason,
      attempts: Number(r.attempts),
      leaseExpiresAt: r.lease_expires_at,
      dryRun: Boolean(r.dry_run),
    }));
  }

  /** Jobs with their history, for the read routes and the dashboard. */
  async jobHistory(rows: CleanupJobRow[]): Promise<JobView[]> {
    const views = await this.jobViews(rows);
    return views.map((v, i) => {
      const r = rows[i]!;
      return {
        ...v,
        trigger: r.trigger,
        actor: r.actor,
        plannedAt: r.planned_at,
        startedAt: r.started_at,
        finishedAt: r.finished_at,
        notBefore: r.not_before,
        outcome: r.result,
        message: r.outcome_message,
      };
    });
  }

  // ── the planning pass ────────────────────────────────────────────────────────────────────

  /**
   * One planning pass, if no other replica is running one: executing jobs with expired leases
   * return to `planned`; the planner runs over a fresh snapshot; breakers open; `due` decisions
   * become planned jobs (at most the cap); planned jobs no longer due are cancelled; the
   * decisions are stored for the plan route, dry-runs audited once per environment and due time.
   * Returns undefined when another replica holds the planning lease.
   */
  async planningPass(): Promise<PassReport | undefined> {
    const started = performance.now();
    const now = this.now();
    const leaseMs = Math.max(60_000, 2 * this.settings.intervalMs);
    if (!(await this.repository.acquirePlanLease(this.replicaId, leaseMs, now))) return undefined;
    try {
      const control = await this.db
        .selectFrom('cleanup_control')
        .select('pass_seq')
        .where('id', '=', 'global')
        .executeTakeFirstOrThrow();
      const expired = await this.repository.returnExpired(now);
      if (expired.length > 0)
        await writeAudit(
          this.db,
          now,
          expired.map((j) => leaseExpiredAudit(j, null)),
        );

      const loadStarted = performance.now();
      const snapshot = await this.snapshots.load(now);
      const planStarted = performance.now();
      const result = plan(snapshot, now.getTime(), this.settings, { memo: this.memo });
      const planMs = performance.now() - planStarted;
      await this.repository.openBreakers(result.breakersOpened, 'planner', now);

      let planned = 0;
      for (const d of result.newJobs) {
        const id = await this.db.transaction().execute(async (trx) => {
          const jobId = await this.repository.createJob(trx, d, { trigger: 'policy', actor: 'planner', now });
          if (jobId) await writeAudit(trx, now, [decisionAudit(d, 'cleanup-planned', { jobId })]);
          return jobId;
        });
        if (id) {
          d.openJobId = id;
          planned++;
          this.metrics.recordCleanupJob(d.action, 'planned');
        }
      }

      // Planned jobs whose decision is no longer due are cancelled before an executor claims them.
      let cancelled = 0;
      for (const [i, d] of result.decisions.entries()) {
        // A decision carries its resource's open job: only those are looked up.
        if (d.openJobId === null) continue;
        const open = snapshot.openJobs.get(d.resourceId);
        if (!open || open.state !== 'planned' || open.trigger !== 'policy' || d.kind === 'due') continue;
        const job = await this.repository.job(open.id, this.db);
        if (!job || (job.lease_expires_at !== null && job.lease_expires_at >= now.toISOString())) continue;
        const ok = await this.repository.finish({
          job,
          executorId: null,
          outcome: 'cancelled',
          message: d.sentence,
          now,
          audit: jobAudit(job, 'cleanup-cancelled', 'planner', d.sentence),
        });
        if (ok) {
          cancelled++;
          // A copy: the decision may be the memo's, shared with the last pass (and its stored row).
          result.decisions[i] = d.withOpenJob(null);
          this.metrics.recordCleanupJob(job.action, 'cancelled');
        }
      }

      const storeStarted = performance.now();
      await this.storeDecisions(result.decisions, Number(control.pass_seq), now);
      const durationMs = performance.now() - started;
      const phasesMs = {
        snapshot: planStarted - loadStarted,
        plan: planMs,
        store: performance.now() - storeStarted,
      };
      this.metrics.recordPlanningPass(durationMs / 1000);
      await this.repository.releasePlanLease(this.replicaId, durationMs, this.now());
      if (this.cache) this.cache.seq = Number(control.pass_seq) + 1;
      return {
        decisions: result.decisions.length,
        planned,
        cancelled,
        breakersOpened: result.breakersOpened.map((b) => b.project),
        durationMs,
        phasesMs,
        reused: this.memo.reused,
      };
    } catch (error) {
      // Let another replica (or the next pass) take over at once.
      await this.repository.releasePlanLease(this.replicaId, 0, this.now()).catch(() => undefined);
      throw error;
    }
  }

  /**
   * Writes the decisions that changed since the last pass; audits new dry-runs. The cache of
   * what is stored is updated in place (an unchanged decision keeps its earlier object, which
   * reads the same), so a pass over 200,000 unchanged decisions builds no second map of them.
   */
  private async storeDecisions(decisions: Decision[], seq: number, now: Date): Promise<void> {
    if (!this.cache || this.cache.seq !== seq) {
      const rows = await this.repository.decisionRows();
      this.cache = { seq, rows: new Map(rows.map((r) => [r.resource_id, r])) };
    }
    const stored = this.cache.rows;
    // Invalid until the writes below succeed.
    this.cache = undefined;
    const storedBefore = stored.size;
    let kept = 0;
    const upserts: CleanupDecisionRow[] = [];
    const audits: AuditInput[] = [];
    const dryRunAudited = new Set<string>();
    const decidedAt = now.toISOString();
    for (const d of decisions) {
      const before = stored.get(d.resourceId);
      if (before) kept++;
      // The same object as stored: a decision the planner's memo carried over, never changed since.
      if (before === d) continue;
      // A decision of this replica's last pass: compared without building any sentence.
      if (
        before &&
        'sameWordingAs' in before &&
        before.kind === d.kind &&
        before.reason === d.reason &&
        before.dueAt === d.dueAt &&
        before.lastActivityAt === d.lastActivityAt &&
        before.openJobId === d.openJobId &&
        before.warnAt === d.warnAt &&
        d.sameWordingAs(before)
      ) {
        continue;
      }
      stored.set(d.resourceId, d);
      const row: CleanupDecisionRow = {
        resource_id: d.resourceId,
        environment_id: d.environmentId,
        project: d.project,
        environment: d.environment,
        namespace_name: d.namespaceName,
        target_key: d.targetKey,
        plugin: d.pluginName,
        action: d.action,
        kind: d.kind,
        reason_code: d.reason,
        due_at: new Date(d.dueAt).toISOString(),
        last_activity_at: new Date(d.lastActivityAt).toISOString(),
        sentence: d.sentence,
        job_id: d.openJobId,
        decided_at: decidedAt,
        warn_at: d.warnAt === null ? null : new Date(d.warnAt).toISOString(),
      };
      const was = before ? stateOf(before) : undefined;
      if (
        was &&
        was.kind === row.kind &&
        was.reason_code === row.reason_code &&
        was.due_at === row.due_at &&
        was.sentence === row.sentence &&
        was.job_id === row.job_id &&
        was.last_activity_at === row.last_activity_at &&
        was.warn_at === row.warn_at
      ) {
        continue;
      }
      upserts.push(row);
      const key = `${d.environmentId}\u0000${row.due_at}`;
      if (
        d.kind === 'dry-run' &&
        !(was?.kind === 'dry-run' && was.due_at === row.due_at) &&
        !dryRunAudited.has(key)
      ) {
        dryRunAudited.add(key);
        audits.push(decisionAudit(d, 'cleanup-dry-run'));
      }
    }
    // Stored decisions this pass has none for (their environment was cleaned, or lost its policy).
    const removed: string[] = [];
    if (kept < storedBefore) {
      const decided = new Set(decisions.map((d) => d.resourceId));
      for (const id of stored.keys()) if (!decided.has(id)) removed.push(id);
      for (const id of removed) stored.delete(id);
    }
    if (upserts.length > 0 || removed.length > 0 || audits.length > 0) {
      await this.repository.writeDecisions(upserts, removed, audits, now);
    }
    this.cache = { seq, rows: stored };
  }

  // ── people's switches ────────────────────────────────────────────────────────────────────

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
        const id = await this.repository.createJob(trx, d, { trigger: 'now', actor, now });
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
    const rows = await Promise.all(ids.map((id) => this.repository.job(id, this.db)));
    return this.jobViews(rows.filter((r): r is CleanupJobRow => r !== undefined));
  }

  /**
   * Enforces the policies seen on a project's active environments (one environment name, or
   * all): for each name the strictest policy seen, so every current one is covered.
   */
  async enforce(project: string, environment: string | undefined, actor: string) {
    const seen = await this.repository.seenPolicies(project, environment);
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
    await this.repository.enforce(rows, actor, this.now());
    return rows.map((r) => ({
      project: r.project,
      environment: r.environment,
      afterInactivity: r.text,
      action: r.action,
    }));
  }

  async setHalted(halted: boolean, actor: string): Promise<{ halted: boolean; changed: boolean }> {
    const changed = await this.repository.setHalted(halted, actor, this.now());
    return { halted, changed };
  }

  async resetBreaker(project: string, actor: string): Promise<void> {
    if (!(await this.repository.resetBreaker(project, actor, this.now()))) {
      throw new TendError(
        'TEND_CLEANUP_CONFLICT',
        `the breaker of project "${project.slice(0, 64)}" is not open`,
      );
    }
  }

  /** Gauges for /metrics, read at scrape time so every replica reports the same. */
  async gauges(): Promise<{
    blocked: Record<string, number>;
    breakers: string[];
    executorsLastSeen: Record<string, number>;
  }> {
    const now = this.now().getTime();
    const [blocked, breakers, executors] = await Promise.all([
      this.repository.blockedCounts(),
      this.repository.breakers(),
      this.repository.executors(),
    ]);
    const executorsLastSeen: Record<string, number> = {};
    for (const e of executors) {
      const age = (now - Date.parse(e.last_seen_at)) / 1000;
      executorsLastSeen[e.target_key] = Math.min(executorsLastSeen[e.target_key] ?? Infinity, age);
    }
    return { blocked, breakers: breakers.map((b) => b.project), executorsLastSeen };
  }
}

/** A stored decision as the row says it (a decision of an earlier pass, or the row itself). */
function stateOf(d: Decision | DecisionState): DecisionState {
  if (!('sameWordingAs' in d)) return d;
  return {
    kind: d.kind,
    reason_code: d.reason,
    due_at: new Date(d.dueAt).toISOString(),
    last_activity_at: new Date(d.lastActivityAt).toISOString(),
    sentence: d.sentence,
    job_id: d.openJobId,
    warn_at: d.warnAt === null ? null : new Date(d.warnAt).toISOString(),
  };
}

function leaseLost(jobId: string, state?: string): TendError {
  return new TendError(
    'TEND_CLEANUP_LEASE_LOST',
    `this executor does not hold the lease of job ${jobId.slice(0, 64)}${state && state !== 'planned' && state !== 'executing' ? ` (it is ${state})` : ' (expired, or taken by another executor)'}`,
  );
}

function jobAudit(
  job: CleanupJobRow,
  action: string,
  actor: string,
  message: string,
  extra: Record<string, unknown> = {},
): AuditInput {
  return {
    actor,
    action,
    environmentId: job.environment_id,
    detail: {
      project: job.project,
      environment: job.environment,
      namespace: job.namespace_name,
      targetKey: job.target_key,
      jobId: job.id,
      cleanupAction: job.action,
      message,
      ...extra,
    },
  };
}

function leaseExpiredAudit(job: CleanupJobRow, claimedBy: string | null): AuditInput {
  return jobAudit(
    job,
    'cleanup-lease-expired',
    'planner',
    `the lease of ${job.lease_owner ?? 'its executor'} expired mid-job; the job returns to planned`,
    claimedBy ? { claimedBy } : {},
  );
}

function decisionAudit(d: Decision, action: string, extra: Record<string, unknown> = {}): AuditInput {
  return {
    actor: 'planner',
    action,
    environmentId: d.environmentId,
    detail: {
      project: d.project,
      environment: d.environment,
      namespace: d.namespaceName,
      targetKey: d.targetKey,
      cleanupAction: d.action,
      dueAt: new Date(d.dueAt).toISOString(),
      message: d.sentence,
      ...extra,
    },
  };
}
