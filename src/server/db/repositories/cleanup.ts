/**
 * The cleanup tables: executors and their targets, inventories (with the reconciliation of a
 * complete one against the registry), cleanup jobs and their leases, enforced policies,
 * breakers, the control row (halt switch, planning lease) and the decisions of the last pass.
 * Every change a person or the planner makes is audited in the same transaction.
 */
import type { Kysely, Transaction } from 'kysely';
import { ulid } from 'ulidx';
import type { InventoryItem } from '../../../cleanup/protocol.js';
import type { Decision } from '../../cleanup/planner/types.js';
import { isSqlite } from '../dialect.js';
import { GroupCommit } from '../group-commit.js';
import { auditId } from './audit.js';
import type { CleanupDecisionRow, CleanupJobRow, Database } from '../schema.js';

type Db = Kysely<Database> | Transaction<Database>;

export interface AuditInput {
  actor: string;
  action: string;
  environmentId?: string | null;
  detail: Record<string, unknown>;
}

export async function writeAudit(db: Db, now: Date, entries: AuditInput[]): Promise<void> {
  for (let i = 0; i < entries.length; i += 200) {
    await db
      .insertInto('audit_log')
      .values(
        entries.slice(i, i + 200).map((e) => ({
          id: auditId(now.getTime()),
          at: now.toISOString(),
          actor: e.actor,
          action: e.action,
          environment_id: e.environmentId ?? null,
          detail: JSON.stringify(e.detail),
        })),
      )
      .execute();
  }
}

/** `tend.dev/last-activity` as ISO UTC, or null when absent or unreadable. */
function activityAnnotation(value: string | undefined): string | null {
  if (!value) return null;
  const t = Date.parse(value);
  return Number.isNaN(t) ? null : new Date(t).toISOString();
}

export interface InventoryOutcome {
  recorded: number;
  markedMissing: number;
  unrecorded: number;
}

export interface JobFilter {
  state?: string;
  project?: string;
  environmentId?: string;
  onlyProject?: string | null;
  /** Keyset cursor: jobs planned before (planned_at, id). */
  before?: { at: string; id: string };
}

export class CleanupRepository {
  /** Starting and finishing jobs: many executors' calls, one commit (see GroupCommit). */
  private readonly jobWrites: GroupCommit;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly reader: Kysely<Database> = db,
  ) {
    this.jobWrites = new GroupCommit(db);
  }

  // ── executors ────────────────────────────────────────────────────────────────────────────

  async heartbeat(input: {
    executorId: string;
    name: string;
    kind: string;
    version: string;
    tokenName: string | null;
    targets: { targetKey: string; pluginName: string; description: string }[];
    now: Date;
  }): Promise<void> {
    const at = input.now.toISOString();
    await this.db.transaction().execute(async (trx) => {
      await trx
        .insertInto('cleanup_executors')
        .values({
          id: input.executorId,
          name: input.name,
          kind: input.kind,
          version: input.version,
          token_name: input.tokenName,
          first_seen_at: at,
          last_seen_at: at,
        })
        .onConflict((oc) =>
          oc.column('id').doUpdateSet({
            name: input.name,
            kind: input.kind,
            version: input.version,
            token_name: input.tokenName,
            last_seen_at: at,
          }),
        )
        .execute();
      for (const t of input.targets) {
        await trx
          .insertInto('cleanup_executor_targets')
          .values({
            executor_id: input.executorId,
            target_key: t.targetKey,
            plugin: t.pluginName,
            description: t.description,
            last_seen_at: at,
          })
          .onConflict((oc) =>
            oc.columns(['executor_id', 'target_key']).doUpdateSet({
              plugin: t.pluginName,
              description: t.description,
              last_seen_at: at,
            }),
          )
          .execute();
      }
    });
  }

  async executors() {
    return this.reader
      .selectFrom('cleanup_executor_targets as t')
      .innerJoin('cleanup_executors as e', 'e.id', 't.executor_id')
      .select([
        'e.id',
        'e.name',
        'e.kind',
        'e.version',
        't.target_key',
        't.plugin',
        't.description',
        't.last_seen_at',
      ])
      .orderBy('t.target_key')
      .orderBy('t.last_seen_at', 'desc')
      .execute();
  }

  // ── inventories ──────────────────────────────────────────────────────────────────────────

  /**
   * Stores an inventory and reconciles it with the registry: items matching a recorded resource
   * are `recorded`; tend-labelled namespaces without a record become unrecorded namespaces
   * (audited when first seen, attached to the environment their annotations name); and, only
   * for a complete inventory, recorded `ready` resources of the target that are absent (or
   * present with another uid) become `missing`.
   */
  async storeInventory(input: {
    executorId: string;
    actor: string;
    targetKey: string;
    pluginName: string;
    complete: boolean;
    error: string | null;
    items: InventoryItem[];
    now: Date;
  }): Promise<InventoryOutcome> {
    const at = input.now.toISOString();
    const { targetKey } = input;
    return this.db.transaction().execute(async (trx) => {
      const previous = await trx
        .selectFrom('cleanup_inventories')
        .select('last_complete_at')
        .where('target_key', '=', targetKey)
        .executeTakeFirst();
      await trx
        .insertInto('cleanup_inventories')
        .values({
          target_key: targetKey,
          plugin: input.pluginName,
          executor_id: input.executorId,
          received_at: at,
          complete: input.complete ? 1 : 0,
          error: input.error,
          item_count: input.items.length,
          last_complete_at: input.complete ? at : (previous?.last_complete_at ?? null),
        })
        .onConflict((oc) =>
          oc.column('target_key').doUpdateSet({
            plugin: input.pluginName,
            executor_id: input.executorId,
            received_at: at,
            complete: input.complete ? 1 : 0,
            error: input.error,
            item_count: input.items.length,
            last_complete_at: input.complete ? at : (previous?.last_complete_at ?? null),
          }),
        )
        .execute();

      // Recorded resources of this target (local targets: every path of the host).
      const resources = await trx
        .selectFrom('resources')
        .innerJoin('environments', 'environments.id', 'resources.environment_id')
        .select([
          'resources.id',
          'resources.environment_id',
          'resources.namespace_name',
          'resources.namespace_uid',
          'resources.state',
          'resources.ownership',
          'environments.project',
          'environments.name',
        ])
        .where((eb) =>
          eb.or([
            eb('resources.target_key', '=', targetKey),
            // Local resources carry their path: `local/<hostId>/<path>`. (No LIKE: host ids may hold `_`.)
            eb(
              eb.fn('substr', ['resources.target_key', eb.lit(1), eb.lit(targetKey.length + 1)]),
              '=',
              `${targetKey}/`,
            ),
          ]),
        )
        .where('resources.state', '!=', 'missing')
        .execute();
      const byName = new Map<string, typeof resources>();
      for (const r of resources) {
        const list = byName.get(r.namespace_name) ?? [];
        list.push(r);
        byName.set(r.namespace_name, list);
      }
      const existing = new Map(
        (
          await trx
            .selectFrom('cleanup_inventory_items')
            .select(['namespace_name', 'recorded', 'uid', 'first_seen_at'])
            .where('target_key', '=', targetKey)
            .execute()
        ).map((r) => [r.namespace_name, r]),
      );

      const audits: AuditInput[] = [];
      let recorded = 0;
      let unrecorded = 0;
      const rows = [];
      for (const item of input.items) {
        const matches = (byName.get(item.namespaceName) ?? []).filter(
          (r) => r.namespace_uid === null || r.namespace_uid === item.uid,
        );
        const isRecorded = matches.length > 0;
        const project = item.annotations['tend.dev/project'] ?? null;
        const environment = item.annotations['tend.dev/environment'] ?? null;
        let environmentId: string | null = null;
        if (isRecorded) recorded++;
        else {
          unrecorded++;
          if (project && environment) {
            const env = await trx
              .selectFrom('environments')
              .select('id')
              .where('project', '=', project)
              .where('name', '=', environment)
              .where('namespace', '=', item.namespaceName)
              .executeTakeFirst();
            environmentId = env?.id ?? null;
          }
          const before = existing.get(item.namespaceName);
          if (!before || before.recorded === 1 || before.uid !== item.uid) {
            audits.push({
              actor: input.actor,
              action: 'unrecorded-namespace',
              environmentId,
              detail: {
                project,
                environment,
                namespace: item.namespaceName,
                uid: item.uid,
                targetKey,
                message:
                  'a namespace labelled managed-by=tend that no tend command recorded: shown, never deleted',
              },
            });
          }
        }
        rows.push({
          target_key: targetKey,
          namespace_name: item.namespaceName,
          uid: item.uid,
          resource_version: item.resourceVersion,
          phase: item.phase,
          managed_by_tend: item.labels['app.kubernetes.io/managed-by'] === 'tend' ? 1 : 0,
          project,
          environment,
          role: item.annotations['tend.dev/role'] ?? null,
          adopted: item.annotations['tend.dev/adopted'] === 'true' ? 1 : 0,
          last_activity_at: activityAnnotation(item.annotations['tend.dev/last-activity']),
          labels: JSON.stringify(item.labels),
          annotations: JSON.stringify(item.annotations),
          recorded: isRecorded ? 1 : 0,
          environment_id: environmentId,
          first_seen_at:
            existing.get(item.namespaceName)?.uid === item.uid
              ? existing.get(item.namespaceName)!.first_seen_at
              : at,
          seen_at: at,
        });
      }
      for (let i = 0; i < rows.length; i += 500) {
        await trx
          .insertInto('cleanup_inventory_items')
          .values(rows.slice(i, i + 500))
          .onConflict((oc) =>
            oc.columns(['target_key', 'namespace_name']).doUpdateSet((eb) => ({
              uid: eb.ref('excluded.uid'),
              resource_version: eb.ref('excluded.resource_version'),
              phase: eb.ref('excluded.phase'),
              managed_by_tend: eb.ref('excluded.managed_by_tend'),
              project: eb.ref('excluded.project'),
              environment: eb.ref('excluded.environment'),
              role: eb.ref('excluded.role'),
              adopted: eb.ref('excluded.adopted'),
              last_activity_at: eb.ref('excluded.last_activity_at'),
              labels: eb.ref('excluded.labels'),
              annotations: eb.ref('excluded.annotations'),
              recorded: eb.ref('excluded.recorded'),
              environment_id: eb.ref('excluded.environment_id'),
              first_seen_at: eb.ref('excluded.first_seen_at'),
              seen_at: eb.ref('excluded.seen_at'),
            })),
          )
          .execute();
      }

      let markedMissing = 0;
      if (input.complete) {
        // Only a complete list proves absence.
        await trx
          .deleteFrom('cleanup_inventory_items')
          .where('target_key', '=', targetKey)
          .where('seen_at', '<', at)
          .execute();
        const present = new Map(input.items.map((i) => [i.namespaceName, i.uid]));
        const gone = resources.filter((r) => {
          if (r.state !== 'ready') return false;
          // The inventory lists only namespaces labelled managed-by=tend: an adopted (or unknown)
          // namespace is never in it, so its absence proves nothing.
          if (r.ownership !== 'owned') return false;
          const uid = present.get(r.namespace_name);
          return uid === undefined || (r.namespace_uid !== null && r.namespace_uid !== uid);
        });
        markedMissing = gone.length;
        for (let i = 0; i < gone.length; i += 500) {
          await trx
            .updateTable('resources')
            .set({ state: 'missing', missing_since: at, last_cause: 'inventory', last_seen_at: at })
            .where(
              'id',
              'in',
              gone.slice(i, i + 500).map((r) => r.id),
            )
            .execute();
        }
        for (const r of gone) {
          audits.push({
            actor: input.actor,
            action: 'resource-missing',
            environmentId: r.environment_id,
            detail: {
              project: r.project,
              environment: r.name,
              namespace: r.namespace_name,
              uid: r.namespace_uid,
              targetKey,
              message: 'recorded, but absent from a complete inventory',
            },
          });
        }
        await refreshEnvironmentStates(trx, [...new Set(gone.map((r) => r.environment_id))], at);
      }
      await writeAudit(trx, input.now, audits);
      return { recorded, markedMissing, unrecorded };
    });
  }

  async unrecordedNamespaces(limit = 200) {
    return this.reader
      .selectFrom('cleanup_inventory_items')
      .select([
        'target_key',
        'namespace_name',
        'uid',
        'phase',
        'project',
        'environment',
        'environment_id',
        'first_seen_at',
        'seen_at',
      ])
      .where('recorded', '=', 0)
      .where('managed_by_tend', '=', 1)
      .orderBy('target_key')
      .orderBy('namespace_name')
      .limit(limit)
      .execute();
  }

  // ── jobs ─────────────────────────────────────────────────────────────────────────────────

  async job(id: string, db: Db = this.reader): Promise<CleanupJobRow | undefined> {
    return db.selectFrom('cleanup_jobs').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /** The target JSON of each job's resource, by resource id. */
  async targetsOf(resourceIds: string[], db: Db = this.reader): Promise<Map<string, string>> {
    if (resourceIds.length === 0) return new Map();
    const rows = await db
      .selectFrom('resources')
      .select(['id', 'target'])
      .where('id', 'in', resourceIds)
      .execute();
    return new Map(rows.map((r) => [r.id, r.target]));
  }

  /**
   * Creates a planned job unless the resource has an open one or is no longer `ready` (a job
   * that completed after the pass read its snapshot marked it missing); returns its id or
   * undefined. Checked in the caller's transaction, the resource row locked on PostgreSQL, so a
   * job completing at the same time is either seen or waited for.
   */
  /** A planned job for a `due` decision, unless its resource is no longer ready or a job is open. */
  async createJob(
    trx: Db,
    d: Decision,
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
        id,
        environment_id: d.environmentId,
        resource_id: d.resourceId,
        action: d.action,
        state: 'planned',
        reason: d.sentence,
        planned_at: how.now.toISOString(),
        not_before: null,
        lease_owner: null,
        lease_expires_at: null,
        attempts: 0,
        started_at: null,
        finished_at: null,
        result: null,
        project: d.project,
        environment: d.environment,
        plugin: d.pluginName,
        target_key: d.targetKey,
        namespace_name: d.namespaceName,
        namespace_uid: d.namespaceUid,
        expected_last_activity_at: new Date(d.lastActivityAt).toISOString(),
        trigger: how.trigger,
        actor: how.actor,
        outcome_message: null,
        dry_run: 0,
        rule: d.rule,
      })
      // Another replica (or a concurrent clean up now) planned one first: the open one stands.
      // (No conflict target: SQLite cannot match a partial index's WHERE with bound parameters.)
      .onConflict((oc) => oc.doNothing())
      .executeTakeFirst();
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
   * Returns false if the lease was lost.
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
        q = q.where('state', 'in', ['planned', 'executing']);
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
    if (filter.onlyProject) q = q.where('project', '=', filter.onlyProject);
    if (filter.environmentId) q = q.where('environment_id', '=', filter.environmentId);
    if (filter.before) {
      const b = filter.before;
      q = q.where((eb) =>
        eb.or([eb('planned_at', '<', b.at), eb.and([eb('planned_at', '=', b.at), eb('id', '<', b.id)])]),
      );
    }
    return q.orderBy('planned_at', 'desc').orderBy('id', 'desc').limit(limit).execute();
  }

  async openJobs(environmentId: string): Promise<CleanupJobRow[]> {
    return this.db
      .selectFrom('cleanup_jobs')
      .selectAll()
      .where('environment_id', '=', environmentId)
      .where('state', 'in', ['planned', 'executing'])
      .execute();
  }

  // ── control: halt, planning lease, policies, breakers ────────────────────────────────────

  async control() {
    return this.reader
      .selectFrom('cleanup_control')
      .selectAll()
      .where('id', '=', 'global')
      .executeTakeFirstOrThrow();
  }

  async setHalted(halted: boolean, actor: string, now: Date): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      const result = await trx
        .updateTable('cleanup_control')
        .set({
          halted: halted ? 1 : 0,
          halted_at: halted ? now.toISOString() : null,
          halted_by: halted ? actor : null,
        })
        .where('id', '=', 'global')
        .where('halted', '=', halted ? 0 : 1)
        .executeTakeFirst();
      const changed = Number(result.numUpdatedRows) === 1;
      if (changed) {
        await writeAudit(trx, now, [
          { actor, action: halted ? 'cleanup-halt' : 'cleanup-resume', detail: {} },
        ]);
      }
      return changed;
    });
  }

  /** Takes (or renews) the planning lease; false while another replica holds a live one. */
  async acquirePlanLease(owner: string, leaseMs: number, now: Date): Promise<boolean> {
    const at = now.toISOString();
    const result = await this.db
      .updateTable('cleanup_control')
      .set({
        plan_lease_owner: owner,
        plan_lease_expires_at: new Date(now.getTime() + leaseMs).toISOString(),
      })
      .where('id', '=', 'global')
      .where((eb) =>
        eb.or([
          eb('plan_lease_owner', 'is', null),
          eb('plan_lease_owner', '=', owner),
          eb('plan_lease_expires_at', '<', at),
        ]),
      )
      .executeTakeFirst();
    return Number(result.numUpdatedRows) === 1;
  }

  async releasePlanLease(owner: string, passMs: number, now: Date): Promise<void> {
    await this.db
      .updateTable('cleanup_control')
      .set((eb) => ({
        plan_lease_owner: null,
        plan_lease_expires_at: null,
        pass_seq: eb('pass_seq', '+', 1),
        last_pass_at: now.toISOString(),
        last_pass_ms: Math.round(passMs),
      }))
      .where('id', '=', 'global')
      .where('plan_lease_owner', '=', owner)
      .execute();
  }

  async policies() {
    return this.reader
      .selectFrom('cleanup_policies')
      .selectAll()
      .orderBy('project')
      .orderBy('environment')
      .execute();
  }

  /** The policies seen on active environments of a project (and environment name). */
  async seenPolicies(project: string, environment?: string) {
    let q = this.db
      .selectFrom('environments')
      .select(['name', 'policy_after_inactivity', 'policy_action'])
      .where('project', '=', project)
      .where('state', 'in', ['active', 'paused'])
      .where('policy_action', 'is not', null)
      .distinct();
    if (environment) q = q.where('name', '=', environment);
    return q.execute();
  }

  async enforce(
    rows: { project: string; environment: string; afterMs: number; action: string; text: string }[],
    actor: string,
    now: Date,
  ): Promise<void> {
    const at = now.toISOString();
    await this.db.transaction().execute(async (trx) => {
      for (const r of rows) {
        await trx
          .insertInto('cleanup_policies')
          .values({
            project: r.project,
            environment: r.environment,
            after_inactivity_ms: r.afterMs,
            action: r.action,
            enforced_at: at,
            enforced_by: actor,
          })
          .onConflict((oc) =>
            oc.columns(['project', 'environment']).doUpdateSet({
              after_inactivity_ms: r.afterMs,
              action: r.action,
              enforced_at: at,
              enforced_by: actor,
            }),
          )
          .execute();
      }
      await writeAudit(
        trx,
        now,
        rows.map((r) => ({
          actor,
          action: 'policy-enforce',
          detail: {
            project: r.project,
            environment: r.environment,
            afterInactivity: r.text,
            action: r.action,
          },
        })),
      );
    });
  }

  async breakers() {
    return this.reader.selectFrom('cleanup_breakers').selectAll().orderBy('project').execute();
  }

  async openBreakers(
    opened: { project: string; dueCount: number; activeCount: number }[],
    actor: string,
    now: Date,
  ): Promise<void> {
    if (opened.length === 0) return;
    await this.db.transaction().execute(async (trx) => {
      const audits: AuditInput[] = [];
      for (const b of opened) {
        const result = await trx
          .insertInto('cleanup_breakers')
          .values({
            project: b.project,
            opened_at: now.toISOString(),
            due_count: b.dueCount,
            active_count: b.activeCount,
          })
          .onConflict((oc) => oc.column('project').doNothing())
          .executeTakeFirst();
        if (Number(result.numInsertedOrUpdatedRows ?? 0) > 0) {
          audits.push({
            actor,
            action: 'breaker-open',
            detail: {
              project: b.project,
              due: b.dueCount,
              active: b.activeCount,
              message: `${b.dueCount} of ${b.activeCount} active environments due at once; nothing is cleaned in ${b.project} until an admin resets the breaker`,
            },
          });
        }
      }
      await writeAudit(trx, now, audits);
    });
  }

  async resetBreaker(project: string, actor: string, now: Date): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      const result = await trx
        .deleteFrom('cleanup_breakers')
        .where('project', '=', project)
        .executeTakeFirst();
      if (Number(result.numDeletedRows) !== 1) return false;
      await writeAudit(trx, now, [{ actor, action: 'breaker-reset', detail: { project } }]);
      return true;
    });
  }

  // ── decisions of the last pass ───────────────────────────────────────────────────────────

  async decisionRows(): Promise<CleanupDecisionRow[]> {
    return this.db.selectFrom('cleanup_decisions').selectAll().execute();
  }

  async writeDecisions(
    upserts: CleanupDecisionRow[],
    removed: string[],
    audits: AuditInput[],
    now: Date,
  ): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      for (let i = 0; i < upserts.length; i += 500) {
        await trx
          .insertInto('cleanup_decisions')
          .values(upserts.slice(i, i + 500))
          .onConflict((oc) =>
            oc.column('resource_id').doUpdateSet((eb) => ({
              environment_id: eb.ref('excluded.environment_id'),
              project: eb.ref('excluded.project'),
              environment: eb.ref('excluded.environment'),
              namespace_name: eb.ref('excluded.namespace_name'),
              target_key: eb.ref('excluded.target_key'),
              plugin: eb.ref('excluded.plugin'),
              action: eb.ref('excluded.action'),
              kind: eb.ref('excluded.kind'),
              reason_code: eb.ref('excluded.reason_code'),
              due_at: eb.ref('excluded.due_at'),
              last_activity_at: eb.ref('excluded.last_activity_at'),
              sentence: eb.ref('excluded.sentence'),
              job_id: eb.ref('excluded.job_id'),
              decided_at: eb.ref('excluded.decided_at'),
              warn_at: eb.ref('excluded.warn_at'),
            })),
          )
          .execute();
      }
      for (let i = 0; i < removed.length; i += 500) {
        await trx
          .deleteFrom('cleanup_decisions')
          .where('resource_id', 'in', removed.slice(i, i + 500))
          .execute();
      }
      await writeAudit(trx, now, audits);
    });
  }

  /** Environments (active or paused) whose policy has a schedule, for the plan's transitions. */
  async scheduledEnvironments(
    filter: { project?: string; environment?: string; onlyProject: string | null },
    limit: number,
  ): Promise<{ id: string; project: string; name: string; state: string; policy_schedule: string }[]> {
    // In id order through the index of scheduled environments (migration 0008), the state
    // checked here: a condition on state would have the database read every active environment
    // by state and sort them. Cleaned ones are few among the scheduled; read on past them.
    const found: { id: string; project: string; name: string; state: string; policy_schedule: string }[] = [];
    const chunk = limit * 2;
    for (let after: string | undefined; found.length < limit;) {
      let q = this.reader
        .selectFrom('environments')
        .select(['id', 'project', 'name', 'state', 'policy_schedule'])
        .where('policy_schedule', 'is not', null);
      if (after !== undefined) q = q.where('id', '>', after);
      if (filter.project) q = q.where('project', '=', filter.project);
      if (filter.environment) q = q.where('name', '=', filter.environment);
      if (filter.onlyProject) q = q.where('project', '=', filter.onlyProject);
      const rows = await q.orderBy('id').limit(chunk).execute();
      for (const r of rows) {
        if (found.length < limit && (r.state === 'active' || r.state === 'paused')) {
          found.push({ ...r, policy_schedule: r.policy_schedule! });
        }
      }
      if (rows.length < chunk) break;
      after = rows[rows.length - 1]!.id;
    }
    return found;
  }

  async planPage(
    filter: {
      dueBefore: string;
      project?: string;
      environment?: string;
      namespace?: string;
      onlyProject?: string | null;
      after?: { at: string; id: string };
    },
    limit: number,
  ): Promise<CleanupDecisionRow[]> {
    let q = this.reader.selectFrom('cleanup_decisions').selectAll().where('due_at', '<=', filter.dueBefore);
    if (filter.project) q = q.where('project', '=', filter.project);
    if (filter.onlyProject) q = q.where('project', '=', filter.onlyProject);
    if (filter.environment) q = q.where('environment', '=', filter.environment);
    if (filter.namespace) q = q.where('namespace_name', '=', filter.namespace);
    if (filter.after) {
      const a = filter.after;
      q = q.where((eb) =>
        eb.or([eb('due_at', '>', a.at), eb.and([eb('due_at', '=', a.at), eb('resource_id', '>', a.id)])]),
      );
    }
    return q.orderBy('due_at').orderBy('resource_id').limit(limit).execute();
  }

  async blockedCounts(): Promise<Record<string, number>> {
    const rows = await this.reader
      .selectFrom('cleanup_decisions')
      .select(['reason_code', (eb) => eb.fn.countAll<number>().as('n')])
      .where('kind', '=', 'blocked')
      .groupBy('reason_code')
      .execute();
    return Object.fromEntries(rows.map((r) => [r.reason_code ?? 'unknown', Number(r.n)]));
  }
}

/**
 * An environment is `cleaned` when it has resources and all of them (other than shared system
 * namespaces) are missing; otherwise `active` (the rule ingest applies too).
 */
export async function refreshEnvironmentStates(trx: Db, environmentIds: string[], at: string): Promise<void> {
  for (const id of environmentIds) {
    const rows = await trx
      .selectFrom('resources')
      .select(['state', 'role'])
      .where('environment_id', '=', id)
      .where('role', '!=', 'system')
      .execute();
    if (rows.length > 0 && rows.every((r) => r.state === 'missing')) {
      await trx
        .updateTable('environments')
        .set({ state: 'cleaned', cleaned_at: at, updated_at: at })
        .where('id', '=', id)
        .where('state', 'in', ['active', 'paused'])
        .execute();
    }
  }
}

/**
 * A pause job done: the environment is `paused` (with the rule that paused it); a resume job
 * done: `active` again. The namespace stays: nothing is marked missing.
 */
async function markPaused(trx: Db, job: CleanupJobRow, at: string): Promise<void> {
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
