/**
 * SQLite connections of the server (node:sqlite, built into Node: no native addon to build or
 * download): loading the module, the writer's pragmas, the prepared-statement cache and the
 * Kysely dialect that takes turns with the event loop. Used by the thread that owns the writer
 * connection (sqlite-writer-thread.ts), by the reader connection of database.ts and by
 * `tend server backup` (backup.ts).
 */
import type * as NodeSqliteModule from 'node:sqlite';
import type { DatabaseSync, StatementSync } from 'node:sqlite';
import {
  SqliteDialect,
  SqliteDriver,
  type DatabaseConnection,
  type Driver,
  type SqliteDatabase,
  type SqliteDialectConfig,
  type SqliteStatement,
} from 'kysely';
import { builtinModule } from '../../builtin-module.js';

type NodeSqlite = typeof NodeSqliteModule;

let nodeSqlite: NodeSqlite | undefined;

/**
 * node:sqlite, loaded on first use. Node 22 prints "SQLite is an experimental feature…" on
 * stderr when a thread first loads it; tend's users did not ask for SQLite and can do nothing
 * about it, so that one warning is dropped (any other goes through). A static import would
 * load it before any code of this module runs, and in every command that bundles this module.
 */
export function loadNodeSqlite(): NodeSqlite {
  if (nodeSqlite) return nodeSqlite;
  const emitWarning = process.emitWarning;
  process.emitWarning = function (this: NodeJS.Process, ...args: Parameters<typeof emitWarning>) {
    if (isSqliteExperimentalWarning(args[0], args[1])) return;
    return Reflect.apply(emitWarning, this, args) as void;
  } as typeof emitWarning;
  try {
    nodeSqlite = builtinModule<NodeSqlite>('node:sqlite');
  } finally {
    process.emitWarning = emitWarning;
  }
  return nodeSqlite;
}

/** The warning Node 22 emits when node:sqlite is loaded (`emitExperimentalWarning('SQLite')`). */
export function isSqliteExperimentalWarning(warning: unknown, typeOrOptions: unknown): boolean {
  const type =
    typeof typeOrOptions === 'string'
      ? typeOrOptions
      : (typeOrOptions as { type?: unknown } | undefined)?.type;
  const message = warning instanceof Error ? warning.message : String(warning);
  return type === 'ExperimentalWarning' && message.startsWith('SQLite is an experimental feature');
}

/** An SQLite connection to `file`, which is created unless `readOnly`. */
export function openSqlite(file: string, options: { readOnly?: boolean } = {}): DatabaseSync {
  const { DatabaseSync } = loadNodeSqlite();
  return new DatabaseSync(file, { readOnly: options.readOnly ?? false });
}

/** The writer connection of `file`, in WAL mode, every commit on disk. */
export function openSqliteWriter(file: string, walRestartPages: number): DatabaseSync {
  const sqlite = openSqlite(file);
  sqlite.exec(`
    pragma journal_mode = WAL;
    -- FULL: a batch the server acknowledged is on disk (the CLI deletes acknowledged events
    -- from its outbox, so there is no other copy). In WAL mode that is one fsync of the WAL per
    -- commit; NORMAL would skip it and could lose the last acknowledged batches on power loss.
    pragma synchronous = FULL;
    pragma foreign_keys = ON;
    pragma busy_timeout = 5000;
    pragma temp_store = memory;
    pragma cache_size = -32768;
    -- Checkpoints (copying the WAL into the database file, with its fsync) run in a background
    -- thread (database.ts, startCheckpointer); the connection itself only checkpoints if that
    -- thread fails.
    pragma wal_autocheckpoint = ${4 * walRestartPages};
    pragma journal_size_limit = 67108864;
  `);
  return sqlite;
}

/**
 * node:sqlite runs every statement synchronously, so transactions waiting for the connection
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

type SqlValue = Parameters<StatementSync['run']>[1];

/**
 * A node:sqlite statement as Kysely's SqliteDriver uses one (the shape of better-sqlite3's):
 * `reader` says whether it returns rows (then `all`, else `run`), and the parameters come as one
 * array, where node:sqlite takes them as arguments (an object first would be named parameters).
 */
function kyselyStatement(statement: StatementSync): SqliteStatement {
  const parameters = (values: ReadonlyArray<unknown>) => values as SqlValue[];
  return {
    reader: statement.columns().length > 0,
    all: (values) => statement.all(...parameters(values)),
    run: (values) => statement.run(...parameters(values)),
    iterate: (values) => statement.iterate(...parameters(values)),
  };
}

/**
 * Kysely prepares every query anew; the ingest path repeats the same few statements, so keep
 * prepared statements by SQL text (bounded). Kysely runs one query at a time on SQLite.
 */
export function cachingStatements(sqlite: DatabaseSync, size = 256): SqliteDatabase {
  const cache = new Map<string, SqliteStatement>();
  return {
    close: () => sqlite.close(),
    prepare: (text: string) => {
      let statement = cache.get(text);
      if (statement) {
        cache.delete(text);
      } else {
        statement = kyselyStatement(sqlite.prepare(text));
        if (cache.size >= size) cache.delete(cache.keys().next().value!);
      }
      cache.set(text, statement);
      return statement;
    },
  };
}
