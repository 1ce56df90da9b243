/**
 * The SQLite writer connection, in a thread of its own (sqlite-writer-thread.ts), seen from the
 * server's event loop: a Kysely dialect whose one connection sends each statement to the thread,
 * and `run`, which hands the thread a whole task to run with its connection (the registry's ingest
 * of a checked batch of events). While the thread executes a task's statements and waits for its
 * commit's fsync, the event loop reads, parses and checks the next requests: on two cores the two
 * overlap.
 *
 * Nothing changes for the rest of the server: there is still one writer connection, holding one
 * transaction at a time; a batch is answered once its transaction has committed.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import {
  CompiledQuery,
  SqliteDialect,
  type DatabaseConnection,
  type Driver,
  type Kysely,
  type QueryCompiler,
  type QueryResult,
  type TransactionSettings,
} from 'kysely';
import { errorCodes, TendError, type ErrorCode } from '../../errors.js';
import type { Database } from './schema.js';

export interface WriterThreadData {
  file: string;
  walRestartPages: number;
}

/**
 * A module whose tasks the writer thread runs (`SqliteWriterThread.run`), named by its path under
 * src/server without extension (`registry/ingest`): the thread loads it once, then calls its
 * `runInWriter` with the writer connection and each task's payload. The module is named by the
 * layer above that sends the task: the database knows none of them.
 */
export interface WriterTaskModule {
  runInWriter(db: Kysely<Database>, payload: never): Promise<unknown>;
}

export type WriterRequest =
  | { id: number; op: 'run'; task: string; payload: unknown }
  | { id: number; op: 'acquire' }
  | { id: number; op: 'query'; sql: string; parameters: readonly unknown[] }
  | { id: number; op: 'release' }
  | { id: number; op: 'close' };

/** A request before it is given its id. */
type WithoutId<R> = R extends unknown ? Omit<R, 'id'> : never;

type SerializedError =
  | { tend: true; code: string; message: string; detail?: Record<string, unknown> }
  | { tend: false; name: string; message: string; code?: unknown };

export type WriterReply =
  { id: number; ok: true; value: unknown } | { id: number; ok: false; error: SerializedError };

/** An error as it crosses from the thread: a TendError keeps its code and detail. */
export function serializeError(error: unknown): SerializedError {
  if (error instanceof TendError) {
    return { tend: true, code: error.code, message: error.message, detail: error.detail };
  }
  const e = error instanceof Error ? error : new Error(String(error));
  return { tend: false, name: e.name, message: e.message, code: (e as { code?: unknown }).code };
}

function deserializeError(error: SerializedError): Error {
  if (error.tend && Object.hasOwn(errorCodes, error.code)) {
    return new TendError(error.code as ErrorCode, error.message, { detail: error.detail });
  }
  const out = new Error(error.message);
  if (!error.tend) {
    out.name = error.name;
    if (error.code !== undefined) Object.assign(out, { code: error.code });
  }
  return out;
}

/**
 * The thread's module: beside this one (tsc's output, or the sources under tsx and Vitest), or,
 * from the CLI bundle (dist/cli/tend.cjs, whose import.meta.url is the bundle's), tsc's output of
 * it (dist/src/server/db/).
 */
function threadModule(): URL {
  const source = import.meta.url.endsWith('.ts');
  const candidates = source
    ? [new URL('./sqlite-writer-thread.ts', import.meta.url)]
    : [
        new URL('./sqlite-writer-thread.js', import.meta.url),
        new URL('../src/server/db/sqlite-writer-thread.js', import.meta.url),
      ];
  return candidates.find((url) => existsSync(fileURLToPath(url))) ?? candidates[0]!;
}

/** Starts the thread's module; from the sources, through tsx's loader (a development dependency). */
function startThread(data: WriterThreadData): Worker {
  const module = threadModule();
  if (!module.pathname.endsWith('.ts')) return new Worker(module, { workerData: data });
  const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx/esm/api')).href.replace(
    /index\.cjs$/,
    'index.mjs',
  );
  return new Worker(
    `import(${JSON.stringify(tsx)}).then((api) => { api.register(); return import(${JSON.stringify(module.href)}); });`,
    { eval: true, workerData: data },
  );
}

const threads = new WeakMap<Kysely<Database>, SqliteWriterThread>();

/** The writer thread behind a Kysely instance made with its dialect, if any. */
export function writerThreadOf(db: Kysely<Database>): SqliteWriterThread | undefined {
  return threads.get(db);
}

export class SqliteWriterThread {
  private readonly worker: Worker;
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  private nextId = 1;
  private stopped: Error | undefined;
  private closing = false;
  private readonly ready: Promise<void>;

  private constructor(data: WriterThreadData) {
    this.worker = startThread(data);
    let started: { resolve: (v: unknown) => void; reject: (e: Error) => void };
    this.ready = new Promise<void>((resolve, reject) => (started = { resolve: () => resolve(), reject }));
    this.pending.set(0, started!);
    this.worker.on('message', (reply: WriterReply) => {
      const call = this.pending.get(reply.id);
      if (!call) return;
      this.pending.delete(reply.id);
      if (this.pending.size === 0 && !this.closing) this.worker.unref();
      if (reply.ok) call.resolve(reply.value);
      else call.reject(deserializeError(reply.error));
    });
    const fail = (error: Error) => {
      this.stopped ??= error;
      for (const call of this.pending.values()) call.reject(this.stopped);
      this.pending.clear();
    };
    this.worker.on('error', fail);
    this.worker.on('exit', (code) =>
      fail(new TendError('TEND_DATABASE', `the SQLite writer thread stopped (exit code ${code})`)),
    );
  }

  /** The thread, once it has opened the writer connection of `data.file`. */
  static async start(data: WriterThreadData): Promise<SqliteWriterThread> {
    const thread = new SqliteWriterThread(data);
    await thread.ready;
    thread.worker.unref();
    return thread;
  }

  /** A dialect whose one connection is the thread's; the Kysely instance is registered for `run`. */
  dialect(): SqliteDialect {
    return new WriterThreadDialect(this);
  }

  register(db: Kysely<Database>): void {
    threads.set(db, this);
  }

  call<T>(request: WithoutId<WriterRequest>): Promise<T> {
    if (this.stopped) return Promise.reject(this.stopped);
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      // Referenced while an answer is awaited, lest an otherwise idle process exit.
      if (this.pending.size === 1) this.worker.ref();
      this.worker.postMessage({ ...request, id });
    });
  }

  /**
   * A task of the module `task` (WriterTaskModule), run by the thread with its connection, beside
   * the statements of the event loop's own connection; resolves with what it answers. The
   * payload crosses by structured clone: columns of strings are cheaper than objects.
   */
  run<T>(task: string, payload: unknown): Promise<T> {
    return this.call<T>({ op: 'run', task, payload });
  }

  async close(): Promise<void> {
    if (this.stopped) return;
    const exited = new Promise<void>((done) => this.worker.once('exit', () => done()));
    // Referenced until it has exited: its connection is closed and its files released.
    this.closing = true;
    this.worker.ref();
    await this.call({ op: 'close' }).catch(() => undefined);
    await exited;
  }
}

class WriterThreadConnection implements DatabaseConnection {
  constructor(private readonly thread: SqliteWriterThread) {}

  executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    return this.thread.call<QueryResult<R>>({ op: 'query', sql: query.sql, parameters: query.parameters });
  }

  async *streamQuery<R>(query: CompiledQuery): AsyncIterableIterator<QueryResult<R>> {
    for (const row of (await this.executeQuery<R>(query)).rows) yield { rows: [row] };
  }
}

/** One connection, as SQLite's own driver: a user at a time, queued here on the event loop. */
class WriterThreadDriver implements Driver {
  private readonly connection: WriterThreadConnection;
  private queue: Promise<void> = Promise.resolve();
  private unlock: (() => void) | undefined;

  constructor(private readonly thread: SqliteWriterThread) {
    this.connection = new WriterThreadConnection(thread);
  }

  async init(): Promise<void> {}

  async acquireConnection(): Promise<DatabaseConnection> {
    const previous = this.queue;
    let unlock!: () => void;
    this.queue = new Promise<void>((resolve) => (unlock = resolve));
    await previous;
    this.unlock = unlock;
    await this.thread.call({ op: 'acquire' });
    return this.connection;
  }

  async beginTransaction(connection: DatabaseConnection, _settings: TransactionSettings): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin'));
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('commit'));
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('rollback'));
  }

  async savepoint(connection: DatabaseConnection, name: string, _compile: QueryCompiler['compileQuery']) {
    await connection.executeQuery(CompiledQuery.raw(`savepoint ${quoteName(name)}`));
  }

  async rollbackToSavepoint(connection: DatabaseConnection, name: string) {
    await connection.executeQuery(CompiledQuery.raw(`rollback to ${quoteName(name)}`));
  }

  async releaseSavepoint(connection: DatabaseConnection, name: string) {
    await connection.executeQuery(CompiledQuery.raw(`release ${quoteName(name)}`));
  }

  async releaseConnection(): Promise<void> {
    const unlock = this.unlock;
    this.unlock = undefined;
    try {
      await this.thread.call({ op: 'release' });
    } finally {
      unlock?.();
    }
  }

  async destroy(): Promise<void> {
    await this.thread.close();
  }
}

const quoteName = (name: string) => `"${name.replace(/"/g, '""')}"`;

class WriterThreadDialect extends SqliteDialect {
  constructor(private readonly thread: SqliteWriterThread) {
    super({ database: () => Promise.reject(new Error('the writer connection is in its thread')) });
  }

  override createDriver(): Driver {
    return new WriterThreadDriver(this.thread);
  }
}
