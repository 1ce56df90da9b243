/**
 * Opening the server database: an SQLite file (the default, zero setup) or PostgreSQL
 * (`postgres://…`, for several replicas), both behind Kysely; and applying the migrations.
 */
import BetterSqlite3 from 'better-sqlite3';
import {
  Kysely,
  Migrator,
  PostgresDialect,
  sql,
  SqliteDialect,
  type Migration,
  type SqliteDatabase,
} from 'kysely';
import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { Worker } from 'node:worker_threads';
import pg from 'pg';
import { TendError } from '../../errors.js';
import * as m0001 from './migrations/0001_init.js';
import type { Database } from './schema.js';

export type DialectName = 'sqlite' | 'postgres';

export interface ServerDatabase {
  db: Kysely<Database>;
  dialect: DialectName;
  /** Where it is, for messages: the SQLite file, or the PostgreSQL URL without its password. */
  location: string;
  close(): Promise<void>;
}

export interface OpenDatabaseOptions {
  /** `postgres://…`; when absent, an SQLite file in `dataDir`. */
  databaseUrl?: string;
  /** Directory of the SQLite file `tend.db` (default `.tend-server/`). */
  dataDir?: string;
  /** An explicit SQLite file (tests, benchmarks); overrides dataDir. */
  sqliteFile?: string;
  /** PostgreSQL pool size (default 10). */
  poolSize?: number;
}

/** The migrations, in order. A new one is a new numbered file added here. */
export const migrations: Record<string, Migration> = {
  '0001_init': m0001,
};

export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return 'postgres://…';
  }
}

export async function openDatabase(options: OpenDatabaseOptions = {}): Promise<ServerDatabase> {
  const url = options.databaseUrl;
  if (url) {
    if (!/^postgres(ql)?:\/\//.test(url)) {
      throw new TendError(
        'TEND_USAGE',
        `--database-url must start with postgres://, got "${redactUrl(url)}"`,
      );
    }
    // BIGINT (count(*)) as a JS number: the counts here stay far below 2^53.
    pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));
    const pool = new pg.Pool({ connectionString: url, max: options.poolSize ?? 10 });
    // An idle client that loses its connection must not crash the server.
    pool.on('error', () => undefined);
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
    return { db, dialect: 'postgres', location: redactUrl(url), close: () => db.destroy() };
  }
  const file = resolve(options.sqliteFile ?? join(options.dataDir ?? '.tend-server', 'tend.db'));
  try {
    mkdirSync(dirname(file), { recursive: true });
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
    // thread; the connection itself only checkpoints if that thread falls far behind.
    sqlite.pragma('wal_autocheckpoint = 16384');
    sqlite.pragma('journal_size_limit = 67108864');
    const checkpointer = startCheckpointer(file);
    const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: cachingStatements(sqlite) }) });
    return {
      db,
      dialect: 'sqlite',
      location: file,
      close: async () => {
        await checkpointer.stop();
        await db.destroy();
      },
    };
  } catch (error) {
    throw new TendError(
      'TEND_DATABASE',
      `cannot open the SQLite database ${file}: ${(error as Error).message}`,
      {
        cause: error,
      },
    );
  }
}

const checkpointerSource = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.module);
const db = new Database(workerData.file, { fileMustExist: true });
db.pragma('synchronous = FULL');
const checkpoint = () => {
  try {
    db.pragma('wal_checkpoint(PASSIVE)');
  } catch {
    // Busy or gone: the next round, or the writer's own autocheckpoint, does it.
  }
};
const timer = setInterval(checkpoint, workerData.intervalMs);
parentPort.on('message', () => {
  clearInterval(timer);
  checkpoint();
  db.close();
  parentPort.close();
});
`;

/**
 * A thread of its own that checkpoints the WAL of an SQLite file every `intervalMs`
 * (`PASSIVE`: it never blocks the writer). The server's connection then never stops a request
 * to copy pages and fsync the database file. Best effort: if the thread fails, the
 * connection's own autocheckpoint still bounds the WAL.
 */
function startCheckpointer(file: string, intervalMs = 200): { stop(): Promise<void> } {
  let worker: Worker;
  try {
    worker = new Worker(checkpointerSource, {
      eval: true,
      workerData: { module: createRequire(import.meta.url).resolve('better-sqlite3'), file, intervalMs },
    });
  } catch {
    return { stop: async () => undefined };
  }
  const exited = new Promise<void>((done) => {
    worker.once('exit', () => done());
    worker.once('error', () => done());
  });
  worker.unref();
  return {
    stop: async () => {
      worker.postMessage('stop');
      const timeout = setTimeout(() => void worker.terminate(), 5000);
      await exited;
      clearTimeout(timeout);
    },
  };
}

/**
 * Kysely prepares every query anew; the ingest path repeats the same few statements, so keep
 * prepared statements by SQL text (bounded). Kysely runs one query at a time on SQLite.
 */
function cachingStatements(sqlite: BetterSqlite3.Database, size = 256): SqliteDatabase {
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

export interface MigrationReport {
  applied: string[];
  current: string[];
}

/**
 * Applies every pending migration. On PostgreSQL, replicas starting at once serialise on an
 * advisory lock, so exactly one of them applies each migration.
 */
export async function migrateToLatest(database: ServerDatabase): Promise<MigrationReport> {
  const migrator = new Migrator({
    db: database.db,
    provider: { getMigrations: async () => migrations },
  });
  const run = async () => {
    const { error, results = [] } = await migrator.migrateToLatest();
    if (error) {
      const failed = results.find((r) => r.status === 'Error')?.migrationName ?? 'unknown';
      throw new TendError('TEND_DATABASE', `migration ${failed} failed: ${(error as Error).message}`, {
        cause: error,
      });
    }
    return results.filter((r) => r.status === 'Success').map((r) => r.migrationName);
  };
  let applied: string[];
  if (database.dialect === 'postgres') {
    applied = await database.db.connection().execute(async (conn) => {
      await sql`select pg_advisory_lock(7420001)`.execute(conn);
      try {
        return await run();
      } finally {
        await sql`select pg_advisory_unlock(7420001)`.execute(conn);
      }
    });
  } else {
    applied = await run();
  }
  return { applied, current: Object.keys(migrations) };
}

/** True when the database answers a trivial query (for /readyz). */
export async function isReachable(database: ServerDatabase): Promise<boolean> {
  try {
    await sql`select 1`.execute(database.db);
    return true;
  } catch {
    return false;
  }
}
