/**
 * Restore jobs (docs/cleanup.md#undo): the dashboard's Restore button and
 * `POST /api/v1/environments/:id/restore` ask the executor serving the archive's cluster to
 * re-create the environment, as `tend restore` does from a laptop. The job goes through the same
 * queue as every cleanup job — claimed only by executors that say they run restores for its
 * plugin (and asked for only of a plugin one of its target's executors restores), started
 * after the server's re-check, finished with its outcome. The executor runs a restore session:
 * its namespace is created through the namespace gate, and the session's events, sent with the
 * outcome, are checked against the job and ingested like a command's, so the `created` event is
 * the namespace's ownership proof and the environment is active again by the same path.
 */
import { executorTargetOf, targetKey, type Target } from '../../cleanup/targets.js';
import type { RestoreOrder } from '../../cleanup/protocol.js';
import { maxRestoreEvents } from '../../cleanup/protocol.js';
import type { TendEvent } from '../../events/catalog.js';
import { TendError } from '../../errors.js';
import type { Kysely } from 'kysely';
import type { DialectName } from '../db/dialect.js';
import type { IngestResult } from '../db/event-wire.js';
import type { CleanupInventoryRepository } from '../db/repositories/cleanup-inventories.js';
import type { CleanupJobRepository } from '../db/repositories/cleanup-jobs.js';
import type { EnvironmentRepository } from '../db/repositories/environments.js';
import { writeAudit } from '../db/repositories/audit.js';
import type { CleanupJobRow, Database, Environment } from '../db/schema.js';
import { ingestBatch, validateBatch } from '../registry/batch.js';
import { environmentView } from '../views.js';
import { statusReportOf } from '../../events/resource-status.js';
import type { ArchiveStore } from './archives.js';
import { jobAudit } from './audits.js';

/** The event types a restore session may report: its own life and the namespaces (resources) it touched. */
const restoreEventTypes = new Set([
  'sessionStarted',
  'sessionCompleted',
  'sessionFailed',
  'namespaceStatus',
  'resourceStatus',
]);

/** Refusals of a restore session that a retry cannot change. */
const permanentRefusals = new Set<string>([
  'TEND_ARCHIVE',
  'TEND_K8S_NAMESPACE_OTHER_PROJECT',
  'TEND_K8S_SYSTEM_NAMESPACE',
]);

export class RestoreJobs {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: DialectName,
    private readonly jobs: CleanupJobRepository,
    private readonly environments: EnvironmentRepository,
    private readonly archives: ArchiveStore,
    /** What the executors of each target say they run (their heartbeats). */
    private readonly inventories: CleanupInventoryRepository,
    private readonly now: () => Date,
    /** Why a namespace name is protected (`kube-*`, `default`, the system namespace, patterns), or undefined. */
    private readonly protectedName: (name: string) => string | undefined,
  ) {}

  /**
   * Refuses a restore into `namespace` on `targetKey` before any job, record or namespace exists:
   * a protected name (cleanup could never remove it again, and tend never writes there), or a
   * namespace the registry holds for another environment (another project's, or one present
   * again). `tend restore` asks the same through `GET …/archive?into=`, so the CLI and the
   * server refuse alike.
   */
  async checkTarget(env: Environment, targetKey: string, namespace: string): Promise<void> {
    const why = this.protectedName(namespace);
    if (why) {
      throw new TendError(
        'TEND_SERVER_BAD_REQUEST',
        `namespace ${namespace} is protected (${why}): a restore never writes into it; name a new namespace`,
      );
    }
    const holders = (await this.environments.holdersOf(namespace)).filter(
      (h) => executorTargetOf(h.target_key) === targetKey && h.environment_id !== env.id,
    );
    const holder = holders[0];
    if (holder) {
      throw new TendError(
        'TEND_CLEANUP_CONFLICT',
        `namespace ${namespace} is recorded for environment ${holder.project}/${holder.name}: a restore never writes into a namespace that exists; name a new namespace`,
      );
    }
  }

  /**
   * Plans the restore of the environment's latest archive into its namespace (or `into`): refused
   * when there is none, when no executor of its target restores its plugin's environments, when
   * the namespace is recorded as present again, or when a job of it is open.
   */
  async request(env: Environment, actor: string, into?: string): Promise<CleanupJobRow> {
    const now = this.now();
    const row = await this.archives.requireLatest(env.id, now);
    // An archive this server cannot unseal (another key) is refused now, not when the job runs.
    this.archives.keyFor(row);
    const namespace = into ?? row.namespace_name;
    await this.checkTarget(env, row.target_key, namespace);
    // Every generation of the archived namespace (a re-created one is a new generation), the
    // latest first (as the repository lists them).
    const generations = (await this.environments.resources(env.id)).filter(
      (r) => executorTargetOf(r.target_key) === row.target_key && r.namespace_name === row.namespace_name,
    );
    const resource = generations[0];
    if (!resource) {
      throw new TendError(
        'TEND_ARCHIVE',
        `environment ${env.project}/${env.name} no longer records namespace ${row.namespace_name} on ${row.target_key}: nothing to restore it for`,
      );
    }
    // Restored by its own plugin's executor: asked for only when one that serves the archive's
    // target says it restores that plugin's environments.
    if (!(await this.inventories.someExecutorRuns(row.target_key, resource.plugin, 'restore'))) {
      throw new TendError(
        'TEND_ARCHIVE',
        `no executor serving ${row.target_key} restores environments of plugin ${resource.plugin}: the archive of ${env.project}/${env.name} is restored by tend restore, if the plugin can, or the environment is started again with tend deploy`,
      );
    }
    if (generations.some((r) => r.state === 'ready') && namespace === row.namespace_name) {
      throw new TendError(
        'TEND_CLEANUP_CONFLICT',
        `namespace ${namespace} is recorded as present again (a deploy since the cleanup): a restore never writes into it; restore into a new namespace (into)`,
      );
    }
    const id = await this.jobs.createRestoreJob({
      environmentId: env.id,
      resourceId: resource.id,
      project: env.project,
      environment: env.name,
      pluginName: resource.plugin,
      targetKey: row.target_key,
      namespaceName: namespace,
      archiveId: row.id,
      reason: `restore the archive of ${row.created_at} into namespace ${namespace}, asked by ${actor}`,
      actor,
      now,
    });
    if (!id) {
      throw new TendError(
        'TEND_CLEANUP_CONFLICT',
        `namespace ${row.namespace_name} of ${env.project}/${env.name} has an open cleanup job already (a restore asked for before?): see GET /api/v1/cleanup/jobs`,
      );
    }
    const job = (await this.jobs.job(id, this.db))!;
    await writeAudit(this.db, now, [
      jobAudit(job, 'restore-requested', actor, job.reason, { archiveId: row.id }),
    ]);
    return job;
  }

  /** Why a claimed restore job must not start, or undefined (the server's re-check). */
  async recheck(job: CleanupJobRow): Promise<string | undefined> {
    const now = this.now();
    const latest = await this.archives.latestRow(job.environment_id, now);
    if (!latest || latest.id !== job.archive_id) {
      return latest
        ? `a newer archive of the environment was taken (${latest.id}) since the restore was asked for`
        : 'the archive expired (--archive-retention) or was pruned';
    }
    const present = (await this.environments.resources(job.environment_id)).some(
      (r) =>
        r.state === 'ready' &&
        r.namespace_name === job.namespace_name &&
        executorTargetOf(r.target_key) === job.target_key,
    );
    if (present) {
      return `namespace ${job.namespace_name} is recorded as present again (a deploy since the cleanup)`;
    }
    return undefined;
  }

  /**
   * Why a failed restore job can never succeed, so that it fails for good instead of being
   * retried, or undefined (a transient failure): its archive cannot be read back (tampered,
   * sealed with another key, expired), or its session was refused by something a retry does not
   * change (the namespace is another project's or shared infrastructure). `events` were checked
   * by `record`.
   */
  async permanentFailure(job: CleanupJobRow, events: unknown[] | undefined): Promise<string | undefined> {
    const refused = (events as TendEvent[] | undefined)?.find(
      (e) => e.type === 'sessionFailed' && permanentRefusals.has(e.payload.error.code),
    );
    if (refused?.type === 'sessionFailed') return `the restore was refused (${refused.payload.error.code})`;
    try {
      await this.archives.restorable(job.environment_id, this.now());
    } catch (error) {
      const code = error instanceof TendError ? error.code : undefined;
      if (code === 'TEND_ARCHIVE' || code === 'TEND_ARCHIVE_NOT_FOUND') {
        return `its archive cannot be restored: ${(error as Error).message}`;
      }
      throw error;
    }
    return undefined;
  }

  /** What the executor of the started job restores: the archive, its requester and the environment's policy. */
  async order(job: CleanupJobRow, executorId: string): Promise<RestoreOrder> {
    const now = this.now();
    const { row, archive } = await this.archives.restorable(job.environment_id, now);
    if (row.id !== job.archive_id) {
      throw new TendError(
        'TEND_CLEANUP_CONFLICT',
        `job ${job.id} restores archive ${job.archive_id ?? '?'}, which is no longer the environment's latest (${row.id})`,
      );
    }
    await this.archives.audited(row, `executor:${executorId} (restore asked by ${job.actor ?? '?'})`, now);
    const env = await this.environments.get(job.environment_id);
    const view = env ? environmentView(env) : undefined;
    return {
      restorable: archive,
      requestedBy: job.actor ?? 'unknown',
      ...(view?.policy
        ? { cleanupPolicy: { ...view.policy, ...(env!.policy_archive === 0 ? { archive: false } : {}) } }
        : {}),
      ...(view?.pullRequest
        ? { pullRequest: { repository: view.pullRequest.repository, number: view.pullRequest.number } }
        : {}),
    } as RestoreOrder;
  }

  /**
   * Before a restore job finishes: the events of its session, checked against the job — one
   * session, started for the job's project, environment and namespace, reporting only that
   * namespace on the job's target — and ingested. A `done` needs the namespace's `created` event;
   * then the archive is marked restored.
   */
  async record(
    job: CleanupJobRow,
    /** Undefined: the session's events so far, while the job runs. */
    outcome: string | undefined,
    events: unknown[] | undefined,
  ): Promise<IngestResult> {
    const now = this.now();
    const checked = events && events.length > 0 ? this.check(job, events) : [];
    const created = checked.some((e) => {
      const report = statusReportOf(e)?.payload;
      return report?.cause === 'created' && report.namespaceUid !== undefined;
    });
    if (outcome === 'done' && !created) {
      throw new TendError(
        'TEND_SERVER_BAD_REQUEST',
        `a restore is done only with the restore session's event that created namespace ${job.namespace_name}: none was sent`,
      );
    }
    const ingested =
      checked.length > 0
        ? await ingestBatch(this.db, this.dialect, checked, now, job.project ?? null)
        : { accepted: 0, duplicates: 0 };
    if (outcome === 'done') {
      const row = await this.archives.latestRow(job.environment_id, now);
      if (row && row.id === job.archive_id) await this.archives.markRestored(row, job.actor ?? '?', now);
    }
    return ingested;
  }

  /**
   * An event of a type of the restoring plugin's own (`buckets.bucketCreated` of a buckets job),
   * about the job's project and environment: what its restore primitive may announce. Its shape
   * was checked with the batch; its namespace is the job's plugin.
   */
  private ownTypeOfJobPlugin(job: CleanupJobRow, e: TendEvent): boolean {
    if (job.plugin === null || !e.type.startsWith(`${job.plugin}.`)) return false;
    const p = e.payload as Record<string, unknown>;
    return p.project === job.project && p.environment === job.environment;
  }

  private check(job: CleanupJobRow, raw: unknown[]): TendEvent[] {
    const events = validateBatch({ events: raw }, maxRestoreEvents);
    const refuse = (index: number, why: string) =>
      new TendError(
        'TEND_SERVER_BAD_REQUEST',
        `events[${index}]: ${why}; the restore's events are not recorded`,
        {
          detail: { index },
        },
      );
    const first = events[0]!;
    if (first.type !== 'sessionStarted')
      throw refuse(0, 'the first event must be the sessionStarted of the restore session');
    events.forEach((e, index) => {
      if (!restoreEventTypes.has(e.type) && !this.ownTypeOfJobPlugin(job, e))
        throw refuse(index, `a restore session does not report "${e.type}" events`);
      if (e.sessionId !== first.sessionId) throw refuse(index, 'the events are of more than one session');
      if (e.type === 'sessionStarted') {
        const p = e.payload;
        if (index !== 0) throw refuse(index, 'the session starts twice');
        if (
          p.command !== 'restore' ||
          p.project !== job.project ||
          p.environment !== job.environment ||
          p.namespace !== job.namespace_name
        ) {
          throw refuse(
            index,
            `the session is "${p.command}" of ${p.project}/${p.environment} in ${p.namespace}, the job restores ${job.project}/${job.environment} into ${job.namespace_name}`,
          );
        }
      }
      const p = statusReportOf(e)?.payload;
      if (p) {
        const key = targetKey(p.target as Target);
        if (
          p.namespaceName !== job.namespace_name ||
          p.project !== job.project ||
          p.environment !== job.environment ||
          executorTargetOf(key) !== job.target_key
        ) {
          throw refuse(
            index,
            `it reports namespace ${p.namespaceName} on ${key} for ${p.project}/${p.environment}; the job restores ${job.namespace_name} on ${job.target_key ?? '?'}`,
          );
        }
      }
    });
    return events;
  }
}
