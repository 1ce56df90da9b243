/**
 * The audit log: every decision and every change a person or token made, newest first.
 * `writeAudit` writes entries in the caller's transaction, so a change and its entry commit
 * together.
 */
import type { Kysely } from 'kysely';
import { monotonicFactory } from 'ulidx';
import type { AuditEntry, Database, DatabaseOrTransaction } from '../schema.js';
import { chunks } from '../bulk.js';

// Audit ids sort by time, also for entries written in the same millisecond.
export const auditId = monotonicFactory();

export interface AuditFilter {
  environmentId?: string;
  action?: string;
  /** Entries older than this id (ULID): the cursor. */
  before?: string;
}

/** One entry as a change writes it (its time is the change's). */
export interface AuditInput {
  actor: string;
  action: string;
  environmentId?: string | null;
  detail: Record<string, unknown>;
}

export async function writeAudit(db: DatabaseOrTransaction, now: Date, entries: AuditInput[]): Promise<void> {
  for (const slice of chunks(entries, 200)) {
    await db
      .insertInto('audit_log')
      .values(
        slice.map((e) => ({
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
