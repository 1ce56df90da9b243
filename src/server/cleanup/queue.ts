/**
 * The cleanup job queue over the database: what every executor talks to (`CleanupQueue`, in
 * process or through the agent routes) — heartbeats, inventories, claims under a lease, and
 * the server's re-check of the registry when a job starts — and the views of jobs the routes
 * and the dashboard show.
 */
import type { Kysely } from 'kysely';
import {
  defaultClaimedActions,
  type PlannedAction,
  type ClaimRequest,
  type ClaimResponse,
  type CleanupJob,
  type CleanupQueue,
  type CompleteRequest,
  type CompleteResponse,
  type HeartbeatRequest,
  type HeartbeatResponse,
  type InventoryReport,
  type InventoryResponse,
  type JobView,
  type StartRequest,
  type StartResponse,
  type RestoreEventsRequest,
  type RestoreEventsResponse,
  type RestoreOrder,
} from '../../cleanup/protocol.js';
import { compressArchive, type ArchiveResponse, type EnvironmentArchive } from '../../cleanup/archive.js';
import { TendError } from '../../errors.js';
import { writeAudit } from '../db/repositories/audit.js';
import type { CleanupInventoryRepository } from '../db/repositories/cleanup-inventories.js';
import type { CleanupJobRepository, JobResource } from '../db/repositories/cleanup-jobs.js';
import type { CleanupJobRow, Database } from '../db/schema.js';
import type { Metrics } from '../metrics.js';
import type { ArchiveStore } from './archives.js';
import type { RestoreJobs } from './restores.js';
import { jobAudit, leaseExpiredAudit } from './audits.js';
import { clockOffsetOf, describeOffset, disagrees, toleranceMs, type WallClock } from './clock.js';
import { plan } from './planner/plan.js';
import type { CleanupSettings } from './settings.js';
import { loadSnapshot } from './snapshot.js';

/** Backoff before retry n (1-based): 30 s, 1 m, 2 m, … at most 1 h. */
function retryBackoffMs(attempt: number): number {
  return Math.min(3_600_000, 30_000 * 2 ** Math.max(0, attempt - 1));
}

export class DatabaseCleanupQueue implements CleanupQueue {
  constructor(
    /** Writes outside a job's transaction (the audit entries of expired leases). */
    private readonly db: Kysely<Database>,
    private readonly reader: Kysely<Database>,
    private readonly jobs: CleanupJobRepository,
    private readonly inventories: CleanupInventoryRepository,
    private readonly archives: ArchiveStore,
    private readonly restores: RestoreJobs,
    private readonly metrics: Metrics,
    private readonly now: () => Date,
    private readonly settings: CleanupSettings,
    /** The wall clock as it reads (`now` is planning time), and whether others attest it. */
    private readonly clock: WallClock,
  ) {}

  heartbeat(body: HeartbeatRequest): Promise<HeartbeatResponse> {
    return this.heartbeatAs(body, null);
  }

  async heartbeatAs(body: HeartbeatRequest, tokenName: string | null): Promise<HeartbeatResponse> {
    const now = this.now();
    await this.inventories.heartbeat({ ...body, tokenName, now });
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
    const now = this.now();
    const clockOffsetMs = clockOffsetOf(body.observedAt, this.clock.wall());
    if (disagrees(clockOffsetMs) && !disagrees(await this.inventories.clockOffset(body.targetKey))) {
      // Audited when the target's clock turns to disagree, not again with each inventory.
      await writeAudit(this.db, now, [
        {
          actor,
          action: 'cleanup-clock-disagrees',
          detail: {
            targetKey: body.targetKey,
            offsetMs: clockOffsetMs,
            message: `the server's clock is ${describeOffset(clockOffsetMs)} the target's: nothing is planned there until they agree`,
          },
        },
      ]);
    }
    return this.inventories.storeInventory({
      executorId: body.executorId,
      actor,
      targetKey: body.targetKey,
      pluginName: body.pluginName,
      complete: body.complete,
      error: body.error ?? null,
      items: body.items,
      now,
      clockOffsetMs,
    });
  }

  async claim(body: ClaimRequest): Promise<ClaimResponse> {
    const now = this.now();
    const { claimed, expired } = await this.jobs.claim({
      executorId: body.executorId,
      targetKeys: body.targetKeys,
      actions: body.actions ?? defaultClaimedActions,
      ...(body.pluginActions ? { pluginActions: body.pluginActions } : {}),
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

  /**
   * An executor calls start twice for a job: to begin it (planned), and to confirm right before
   * the irreversible step (executing). Both run the server's re-check (`recheckDecision`).
   */
  async start(jobId: string, body: StartRequest): Promise<StartResponse> {
    const now = this.now();
    const job = await this.heldJob(jobId, body.executorId, now);
    return job.state === 'executing' ? this.confirm(job, now) : this.begin(job, body.executorId, now);
  }

  /**
   * Begins a planned job, if the re-check lets it: executing under a lease; cancelled otherwise,
   * or done when a delete it began before is attested gone (`goneSinceBegun`).
   */
  private async begin(job: CleanupJobRow, executorId: string, now: Date): Promise<StartResponse> {
    const gone = await this.goneSinceBegun(job);
    const why = gone ?? (await this.recheckDecision(job, now));
    if (why) {
      const outcome = gone ? 'done' : 'cancelled';
      const finished = await this.jobs.finish({
        job,
        executorId,
        outcome,
        message: why,
        now,
        audit: jobAudit(job, `cleanup-${outcome}`, `executor:${executorId}`, why, { attempts: job.attempts }),
      });
      if (!finished) throw leaseLost(job.id);
      this.metrics.recordCleanupJob(job.action, outcome);
      return { proceed: false, reason: why, ...(gone ? { finished: 'done' as const } : {}) };
    }
    const leaseMs = job.lease_expires_at
      ? Math.max(this.settings.defaultLeaseMs, Date.parse(job.lease_expires_at) - now.getTime())
      : this.settings.defaultLeaseMs;
    if (!(await this.jobs.markExecuting(job.id, executorId, leaseMs, now))) throw leaseLost(job.id);
    const updated = await this.jobs.job(job.id);
    return { proceed: true, job: (await this.jobViews([updated!]))[0]! };
  }

  /**
   * Right before the irreversible step, the same re-check, so that a session started since the
   * job began still wins. The executor finishes the job itself (cancelled).
   */
  private async confirm(job: CleanupJobRow, now: Date): Promise<StartResponse> {
    const why = await this.recheckDecision(job, now);
    return why ? { proceed: false, reason: why } : { proceed: true, job: (await this.jobViews([job]))[0]! };
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
    // A restore's session events are recorded first: its namespace is owned even if what
    // follows fails. Events that do not match the job refuse the report (400), nothing recorded.
    if (job.action === 'restore') await this.restores.record(job, body.outcome, body.events);
    else if (body.events !== undefined) {
      throw new TendError(
        'TEND_SERVER_BAD_REQUEST',
        `only a restore job reports events; job ${jobId.slice(0, 64)} is a ${job.action} job`,
      );
    }
    // A restore that can never succeed fails for good; any other failure is retried.
    const permanent =
      body.outcome === 'failed' && job.action === 'restore'
        ? await this.restores.permanentFailure(job, body.events)
        : undefined;
    const retry =
      body.outcome === 'failed' && !permanent && job.attempts < this.settings.maxAttempts
        ? new Date(now.getTime() + retryBackoffMs(Math.max(1, job.attempts)))
        : undefined;
    const message = permanent ? `${body.message}; not retried: ${permanent}` : body.message;
    const action =
      body.outcome === 'done'
        ? 'cleanup-done'
        : body.outcome === 'cancelled'
          ? 'cleanup-cancelled'
          : retry
            ? 'cleanup-retry'
            : 'cleanup-failed';
    const finished = await this.jobs.finish({
      job,
      executorId: body.executorId,
      outcome: body.outcome,
      message,
      retryAt: retry,
      now,
      audit: jobAudit(job, action, `executor:${body.executorId}`, message, {
        attempts: job.attempts,
        ...(retry ? { retryAt: retry.toISOString() } : {}),
      }),
    });
    if (!finished) throw leaseLost(jobId);
    this.metrics.recordCleanupJob(job.action, retry ? 'retried' : body.outcome);
    const updated = await this.jobs.job(jobId);
    return { job: (await this.jobViews([updated!]))[0]! };
  }

  archive(jobId: string, executorId: string, archive: EnvironmentArchive): Promise<ArchiveResponse> {
    // The same checks as over HTTP, the size limit included.
    return this.archiveCompressed(jobId, executorId, compressArchive(archive));
  }

  /** The archive a started restore job re-creates: only for the executor holding its lease. */
  async restoreOrder(jobId: string, executorId: string): Promise<RestoreOrder> {
    const job = await this.startedJob(jobId, executorId, 'restore', 'reads an archive');
    return this.restores.order(job, executorId);
  }

  /** A started restore job's session events so far, from the executor holding its lease. */
  async restoreEvents(jobId: string, body: RestoreEventsRequest): Promise<RestoreEventsResponse> {
    const job = await this.startedJob(jobId, body.executorId, 'restore', 'records session events');
    const { accepted, duplicates } = await this.restores.record(job, undefined, body.events);
    return { accepted, duplicates };
  }

  /** The archive route's body (gzip-compressed JSON): only the lease holder of a started delete job stores one. */
  async archiveCompressed(jobId: string, executorId: string, compressed: Buffer): Promise<ArchiveResponse> {
    const job = await this.startedJob(jobId, executorId, 'delete', 'stores an archive');
    return this.archives.receive(job, compressed, this.now());
  }

  /** The job, if it is a started `action` job whose lease this executor holds; 404 or 409 otherwise. */
  private async startedJob(
    jobId: string,
    executorId: string,
    action: CleanupJobRow['action'],
    what: string,
  ): Promise<CleanupJobRow> {
    const job = await this.heldJob(jobId, executorId, this.now());
    if (job.state !== 'executing' || job.action !== action) {
      throw new TendError(
        'TEND_CLEANUP_CONFLICT',
        `job ${jobId.slice(0, 64)} is ${job.state === 'executing' ? `a ${job.action} job` : 'not started'}: only a started ${action} job ${what}`,
      );
    }
    return job;
  }

  /**
   * The job, if this executor holds its live lease; 404 or 409 otherwise. Read on the reader:
   * the updates that follow check the lease again.
   */
  private async heldJob(jobId: string, executorId: string, now: Date): Promise<CleanupJobRow> {
    const job = await this.jobs.job(jobId);
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
   * Why a delete job that began before (its DELETE may have gone out: the executor failed, or its
   * lease expired) is done: a complete list of its target, taken since, lacks its namespace. The
   * planner would only say "not in the inventory" and cancel it, and nothing would ever say that
   * cleanup deleted it. Undefined for any other job, or while no such list says so.
   */
  private async goneSinceBegun(job: CleanupJobRow): Promise<string | undefined> {
    if (job.action !== 'delete' || job.attempts === 0 || !job.started_at) return undefined;
    if (!job.target_key || !job.namespace_name || !job.namespace_uid) return undefined;
    const listedAt = await this.inventories.lackedSince(
      { targetKey: job.target_key, namespaceName: job.namespace_name, uid: job.namespace_uid },
      job.started_at,
    );
    return listedAt
      ? `namespace ${job.namespace_name} is gone: the complete list of ${job.target_key} at ${listedAt}, taken after attempt ${job.attempts} of this job began, lacks it`
      : undefined;
  }

  /**
   * The re-check before a job begins and before its irreversible step: why the job must not run
   * at `now`, or undefined. One snapshot of the job's environment, read afresh, and the planner
   * run again over it: the job proceeds only if its namespace is still due now, unused since the
   * decision and not re-created (ownership, protection, keep-alive, sessions, policy, breaker
   * and halt all re-decided). A restore is re-checked by the restores (RestoreJobs.recheck).
   */
  private async recheckDecision(job: CleanupJobRow, now: Date): Promise<string | undefined> {
    if (job.action === 'restore') return this.restores.recheck(job);
    // A clock the database or what was recorded contradicts proves no idleness (clock.ts).
    const clockWrong = await this.clock.disagreement();
    if (clockWrong) return clockWrong;
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
      ...(mode === 'now' ? { action: job.action as PlannedAction } : {}),
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
    const resources = await this.jobs.resourcesOf(
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
      target: JSON.parse(resources.get(r.resource_id ?? '')?.target ?? '{}') as Record<string, unknown>,
      namespaceName: r.namespace_name ?? '',
      namespaceUid: r.namespace_uid,
      ...ownershipProof(resources.get(r.resource_id ?? '')),
      expectedLastActivityAt: r.expected_last_activity_at ?? r.planned_at,
      reason: r.reason,
      attempts: Number(r.attempts),
      leaseExpiresAt: r.lease_expires_at,
      dryRun: Boolean(r.dry_run),
      archive: this.archives.modeOf(r.action, resources.get(r.resource_id ?? '')?.unarchived ? 0 : null),
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
}

/**
 * How the server knows tend created a job's namespace, for the executor to check against the
 * target: the claim's window, widened by the clock skew tolerated (the planner's own rule), or,
 * for a namespace owned before windows were recorded, the recorded uid alone. Nothing for a
 * namespace not recorded as owned, or a window that cannot be read: the executor then acts on
 * nothing.
 */
function ownershipProof(resource: JobResource | undefined): Pick<CleanupJob, 'ownership'> {
  if (resource?.ownership !== 'owned') return {};
  if (resource.claimStartedAt === null && resource.claimReceivedAt === null) {
    return { ownership: { proof: 'recorded-uid' } };
  }
  const from = Date.parse(resource.claimStartedAt ?? '') - toleranceMs;
  const until = Date.parse(resource.claimReceivedAt ?? '') + toleranceMs;
  if (!Number.isFinite(from) || !Number.isFinite(until)) return {};
  return {
    ownership: {
      proof: 'claim',
      createdFrom: new Date(from).toISOString(),
      createdUntil: new Date(until).toISOString(),
    },
  };
}

function leaseLost(jobId: string, state?: string): TendError {
  return new TendError(
    'TEND_CLEANUP_LEASE_LOST',
    `this executor does not hold the lease of job ${jobId.slice(0, 64)}${state && state !== 'planned' && state !== 'executing' ? ` (it is ${state})` : ' (expired, or taken by another executor)'}`,
  );
}
