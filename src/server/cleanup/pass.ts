/**
 * The planning pass: one replica at a time (under a lease in the database), executing jobs whose
 * lease expired return to `planned`, the planner runs over the snapshot (re-read where it
 * changed), breakers open, `due` decisions become planned jobs, planned jobs no longer due are
 * cancelled, and the decisions that changed are stored for the plan route.
 */
import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import { writeAudit, type AuditInput } from '../db/repositories/audit.js';
import type { PassOutcome } from '../../api/cleanup.js';
import type { CleanupControlRepository } from '../db/repositories/cleanup-control.js';
import type { CleanupDecisionRepository } from '../db/repositories/cleanup-decisions.js';
import type { CleanupJobRepository } from '../db/repositories/cleanup-jobs.js';
import type { CleanupDecisionRow, Database } from '../db/schema.js';
import type { Metrics } from '../metrics.js';
import { decisionAudit, jobAudit, leaseExpiredAudit } from './audits.js';
import { PlanMemo } from './planner/memo.js';
import { plan } from './planner/plan.js';
import type { Decision, PlannerSettings, PlanResult, PlanSnapshot } from './planner/types.js';
import { SnapshotCache } from './snapshot.js';
import type { ClockStep, PlanningClock, WallClock } from './clock.js';
import { monotonicMs } from '../../monotonic.js';

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
  /** How the pass ended, and why when not `ok`. */
  outcome: PassOutcome;
  note?: string;
}

type DecisionState = Pick<
  CleanupDecisionRow,
  'kind' | 'reason_code' | 'due_at' | 'sentence' | 'job_id' | 'last_activity_at' | 'warn_at' | 'due_local'
>;
type StoredDecision = DecisionState & Pick<CleanupDecisionRow, 'decided_at'>;

export class PlanningPass {
  /** Identifies this process as holder of the planning lease. */
  private readonly replicaId = randomUUID();
  /** The decisions this replica last wrote, valid while no other replica ran a pass since. */
  private cache: { seq: number; rows: Map<string, Decision | StoredDecision>; at: number } | undefined;
  /** The planning pass's snapshot, re-read where it changed since the last pass. */
  private readonly snapshots: SnapshotCache;
  /** The planner's evaluations of the last pass, reused where nothing they read changed. */
  private readonly memo = new PlanMemo();

  constructor(
    private readonly db: Kysely<Database>,
    reader: Kysely<Database>,
    private readonly jobs: CleanupJobRepository,
    private readonly control: CleanupControlRepository,
    private readonly decisions: CleanupDecisionRepository,
    private readonly metrics: Metrics,
    private readonly clock: PlanningClock,
    private readonly wallClock: WallClock,
    readonly settings: PlannerSettings,
  ) {
    this.snapshots = new SnapshotCache(reader, db);
  }

  /**
   * One planning pass, if no other replica is running one: executing jobs with expired leases
   * return to `planned`; the planner runs over a fresh snapshot; breakers open; `due` decisions
   * become planned jobs (at most the cap); planned jobs no longer due are cancelled; the
   * decisions are stored for the plan route, dry-runs audited once per environment and due time.
   * Returns undefined when another replica holds the planning lease.
   */
  async run(): Promise<PassReport | undefined> {
    const started = monotonicMs();
    // Every pass reads both clocks, with the lease or not: a step is seen by whoever plans next.
    const step = await this.checkClock();
    const now = this.clock.now();
    const leaseMs = Math.max(60_000, 2 * this.settings.intervalMs);
    if (!(await this.control.acquirePlanLease(this.replicaId, leaseMs, now))) return undefined;
    if (step) return this.skipForStep(step, started, now);
    const disagreement = await this.wallClock.disagreement();
    if (disagreement) return this.skipForDisagreement(disagreement, started, now);
    try {
      const passSeq = await this.control.passSeq();
      const expired = await this.jobs.returnExpired(now);
      if (expired.length > 0)
        await writeAudit(
          this.db,
          now,
          expired.map((j) => leaseExpiredAudit(j, null)),
        );

      const loadStarted = monotonicMs();
      const snapshot = await this.snapshots.load(now);
      const planStarted = monotonicMs();
      const result = plan(snapshot, now.getTime(), this.settings, { memo: this.memo });
      const planMs = monotonicMs() - planStarted;
      await this.control.openBreakers(result.breakersOpened, 'planner', now);
      const planned = await this.createJobs(result.newJobs, now);
      const cancelled = await this.cancelNoLongerDue(result, snapshot, now);

      const storeStarted = monotonicMs();
      await this.storeDecisions(result.decisions, passSeq, now);
      const durationMs = monotonicMs() - started;
      const phasesMs = {
        snapshot: planStarted - loadStarted,
        plan: planMs,
        store: monotonicMs() - storeStarted,
      };
      this.metrics.recordPlanningPass(durationMs / 1000);
      const unplanned = result.unplanned;
      let note: string | undefined;
      if (unplanned.length > 0) {
        note = `${unplanned.length} environment(s) could not be planned and were left out: ${unplanned
          .slice(0, 5)
          .map((u) => `${u.project}/${u.name} (${u.message})`)
          .join('; ')}`;
        await writeAudit(
          this.db,
          now,
          unplanned.map((u) => ({
            actor: 'planner',
            action: 'cleanup-plan-error',
            environmentId: u.environmentId,
            detail: { project: u.project, environment: u.name, message: u.message },
          })),
        );
      }
      const outcome: PassOutcome = unplanned.length > 0 ? 'partial' : 'ok';
      await this.control.releasePlanLease(this.replicaId, durationMs, this.clock.now(), { outcome, note });
      if (this.cache) this.cache.seq = passSeq + 1;
      return {
        decisions: result.decisions.length,
        planned,
        cancelled,
        breakersOpened: result.breakersOpened.map((b) => b.project),
        durationMs,
        phasesMs,
        reused: this.memo.reused,
        outcome,
        ...(note ? { note } : {}),
      };
    } catch (error) {
      // Let another replica (or the next pass) take over at once; the pass shows as failed.
      const note = error instanceof Error ? error.message : String(error);
      await this.control
        .releasePlanLease(this.replicaId, monotonicMs() - started, this.clock.now(), {
          outcome: 'failed',
          note,
        })
        .catch(() => undefined);
      throw error;
    }
  }

  /**
   * Reads both clocks: in a new process, against the reading an earlier one kept under the same
   * boot (so a step while the server was down is seen); keeps this reading for the next.
   */
  private async checkClock(): Promise<ClockStep | undefined> {
    const bootId = this.clock.host.bootId;
    if (bootId === undefined) return this.clock.check();
    const step = this.clock.check(this.clock.started ? undefined : await this.control.clockReading(bootId));
    await this.control.saveClockReading(bootId, this.clock.reading()!);
    return step;
  }

  /**
   * The wall clock disagrees with what others attest (the database's clock, what this server
   * recorded before): this pass plans nothing, and the pass's time is not moved by a clock that
   * is wrong. Audited `cleanup-clock-disagrees` when it starts, not again each pass.
   */
  private async skipForDisagreement(why: string, started: number, now: Date): Promise<PassReport> {
    const note = `${why}: this pass planned nothing, nor will one until they agree`;
    try {
      const last = await this.control.control();
      if (!last.last_pass_note?.endsWith('nor will one until they agree')) {
        await writeAudit(this.db, now, [
          { actor: 'planner', action: 'cleanup-clock-disagrees', detail: { message: note } },
        ]);
      }
    } finally {
      await this.control.releasePlanLease(this.replicaId, monotonicMs() - started, null, {
        outcome: 'skipped',
        note,
      });
    }
    return this.skipped(monotonicMs() - started, note);
  }

  /**
   * The wall clock stepped since the last pass: this pass plans nothing (what it would plan is
   * measured against a clock that just jumped), audits `cleanup-clock-step` and says so in status.
   */
  private async skipForStep(step: ClockStep, started: number, now: Date): Promise<PassReport> {
    const minutes = Math.round(Math.abs(step.ms) / 60_000);
    const note =
      `the wall clock stepped ${step.ms > 0 ? 'forward' : 'back'} by ${minutes} min since the last pass: ` +
      `this pass planned nothing` +
      (step.ms > 0 ? '; activity is aged on the clock without the step from now on' : '');
    try {
      await writeAudit(this.db, now, [
        {
          actor: 'planner',
          action: 'cleanup-clock-step',
          detail: { stepMs: step.ms, at: step.at, message: note },
        },
      ]);
    } finally {
      await this.control.releasePlanLease(this.replicaId, monotonicMs() - started, now, {
        outcome: 'skipped',
        note,
      });
    }
    return this.skipped(monotonicMs() - started, note);
  }

  private skipped(durationMs: number, note: string): PassReport {
    return {
      decisions: 0,
      planned: 0,
      cancelled: 0,
      breakersOpened: [],
      durationMs,
      phasesMs: { snapshot: 0, plan: 0, store: 0 },
      reused: 0,
      outcome: 'skipped',
      note,
    };
  }

  /** A planned job (audited in its transaction) for each new `due` decision; how many were created. */
  private async createJobs(newJobs: Decision[], now: Date): Promise<number> {
    let planned = 0;
    for (const d of newJobs) {
      const id = await this.db.transaction().execute(async (trx) => {
        const jobId = await this.jobs.createJob(trx, d, { trigger: 'policy', actor: 'planner', now });
        if (jobId) await writeAudit(trx, now, [decisionAudit(d, 'cleanup-planned', { jobId })]);
        return jobId;
      });
      if (id) {
        d.openJobId = id;
        planned++;
        this.metrics.recordCleanupJob(d.action, 'planned');
      }
    }
    return planned;
  }

  /**
   * Planned jobs whose decision is no longer due are cancelled before an executor claims them;
   * their decisions lose the open job. Returns how many were cancelled.
   */
  private async cancelNoLongerDue(result: PlanResult, snapshot: PlanSnapshot, now: Date): Promise<number> {
    let cancelled = 0;
    for (const [i, d] of result.decisions.entries()) {
      // A decision carries its resource's open job: only those are looked up.
      if (d.openJobId === null) continue;
      const open = snapshot.openJobs.get(d.resourceId);
      if (!open || open.state !== 'planned' || open.trigger !== 'policy' || d.kind === 'due') continue;
      const job = await this.jobs.job(open.id, this.db);
      if (!job || (job.lease_expires_at !== null && job.lease_expires_at >= now.toISOString())) continue;
      const ok = await this.jobs.finish({
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
    return cancelled;
  }

  /**
   * Writes the decisions that changed since the last pass; audits new dry-runs. The cache of
   * what is stored is updated in place (an unchanged decision keeps its earlier object, which
   * reads the same), so a pass over 200,000 unchanged decisions builds no second map of them.
   */
  private async storeDecisions(decisions: Decision[], seq: number, now: Date): Promise<void> {
    if (!this.cache || this.cache.seq !== seq) {
      const rows = await this.decisions.decisionRows();
      this.cache = { seq, rows: new Map(rows.map((r) => [r.resource_id, r])), at: 0 };
    }
    const stored = this.cache.rows;
    const lastStoredAt = this.cache.at;
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
        due_local: d.dueLocal,
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
        was.warn_at === row.warn_at &&
        was.due_local === row.due_local
      ) {
        continue;
      }
      upserts.push(row);
      const key = `${d.environmentId}\u0000${row.due_at}`;
      // A dry-run is audited when it comes due (not while it says "would be deleted at …").
      if (
        d.kind === 'dry-run' &&
        d.dueAt <= now.getTime() &&
        !(
          before &&
          was?.kind === 'dry-run' &&
          was.due_at === row.due_at &&
          dueWhenStored(before, lastStoredAt)
        ) &&
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
      await this.decisions.writeDecisions(upserts, removed, audits, now);
    }
    this.cache = { seq, rows: stored, at: now.getTime() };
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
    due_local: d.dueLocal,
  };
}

/**
 * Whether a stored decision was due when it was stored: a row says when it was decided; a
 * decision of this replica's last pass (at `lastStoredAt`) not due then would have been worked
 * out again and stored anew by the first pass after its due time.
 */
function dueWhenStored(d: Decision | StoredDecision, lastStoredAt: number): boolean {
  if ('sameWordingAs' in d) return d.dueAt <= lastStoredAt;
  return d.due_at <= d.decided_at;
}
