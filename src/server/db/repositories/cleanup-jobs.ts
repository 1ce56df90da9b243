/**
 * The cleanup jobs: created by the planning pass (or clean up now), leased to executors in
 * batches, started, finished (with what a finished job changes: a resource missing, an
 * environment cleaned or paused), returned to `planned` when their executor died, and listed.
 * Every finish is audited in the same transaction.
 */
import type { Kysely } from 'kysely';
import { ulid } from 'ulidx';
import { isSqlite } from '../dialect.js';
import { GroupCommit } from '../group-commit.js';
import { writeAudit, type AuditInput } from './audit.js';
import { refreshEnvironmentStates } from './environments.js';
import type { CleanupJobRow, Database, DatabaseOrTransaction } from '../schema.js';
import type { VisibleProjects } from '../visible-projects.js';
import { inVisibleProjects } from '../visible-projects.js';

/** What a planned job records of the `due` decision it carries out (the planner's Decision has it). */
export interface PlannedJobInput {
  environmentId: string;
  resourceId: string;
  action: string;
  /** The decision's sentence: the job's reason. */
  sentence: string;
  project: string;
  environment: string;
  pluginName: string;
  targetKey: string;
  namespaceName: string;
  namespaceUid: string | null;
  /** Epoch ms. */
  lastActivityAt: number;
  rule: string;
}

/** What a job's view reads of its resource (`resourcesOf`). */
export interface JobResource {
  /** The target JSON as recorded. */
  target: string;
  /** Its environment's policy says `archive: false`. */
  unarchived: boolean;
  ownership: string;
  /** The window of the claim that made it owned (null: owned before windows were recorded, or not owned). */
  claimStartedAt: string | null;
  claimReceivedAt: string | null;
}

export interface JobFilter {
  state?: string;
  project?: string;
  environmentId?: string;
  /** The projects the principal may see (absent: every project). */
  visible?: VisibleProjects;
  /** Keyset cursor: jobs planned before (planned_at, id). */
  before?: { at: string; id: string };
}

export class CleanupJobRepository {
  /** Starting and finishing jobs: many executors' calls, one commit (see GroupCommit). */
  private readonly jobWrites: GroupCommit;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly reader: Kysely<Database> = db,
  ) {
    this.jobWrites = new GroupCommit(db);
  }

  async job(id: string, db: DatabaseOrTransaction = this.reader): Promise<CleanupJobRow | undefined> {
    return db.selectFrom('cleanup_jobs').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /**
   * What a job's view needs of its resource, by resource id: the target JSON, whether its
   * environment's policy says `archive: false` (deleted without an archive), and its ownership
   * with the window of the claim that made it owned.
   */
  async resourcesOf(
    resourceIds: string[],
    db: DatabaseOrTransaction = this.reader,
  ): Promise<Map<string, JobResource>> {
    if (resourceIds.length === 0) return new Map();
    const rows = await db
      .selectFrom('resources')
      .innerJoin('environments', 'environments.id', 'resources.environment_id')
      .select([
        'resources.id',
        'resources.target',
        'environments.policy_archive',
        'resources.ownership',
        'resources.claim_started_at',
        'resources.claim_received_at',
      ])
      .where('resources.id', 'in', resourceIds)
      .execute();
    return new Map(
      rows.map((r) => [
        r.id,
        {
          target: r.target,
          unarchived: r.policy_archive === 0,
          ownership: r.ownership,
          claimStartedAt: r.claim_started_at,
          claimReceivedAt: r.claim_received_at,
        },
      ]),
    );
  }

  /**
   * A planned job for a `due` decision, unless the resource has an open one or is no longer
   * `ready` (a job that completed after the pass read its snapshot marked it missing); returns
   * its id or undefined. Checked in the caller's transaction, the resource row locked on
   * PostgreSQL, so a job completing at the same time is either seen or waited for.
   */
  async createJob(
    trx: DatabaseOrTransaction,
    d: PlannedJobInput,
    how: { trigger: 'policy' | 'now'; actor: string; now: Date },
  ): Promise<string | undefined> {
    const resource = await trx
      .selectFrom('resources')
      .select('state')
      .where('id', '=', d.resourceId)
      .$if(!isSqlite(trx), (q) => q.forUpdate())
      .executeTakeFirst();
    if (resource?.state !== 'ready') return undefined;
    const id = ulid(how.now.getTime());
    const result = await trx
      .insertInto('cleanup_jobs')
      .values({
        ...plannedJob(id, how.now),
        environment_id: d.environmentId,
        resource_id: d.resourceId,
        action: d.action,
        reason: d.sentence,
        project: d.project,
        environment: d.environment,
        plugin: d.pluginName,
        target_key: d.targetKey,
        namespace_name: d.namespaceName,
        namespace_uid: d.namespaceUid,
        expected_last_activity_at: new Date(d.lastActivityAt).toISOString(),
        trigger: how.trigger,
        actor: how.actor,
        rule: d.rule,
      })
      // Another replica (or a concurrent clean up now) planned one first: the open one stands.
      // (No conflict target: SQLite cannot match a partial index's WHERE with bound parameters.)
      .onConflict((oc) => oc.doNothing())
      .executeTakeFirst();
    return Number(result.numInsertedOrUpdatedRows ?? 0) > 0 ? id : undefined;
  }

  /**
   * A planned `restore` job for an archive (the dashboard's Restore button), unless the resource
   * has an open job; returns its id or undefined. Its namespace is the archive's or the one
   * asked for; it has no uid until the executor creates it.
   */
  async createRestoreJob(input: {
    environmentId: string;
    resourceId: string;
    project: string;
    environment: string;
    pluginName: string;
    targetKey: string;
    namespaceName: string;
    archiveId: string;
    reason: string;
    actor: string;
    now: Date;
  }): Promise<string | undefined> {
    const at = input.now.toISOString();
    const id = ulid(input.now.getTime());
    const result = await this.jobWrites.run((trx) =>
      trx
        .insertInto('cleanup_jobs')
        .values({
          ...plannedJob(id, input.now),
          environment_id: input.environmentId,
          resource_id: input.resourceId,
          action: 'restore',
          reason: input.reason,
          project: input.project,
          environment: input.environment,
          plugin: input.pluginName,
          target_key: input.targetKey,
          namespace_name: input.namespaceName,
          namespace_uid: null,
          expected_last_activity_at: at,
          trigger: 'now',
          actor: input.actor,
          rule: null,
          archive_id: input.archiveId,
        })
        // An open job of the resource (a restore already asked for) stands.
        .onConflict((oc) => oc.doNothing())
        .executeTakeFirst(),
    );
    return Number(result.numInsertedOrUpdatedRows ?? 0) > 0 ? id : undefined;
  }

  /**
   * Leases up to `max` claimable jobs of the targets to the executor: planned ones without a
   * live lease and past their backoff, and executing ones whose lease expired (their executor
   * died). Each is taken with a conditional update, so two claimers never get the same job.
   */
  async claim(input: {
    executorId: string;
    targetKeys: string[];
    /** The actions the executor runs. */
    actions: readonly string[];
    /** The actions it runs for each plugin named: a job of another plugin is claimed for `actions`. */
    pluginActions?: Readonly<Record<string, readonly string[]>>;
    max: number;
    leaseMs: number;
    now: Date;
  }): Promise<{ claimed: CleanupJobRow[]; expired: CleanupJobRow[] }> {
    const at = input.now.toISOString();
    const until = new Date(input.now.getTime() + input.leaseMs).toISOString();
    const candidates = await this.db
      .selectFrom('cleanup_jobs')
      .selectAll()
      .where('target_key', 'in', input.targetKeys)
      .where((eb) => {
        const byPlugin = Object.entries(input.pluginActions ?? {});
        const named = byPlugin.map(([plugin]) => plugin);
        return eb.or([
          ...byPlugin.map(([plugin, actions]) =>
            eb.and([eb('plugin', '=', plugin), eb('action', 'in', actions)]),
          ),
          eb.and([
            ...(named.length > 0 ? [eb.or([eb('plugin', 'is', null), eb('plugin', 'not in', named)])] : []),
            eb('action', 'in', input.actions),
          ]),
        ]);
      })
      .where('state', 'in', ['planned', 'executing'])
      .where((eb) => eb.or([eb('lease_expires_at', 'is', null), eb('lease_expires_at', '<', at)]))
      .where((eb) => eb.or([eb('not_before', 'is', null), eb('not_before', '<=', at)]))
      .orderBy('planned_at')
      .orderBy('id')
      .limit(input.max * 2)
      .execute();
    const claimed: CleanupJobRow[] = [];
    const expired: CleanupJobRow[] = [];
    // One transaction (one commit) for the batch; each job still taken by its own conditional
    // update, so a concurrent claimer gets it or not, never both.
    await this.db.transaction().execute(async (trx) => {
      for (const job of candidates) {
        if (claimed.length >= input.max) break;
        const result = await trx
          .updateTable('cleanup_jobs')
          .set({ state: 'planned', lease_owner: input.executorId, lease_expires_at: until })
          .where('id', '=', job.id)
          .where('state', '=', job.state)
          .where((eb) =>
            job.lease_expires_at === null
              ? eb('lease_expires_at', 'is', null)
              : eb('lease_expires_at', '=', job.lease_expires_at),
          )
          .executeTakeFirst();
        if (Number(result.numUpdatedRows) !== 1) continue;
        if (job.state === 'executing') expired.push(job);
        claimed.push({ ...job, state: 'planned', lease_owner: input.executorId, lease_expires_at: until });
      }
    });
    return { claimed, expired };
  }

  /** Moves a leased job to `executing` (attempts + 1, lease renewed); false if the lease was lost. */
  async markExecuting(id: string, executorId: string, leaseMs: number, now: Date): Promise<boolean> {
    const at = now.toISOString();
    const result = await this.jobWrites.run((trx) =>
      trx
        .updateTable('cleanup_jobs')
        .set((eb) => ({
          state: 'executing',
          started_at: at,
          attempts: eb('attempts', '+', 1),
          lease_expires_at: new Date(now.getTime() + leaseMs).toISOString(),
        }))
        .where('id', '=', id)
        .where('state', '=', 'planned')
        .where('lease_owner', '=', executorId)
        .where('lease_expires_at', '>=', at)
        .executeTakeFirst(),
    );
    return Number(result.numUpdatedRows) === 1;
  }

  /**
   * Finishes a job the executor holds (state `planned` with its lease, or `executing`):
   * done, cancelled, failed for good, or back to `planned` after `retryAt` (a failure with
   * attempts left). For `done` the resource becomes missing and the environment may be cleaned.
   * Returns false if the lease was lost. Without an executor (the planner's cancel), only a
   * planned job as the caller read it: false if an executor took it since, or it was not planned.
   */
  async finish(input: {
    job: CleanupJobRow;
    executorId: string | null;
    outcome: 'done' | 'cancelled' | 'failed';
    message: string;
    retryAt?: Date;
    now: Date;
    audit: AuditInput;
  }): Promise<boolean> {
    const at = input.now.toISOString();
    return this.jobWrites.run(async (trx) => {
      let q = trx.updateTable('cleanup_jobs').where('id', '=', input.job.id);
      if (input.executorId !== null) {
        q = q
          .where('lease_owner', '=', input.executorId)
          .where('state', 'in', ['planned', 'executing'])
          .where('lease_expires_at', '>=', at);
      } else {
        // The planner's cancel, written after it read the job (and maybe behind other writes):
        // only a planned job, as it read it. An executor that claimed it since holds it, and may
        // have begun and sent its DELETE: its start re-checks it, and its report ends it. A job
        // read after it finished (done, its lease cleared) is never reopened to be cancelled.
        const lease = input.job.lease_expires_at;
        q = q
          .where('state', '=', 'planned')
          .where((eb) =>
            lease === null ? eb('lease_expires_at', 'is', null) : eb('lease_expires_at', '=', lease),
          );
      }
      const retry = input.outcome === 'failed' && input.retryAt !== undefined;
      const result = await q
        .set(
          retry
            ? {
                state: 'planned',
                lease_owner: null,
                lease_expires_at: null,
                not_before: input.retryAt!.toISOString(),
                outcome_message: input.message,
              }
            : {
                state: input.outcome,
                result: input.outcome,
                finished_at: at,
                lease_expires_at: null,
                outcome_message: input.message,
              },
        )
        .executeTakeFirst();
      if (Number(result.numUpdatedRows) !== 1) return false;
      if (input.outcome === 'done' && input.job.action !== 'delete') {
        // (A restore's effect is recorded by its session's events, ingested before it finishes.)
        await markPaused(trx, input.job, at);
      } else if (input.outcome === 'done' && input.job.resource_id) {
        await trx
          .updateTable('resources')
          .set({ state: 'missing', missing_since: at, last_cause: 'cleanup', last_seen_at: at })
          .where('id', '=', input.job.resource_id)
          .execute();
        await refreshEnvironmentStates(trx, [input.job.environment_id], at);
      }
      await writeAudit(trx, input.now, [input.audit]);
      return true;
    });
  }

  /** Executing jobs whose lease expired go back to `planned` (their executor died). */
  async returnExpired(now: Date): Promise<CleanupJobRow[]> {
    const at = now.toISOString();
    const rows = await this.db
      .selectFrom('cleanup_jobs')
      .selectAll()
      .where('state', '=', 'executing')
      .where('lease_expires_at', '<', at)
      .execute();
    const returned: CleanupJobRow[] = [];
    for (const job of rows) {
      const result = await this.db
        .updateTable('cleanup_jobs')
        .set({ state: 'planned', lease_owner: null, lease_expires_at: null })
        .where('id', '=', job.id)
        .where('state', '=', 'executing')
        .where('lease_expires_at', '=', job.lease_expires_at)
        .executeTakeFirst();
      if (Number(result.numUpdatedRows) === 1) returned.push(job);
    }
    return returned;
  }

  async listJobs(filter: JobFilter, limit: number): Promise<CleanupJobRow[]> {
    let q = this.reader.selectFrom('cleanup_jobs').selectAll();
    if (filter.state) q = q.where('state', '=', filter.state as CleanupJobRow['state']);
    if (filter.project) q = q.where('project', '=', filter.project);
    if (filter.visible && filter.visible !== 'all') q = q.where(inVisibleProjects(filter.visible));
    if (filter.environmentId) q = q.where('environment_id', '=', filter.environmentId);
    if (filter.before) {
      const b = filter.before;
      q = q.where((eb) =>
        eb.or([eb('planned_at', '<', b.at), eb.and([eb('planned_at', '=', b.at), eb('id', '<', b.id)])]),
      );
    }
    return q.orderBy('planned_at', 'desc').orderBy('id', 'desc').limit(limit).execute();
  }
}

/** What every new job starts with: planned now, no lease, no attempt, no outcome. */
function plannedJob(id: string, now: Date) {
  return {
    id,
    state: 'planned' as const,
    planned_at: now.toISOString(),
    not_before: null,
    lease_owner: null,
    lease_expires_at: null,
    attempts: 0,
    started_at: null,
    finished_at: null,
    result: null,
    outcome_message: null,
    dry_run: 0,
  };
}

/**
 * A pause job done: the environment is `paused` (with the rule that paused it); a resume job
 * done: `active` again. The namespace stays: nothing is marked missing.
 */
async function markPaused(trx: DatabaseOrTransaction, job: CleanupJobRow, at: string): Promise<void> {
  const q = trx.updateTable('environments').where('id', '=', job.environment_id);
  if (job.action === 'pause') {
    await q
      .set({ state: 'paused', paused_at: at, paused_by: job.rule ?? 'inactivity', updated_at: at })
      .where('state', '=', 'active')
      .execute();
  } else if (job.action === 'resume') {
    await q
      .set({ state: 'active', paused_at: null, paused_by: null, updated_at: at })
      .where('state', '=', 'paused')
      .execute();
  }
}
