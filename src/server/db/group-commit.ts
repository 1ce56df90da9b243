/**
 * Group commit: small write transactions that arrive while one is running are run together in
 * the next one, so many cost one commit. On SQLite a commit is an fsync of the WAL on the one
 * writer connection, and node:sqlite waits for it on the event loop: 1,000 cleanup jobs
 * started and completed one transaction each would stop the server for 2,000 fsyncs, and four
 * CLIs streaming batches of events would pay one fsync a batch.
 *
 * The first write runs at once (no added latency); those that queue meanwhile go together, each
 * in a savepoint of its own: a write that throws is rolled back to its savepoint and fails alone,
 * what the others wrote is committed. Should the shared transaction itself fail (its commit, or a
 * savepoint the database has lost), each write is run again in a transaction of its own. Each
 * write must be correct on its own in any order (conditional updates of its own rows) and sees
 * what the writes before it in the group wrote, as if they had committed just before. On
 * PostgreSQL each write keeps its own transaction: commits do not block the event loop there, and
 * one transaction locking many writes' environments in no fixed order could deadlock.
 */
import { sql, type Kysely, type Transaction } from 'kysely';
import { isSqlite } from './dialect.js';
import type { Database } from './schema.js';

type Write = {
  work: (trx: Transaction<Database>) => Promise<unknown>;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
};

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

const shared = new WeakMap<Kysely<Database>, GroupCommit>();

export class GroupCommit {
  private readonly queue: Write[] = [];
  private draining = false;
  private readonly maxBatch: number;

  /** The group commit of this database's writes that share one (event ingest). */
  static of(db: Kysely<Database>): GroupCommit {
    let writes = shared.get(db);
    if (!writes) shared.set(db, (writes = new GroupCommit(db)));
    return writes;
  }

  constructor(
    private readonly db: Kysely<Database>,
    maxBatch = 256,
  ) {
    this.maxBatch = isSqlite(db) ? maxBatch : 1;
  }

  /** Runs `work` in a transaction, perhaps shared with other writes; its result is `work`'s. */
  run<T>(work: (trx: Transaction<Database>) => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ work, resolve: resolve as (value: unknown) => void, reject });
      if (!this.draining) void this.drain();
    });
  }

  private async drain(): Promise<void> {
    this.draining = true;
    try {
      while (this.queue.length > 0) {
        const batch = this.queue.splice(0, this.maxBatch);
        let outcomes: Outcome[] | undefined;
        if (batch.length > 1) {
          outcomes = await this.db
            .transaction()
            .execute(async (trx) => {
              const out: Outcome[] = [];
              for (const w of batch) out.push(await inSavepoint(trx, w.work));
              return out;
            })
            .catch(() => undefined);
        }
        if (outcomes) {
          batch.forEach((w, i) => {
            const outcome = outcomes[i]!;
            if (outcome.ok) w.resolve(outcome.value);
            else w.reject(outcome.error);
          });
          continue;
        }
        for (const w of batch) {
          await this.db.transaction().execute(w.work).then(w.resolve, w.reject);
        }
      }
    } finally {
      this.draining = false;
    }
  }
}

/**
 * `work` in a savepoint: kept when it returns, undone when it throws. A savepoint that cannot be
 * rolled back to throws (the shared transaction is lost: the group is run again write by write).
 */
async function inSavepoint(
  trx: Transaction<Database>,
  work: (trx: Transaction<Database>) => Promise<unknown>,
): Promise<Outcome> {
  await sql`savepoint group_write`.execute(trx);
  let outcome: Outcome;
  try {
    outcome = { ok: true, value: await work(trx) };
  } catch (error) {
    await sql`rollback to savepoint group_write`.execute(trx);
    outcome = { ok: false, error };
  }
  await sql`release savepoint group_write`.execute(trx);
  return outcome;
}
