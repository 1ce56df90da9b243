/**
 * The thread that owns the SQLite writer connection (started by sqlite-writer.ts). node:sqlite
 * is synchronous: run on the server's event loop, every statement and every commit's fsync would
 * stop it from reading and checking the next requests. Here they run beside it, on the other core.
 *
 * Two kinds of work come in, in the order they were sent:
 * - tasks (`run`): a module named by the layer above (WriterTaskModule; the registry's ingest of a
 *   checked batch) runs here with the connection, loaded once — ingest batches that arrive while
 *   one is written are grouped into one commit (db/group-commit.ts);
 * - the server's other statements (`acquire`, `query`…, `release`): the connection is held for
 *   the main thread from `acquire` to `release` (one query, or a whole transaction), and no
 *   task's transaction runs meanwhile — one connection, one transaction at a time, as before.
 */
import { CompiledQuery, Kysely, type DatabaseConnection } from 'kysely';
import { parentPort, workerData } from 'node:worker_threads';
import { cachingStatements, openSqliteWriter, TurnTakingSqliteDialect } from './sqlite.js';
import {
  serializeError,
  type WriterReply,
  type WriterRequest,
  type WriterTaskModule,
  type WriterThreadData,
} from './sqlite-writer.js';
import type { Database } from './schema.js';

const port = parentPort!;
const { file, walRestartPages } = workerData as WriterThreadData;

let db: Kysely<Database>;
try {
  db = new Kysely<Database>({
    dialect: new TurnTakingSqliteDialect({
      database: cachingStatements(openSqliteWriter(file, walRestartPages)),
    }),
  });
  port.postMessage({ id: 0, ok: true, value: 'ready' } satisfies WriterReply);
} catch (error) {
  port.postMessage({ id: 0, ok: false, error: serializeError(error) } satisfies WriterReply);
  port.close();
  throw error;
}

/** The connection while the main thread holds it, and how to give it back. */
let held: { connection: DatabaseConnection; release: () => void } | undefined;
/** The main thread's connection work, one request after the other. */
let connectionWork: Promise<unknown> = Promise.resolve();

function reply(id: number, work: Promise<unknown>): Promise<void> {
  return work.then(
    (value) => port.postMessage({ id, ok: true, value } satisfies WriterReply),
    (error: unknown) =>
      port.postMessage({ id, ok: false, error: serializeError(error) } satisfies WriterReply),
  );
}

/** The task modules loaded so far, by name. */
const taskModules = new Map<string, Promise<WriterTaskModule>>();

/** The module `task` (a path under src/server), beside this one: sources under tsx, or tsc's output. */
function taskModule(task: string): Promise<WriterTaskModule> {
  let module = taskModules.get(task);
  if (!module) {
    const extension = import.meta.url.endsWith('.ts') ? '.ts' : '.js';
    module = import(new URL(`../${task}${extension}`, import.meta.url).href) as Promise<WriterTaskModule>;
    taskModules.set(task, module);
  }
  return module;
}

function holding(): DatabaseConnection {
  if (!held) throw new Error('the writer connection is not held');
  return held.connection;
}

async function onConnectionRequest(request: Exclude<WriterRequest, { op: 'run' }>): Promise<unknown> {
  switch (request.op) {
    case 'acquire':
      // Queued behind the task's transaction that holds the connection, if any.
      return new Promise<void>((acquired) => {
        void db.getExecutor().provideConnection(
          (connection) =>
            new Promise<void>((release) => {
              held = { connection, release };
              acquired();
            }),
        );
      });
    case 'query':
      return holding().executeQuery(CompiledQuery.raw(request.sql, [...request.parameters]));
    case 'release':
      held?.release();
      held = undefined;
      return undefined;
    case 'close':
      await db.destroy();
      setImmediate(() => port.close());
      return undefined;
  }
}

port.on('message', (request: WriterRequest) => {
  if (request.op === 'run') {
    void reply(
      request.id,
      taskModule(request.task).then((module) => module.runInWriter(db, request.payload as never)),
    );
    return;
  }
  connectionWork = connectionWork.then(() => reply(request.id, onConnectionRequest(request)));
});
