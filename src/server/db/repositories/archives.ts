/**
 * Environment archives (docs/cleanup.md#undo): stored by the archive route of a started delete
 * job (a retry of the job replaces what an earlier attempt stored), read back for `tend restore`,
 * listed for `tend envs <id>` and the dashboard, counted for /metrics, and pruned once expired.
 */
import type { Kysely } from 'kysely';
import type { Database, EnvironmentArchiveEntry, EnvironmentArchiveRow } from '../schema.js';
import { writeAudit, type AuditInput } from './audit.js';

export class ArchiveRepository {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly reader: Kysely<Database> = db,
  ) {}

  /** Stores the archive of a job, replacing one an earlier attempt of the same job stored. */
  async store(row: EnvironmentArchiveRow): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      await trx.deleteFrom('environment_archives').where('job_id', '=', row.job_id).execute();
      await trx.insertInto('environment_archives').values(row).execute();
    });
  }

  /** The environment's latest archive that has not expired, if any, without its contents. */
  latest(environmentId: string, now: Date): Promise<EnvironmentArchiveEntry | undefined> {
    return this.reader
      .selectFrom('environment_archives')
      .select([
        'id',
        'environment_id',
        'project',
        'environment',
        'namespace_name',
        'job_id',
        'target_key',
        'created_at',
        'expires_at',
        'size_bytes',
        'objects',
        'secrets',
        'key_fingerprint',
        'secrets_not_kept',
        'restored_at',
      ])
      .where('environment_id', '=', environmentId)
      .where('expires_at', '>', now.toISOString())
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(1)
      .executeTakeFirst();
  }

  /** An archive's contents: the body and the sealed Secrets. */
  contents(id: string): Promise<Pick<EnvironmentArchiveRow, 'body' | 'secrets_sealed'> | undefined> {
    return this.reader
      .selectFrom('environment_archives')
      .select(['body', 'secrets_sealed'])
      .where('id', '=', id)
      .executeTakeFirst();
  }

  /** Marks the archive restored, audited in the same transaction. */
  async markRestored(id: string, now: Date, audit: AuditInput): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      await trx
        .updateTable('environment_archives')
        .set({ restored_at: now.toISOString() })
        .where('id', '=', id)
        .execute();
      await writeAudit(trx, now, [audit]);
    });
  }

  /** An audit entry of its own (an archive read for a restore: its Secrets were unsealed). */
  audit(now: Date, entry: AuditInput): Promise<void> {
    return writeAudit(this.db, now, [entry]);
  }

  /**
   * Brings every archive's expiry within `retentionMs` of its creation: a lower
   * `--archive-retention` applies to the archives already kept (their sealed Secrets included),
   * not only to new ones. A higher one extends nothing: what was promised to be gone goes.
   */
  async capExpiry(retentionMs: number): Promise<number> {
    const rows = await this.db
      .selectFrom('environment_archives')
      .select(['id', 'created_at', 'expires_at'])
      .execute();
    let capped = 0;
    for (const row of rows) {
      const cap = new Date(Date.parse(row.created_at) + retentionMs).toISOString();
      if (row.expires_at <= cap) continue;
      await this.db
        .updateTable('environment_archives')
        .set({ expires_at: cap })
        .where('id', '=', row.id)
        .execute();
      capped++;
    }
    return capped;
  }

  /** Deletes every archive expired at `now`; how many. */
  async prune(now: Date): Promise<number> {
    const result = await this.db
      .deleteFrom('environment_archives')
      .where('expires_at', '<=', now.toISOString())
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  /** Archives that can still be restored at `now` and their stored size (bytes), for /metrics. */
  async totals(now: Date): Promise<{ count: number; bytes: number }> {
    const row = await this.reader
      .selectFrom('environment_archives')
      .where('expires_at', '>', now.toISOString())
      .select((eb) => [
        eb.fn.countAll<number | string>().as('count'),
        eb.fn.sum<number | string | null>('size_bytes').as('bytes'),
      ])
      .executeTakeFirst();
    return { count: Number(row?.count ?? 0), bytes: Number(row?.bytes ?? 0) };
  }
}
