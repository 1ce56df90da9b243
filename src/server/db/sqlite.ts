/**
 * SQLite connections of the server (better-sqlite3): the writer's pragmas, the prepared-statement
 * cache and the Kysely dialect that takes turns with the event loop. Used by the thread that
 * owns the writer connection (sqlite-writer-thread.ts) and by the reader connection of
 * database.ts.
 */
import BetterSqlite3 from 'better-sqlite3';
import {
  SqliteDialect,
  SqliteDriver,
  type DatabaseConnection,
  type Driver,
  type SqliteDatabase,
  type SqliteDialectConfig,
} from 'kysely';

/** The writer connection of `file`, in WAL mode, every commit on disk. */
export function openSqliteWriter(file: string, walRestartPages: number): BetterSqlite3.Database {
  const sqlite = new BetterSqlite3(file);
  sqlite.pragma('journal_mode = WAL');
  // FULL: a batch the server acknowledged is on disk (the CLI deletes acknowledged events from
  // its outbox, so there is no other copy). In WAL mode that is one fsync of the WAL per
  // commit; NORMAL would skip it and could lose the last acknowledged batches on power loss.
  sqlite.pragma('synchronous = FULL');
  sqlite.pragma('foreign_keys = ON');
  sqlite.pragma('busy_timeout = 5000');
  sqlite.pragma('temp_store = memory');
  sqlite.pragma('cache_size = -32768');
  // Checkpoints (copying the WAL into the database file, with its fsync) run in a background
  // thread (database.ts, startCheckpointer); the connection itself only checkpoints if that
  // thread fails.
  sqlite.pragma(`wal_autocheckpoint = ${4 * walRestartPages}`);
  sqlite.pragma('journal_size_limit = 67108864');
  return sqlite;
}

/**
 * better-sqlite3 runs every statement synchronously, so transactions waiting for the connection
 * would run back to back in one chain of microtasks, and Node sends no answer (it uncorks
 * sockets on process.nextTick, after the microtasks) until the chain ends — under ingest load,
 * half a second. Each transaction turns the event loop once it holds the connection, before
 * `begin` (SQLite takes no lock until the first statement anyway).
 */
class TurnTakingSqliteDriver extends SqliteDriver {
  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await new Promise((resolve) => setImmediate(resolve));
    return super.beginTransaction(connection);
  }
}

export class TurnTakingSqliteDialect extends SqliteDialect {
  constructor(private readonly dialectConfig: SqliteDialectConfig) {
    super(dialectConfig);
  }

  override createDriver(): Driver {
    return new TurnTakingSqliteDriver(this.dialectConfig);
  }
}

/**
 * Kysely prepares every query anew; the ingest path repeats the same few statements, so keep
 * prepared statements by SQL text (bounded). Kysely runs one query at a time on SQLite.
 */
export function cachingStatements(sqlite: BetterSqlite3.Database, size = 256): SqliteDatabase {
  const cache = new Map<string, BetterSqlite3.Statement>();
  return {
    close: () => sqlite.close(),
    prepare: (text: string) => {
      let statement = cache.get(text);
      if (statement) {
        cache.delete(text);
      } else {
        statement = sqlite.prepare(text);
        if (cache.size >= size) cache.delete(cache.keys().next().value!);
      }
      cache.set(text, statement);
      return statement as unknown as ReturnType<SqliteDatabase['prepare']>;
    },
  };
}
