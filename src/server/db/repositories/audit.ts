/** The audit log: every decision and every change a person or token made, newest first. */
import type { Kysely } from 'kysely';
import { monotonicFactory } from 'ulidx';

// Audit ids sort by time, also for entries written in the same millisecond.
export const auditId = monotonicFactory();
import type { AuditEntry, Database } from '../schema.js';

export interface AuditFilter {
  environmentId?: string;
  action?: string;
  /** Entries older than this id (ULID): the cursor. */
  before?: string;
}

export class AuditRepository {
  /** `reader` serves the reads outside a transaction (ServerDatabase.reader). */
  constructor(
    private readonly db: Kysely<Database>,
    private readonly reader: Kysely<Database> = db,
  ) {}

  async record(entry: {
    actor: string;
    action: string;
    environmentId?: string | null;
    detail?: Record<string, unknown>;
    now?: Date;
  }): Promise<void> {
    const now = entry.now ?? new Date();
    await this.db
      .insertInto('audit_log')
      .values({
        id: auditId(now.getTime()),
        at: now.toISOString(),
        actor: entry.actor,
        action: entry.action,
        environment_id: entry.environmentId ?? null,
        detail: entry.detail ? JSON.stringify(entry.detail) : null,
      })
      .execute();
  }

  async list(filter: AuditFilter, limit: number): Promise<AuditEntry[]> {
    let q = this.reader.selectFrom('audit_log').selectAll();
    if (filter.environmentId) q = q.where('environment_id', '=', filter.environmentId);
    if (filter.action) q = q.where('action', '=', filter.action);
    if (filter.before) q = q.where('id', '<', filter.before);
    return q.orderBy('id', 'desc').limit(limit).execute();
  }
}
