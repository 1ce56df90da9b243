/**
 * Opening the server database: an SQLite file (the default, zero setup) or PostgreSQL
 * (`postgres://…`, for several replicas), both behind Kysely; and applying the migrations.
 */
import { Kysely, Migrator, PostgresDialect, sql, type Migration } from 'kysely';
import { closeSync, existsSync, mkdirSync, openSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { Worker } from 'node:worker_threads';
import pg from 'pg';
import { TendError } from '../../errors.js';
import { redactUrl } from '../../redact.js';
import { databaseFileName, serverDataDir } from './data-dir.js';
import * as m0001 from './migrations/0001_init.js';
import * as m0003 from './migrations/0003_cleanup.js';
import * as m0004 from './migrations/0004_cleanup_changes.js';
import * as m0005 from './migrations/0005_pause_schedules.js';
import * as m0006 from './migrations/0006_notifications.js';
import * as m0007 from './migrations/0007_state_history.js';
import * as m0008 from './migrations/0008_scheduled_environments.js';
import * as m0009 from './migrations/0009_cleanup_safety.js';
import * as m0010 from './migrations/0010_neutral_inventory.js';
import * as m0011 from './migrations/0011_event_order.js';
import * as m0012 from './migrations/0012_decision_local_time.js';
import * as m0013 from './migrations/0013_environment_archives.js';
import * as m0014 from './migrations/0014_namespace_requests.js';
import * as m0015 from './migrations/0015_person_sessions.js';
import * as m0016 from './migrations/0016_restore_jobs.js';
import * as m0017 from './migrations/0017_clock_attestation.js';
import * as m0018 from './migrations/0018_project_secrets.js';
import * as m0019 from './migrations/0019_event_types.js';
import * as m0020 from './migrations/0020_plugin_capabilities.js';
import type { DialectName } from './dialect.js';
import type { Database } from './schema.js';
import { cachingStatements, openSqlite, TurnTakingSqliteDialect } from './sqlite.js';
import { SqliteWriterThread } from './sqlite-writer.js';

export interface ServerDatabase {
  db: Kysely<Database>;
  /**
   * For reads outside a transaction (authentication, the API's GETs). On SQLite a connection of
   * its own: WAL readers never wait for the writer, where queries on `db` queue behind every
   * ingest transaction (one connection, held across each transaction's awaits). On PostgreSQL
   * the same pool as `db`.
   */
  reader: Kysely<Database>;
  dialect: DialectName;
  /** Where it is, for messages: the SQLite file, or the PostgreSQL URL without its password. */
  location: string;
  close(): Promise<void>;
}

export interface OpenDatabaseOptions {
  /** `postgres://…`; when absent, an SQLite file in `dataDir`. */
  databaseUrl?: string;
  /** Directory of the SQLite file `tend.db` (default: `serverDataDir()`, see data-dir.ts). */
  dataDir?: string;
  /**
   * SQLite: refuse (TEND_DATABASE_NOT_FOUND) instead of creating the file when it does not
   * exist — for commands that administer an existing server's database (token create|list|revoke).
   */
  mustExist?: boolean;
  /** An explicit SQLite file (tests, benchmarks); overrides dataDir. */
  sqliteFile?: string;
  /** PostgreSQL pool size (default 10). */
  poolSize?: number;
  /** SQLite: the WAL is started over once it holds this many pages (default 8192, 32 MiB). */
  walRestartPages?: number;
  /** SQLite: how often the background thread checkpoints the WAL (default 200 ms). */
  checkpointIntervalMs?: number;
}

/** The migrations, in order. A new one is a new numbered file added here. */
export const migrations: Record<string, Migration> = {
  '0001_init': m0001,
  '0003_cleanup': m0003,
  '0004_cleanup_changes': m0004,
  '0005_pause_schedules': m0005,
  '0006_notifications': m0006,
  '0007_state_history': m0007,
  '0008_scheduled_environments': m0008,
  '0009_cleanup_safety': m0009,
  '0010_neutral_inventory': m0010,
  '0011_event_order': m0011,
  '0012_decision_local_time': m0012,
  '0013_environment_archives': m0013,
  '0014_namespace_requests': m0014,
  '0015_person_sessions': m0015,
  '0016_restore_jobs': m0016,
  '0017_clock_attestation': m0017,
  '0018_project_secrets': m0018,
  '0019_event_types': m0019,
  '0020_plugin_capabilities': m0020,
};

export { redactUrl };

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
    return { db, reader: db, dialect: 'postgres', location: redactUrl(url), close: () => db.destroy() };
  }
  const file = resolve(options.sqliteFile ?? join(serverDataDir(options.dataDir), databaseFileName));
  if (options.mustExist && !existsSync(file)) {
    throw new TendError(
      'TEND_DATABASE_NOT_FOUND',
      `no tend server database in ${dirname(file)} (looked for ${file})`,
      {
        detail: {
          dataDir: dirname(file),
          hint:
            'pass the --data-dir (or TEND_DATA_DIR, or --database-url) your tend server uses; ' +
            'a new server creates its database on start or with tend server migrate',
        },
      },
    );
  }
  try {
    mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
    // The database holds token hashes and everything ingested: only its owner reads it. SQLite
    // gives the -wal and -shm files the mode of the database file.
    closeSync(openSync(file, 'a', 0o600));
    // The writer connection lives in a thread of its own (sqlite-writer.ts): its statements and
    // commits do not stop the event loop.
    const walRestartPages = options.walRestartPages ?? defaultWalRestartPages;
    const writer = await SqliteWriterThread.start({ file, walRestartPages });
    const db = new Kysely<Database>({ dialect: writer.dialect() });
    writer.register(db);
    // Opened on first use: one-shot commands (token create, migrate) never read through it.
    const reader = new Kysely<Database>({
      dialect: new TurnTakingSqliteDialect({
        database: async () => {
          const connection = openSqlite(file);
          connection.exec('pragma query_only = ON; pragma busy_timeout = 5000; pragma cache_size = -16384');
          return cachingStatements(connection);
        },
      }),
    });
    const checkpointer = startCheckpointer(
      file,
      { restartPages: walRestartPages, intervalMs: options.checkpointIntervalMs ?? 200 },
      // Holding the writer connection, no transaction commits while the thread copies the last
      // frames; the next one then finds the WAL fully copied and starts it over.
      (checkpointNow) => db.connection().execute(checkpointNow),
    );
    return {
      db,
      reader,
      dialect: 'sqlite',
      location: file,
      close: async () => {
        await checkpointer.stop();
        await reader.destroy();
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

/**
 * The WAL is started over from its beginning once it holds this many pages (32 MiB), so it does
 * not grow while ingest never pauses.
 */
const defaultWalRestartPages = 8192;

/**
 * The checkpointer thread's code (CommonJS, evaluated). It drops node:sqlite's experimental
 * warning on Node 22 as loadNodeSqlite (sqlite.ts) does: a thread of its own loads it anew.
 */
const checkpointerSource = `
const { parentPort, workerData } = require('node:worker_threads');
const emitWarning = process.emitWarning;
process.emitWarning = function (warning, type, ...rest) {
  const message = warning instanceof Error ? warning.message : String(warning);
  const kind = typeof type === 'string' ? type : type && type.type;
  if (kind === 'ExperimentalWarning' && message.startsWith('SQLite is an experimental feature')) return;
  return emitWarning.call(this, warning, type, ...rest);
};
const { DatabaseSync } = require('node:sqlite');
process.emitWarning = emitWarning;
const db = new DatabaseSync(workerData.file);
db.exec('pragma synchronous = FULL');
const walCheckpoint = db.prepare('pragma wal_checkpoint(PASSIVE)');
const checkpoint = () => {
  try {
    return walCheckpoint.get();
  } catch {
    // Busy or gone: the next round, or the writer's own autocheckpoint, does it.
    return undefined;
  }
};
const timer = setInterval(() => {
  const result = checkpoint();
  if (result && result.log >= workerData.restartPages) {
    // Copy what came in meanwhile, so that the frames left for the pause are few.
    checkpoint();
    parentPort.postMessage('restart');
  }
}, workerData.intervalMs);
parentPort.on('message', (message) => {
  if (message === 'checkpoint') {
    checkpoint();
    parentPort.postMessage('checkpointed');
    return;
  }
  clearInterval(timer);
  checkpoint();
  db.close();
  parentPort.close();
});
`;

/**
 * A thread of its own that checkpoints the WAL of an SQLite file every `intervalMs`
 * (`PASSIVE`: it never blocks the writer), so the server's connection never stops a request to
 * copy pages and fsync the database file.
 *
 * Copying is not enough to bound the WAL: SQLite starts it over only when a transaction begins
 * with every frame copied, which under steady ingest never happens by chance (the writer would
 * then checkpoint the rest itself at `wal_autocheckpoint`, stopping requests for tens of ms).
 * So when the WAL holds `restartPages`, `restart` is called with a function that copies the frames added
 * since the last round (a few ms of work), and runs it while holding the server's writer connection.
 * Best effort: if the thread fails, the connection's own autocheckpoint still bounds the WAL.
 */
function startCheckpointer(
  file: string,
  { restartPages, intervalMs }: { restartPages: number; intervalMs: number },
  restart: (checkpointNow: () => Promise<void>) => Promise<void>,
): { stop(): Promise<void> } {
  let worker: Worker;
  try {
    worker = new Worker(checkpointerSource, {
      eval: true,
      workerData: {
        file,
        intervalMs,
        restartPages,
      },
    });
  } catch {
    return { stop: async () => undefined };
  }
  let exited = false;
  const exit = new Promise<void>((done) => {
    const onExit = () => {
      exited = true;
      done();
    };
    worker.once('exit', onExit);
    worker.once('error', onExit);
  });
  const checkpointNow = async () => {
    if (exited) return;
    const checkpointed = new Promise<void>((done) =>
      worker.on('message', function onMessage(message) {
        if (message !== 'checkpointed') return;
        worker.off('message', onMessage);
        done();
      }),
    );
    // Referenced while the connection waits for it, lest an otherwise idle process exit.
    worker.ref();
    worker.postMessage('checkpoint');
    await Promise.race([checkpointed, exit]);
    worker.unref();
  };
  let restarting = false;
  worker.on('message', (message) => {
    if (message !== 'restart' || restarting || exited) return;
    restarting = true;
    restart(checkpointNow)
      .catch(() => undefined)
      .finally(() => (restarting = false));
  });
  worker.unref();
  return {
    stop: async () => {
      if (exited) return;
      worker.postMessage('stop');
      const timeout = setTimeout(() => void worker.terminate(), 5000);
      await exit;
      clearTimeout(timeout);
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
