/**
 * Group commit: small write transactions that arrive while one is running are run together in
 * the next one, so many cost one commit. On SQLite a commit is an fsync of the WAL on the one
 * writer connection, and better-sqlite3 waits for it on the event loop: 1,000 cleanup jobs
 * started and completed one transaction each would stop the server for 2,000 fsyncs.
 *
 * The first write runs at once (no added latency); those that queue meanwhile go together. A
 * batch that throws is run again one write per transaction, so a failing write fails alone and
 * the others are not lost. Each write must be correct on its own in any order (conditional
 * updates of its own rows). On PostgreSQL each write keeps its own transaction: commits do not
 * block the event loop there, and one transaction locking many jobs' environments in no fixed
 * order could deadlock with ingest.
 */
import type { Kysely, Transaction } from 'kysely';
import { isSqlite } from './dialect.js';
import type { Database } from './schema.js';

type Write = {
  work: (trx: Transaction<Database>) => Promise<unknown>;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
};

export class GroupCommit {
  private readonly queue: Write[] = [];
  private draining = false;
  private readonly maxBatch: number;

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
        let results: unknown[] | undefined;
        if (batch.length > 1) {
          results = await this.db
            .transaction()
            .execute(async (trx) => {
              const out: unknown[] = [];
              for (const w of batch) out.push(await w.work(trx));
              return out;
            })
            .catch(() => undefined);
        }
        if (results) {
          batch.forEach((w, i) => w.resolve(results[i]));
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
