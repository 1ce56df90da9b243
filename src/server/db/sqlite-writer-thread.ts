/**
 * The thread that owns the SQLite writer connection (started by sqlite-writer.ts). node:sqlite
 * is synchronous: run on the server's event loop, every statement and every commit's fsync would
 * stop it from reading and checking the next requests. Here they run beside it, on the other core.
 *
 * Two kinds of work come in, in the order they were sent:
 * - ingest of a checked batch (`ingest`): the whole of registry/ingest.ts runs here, batches that
 *   arrive while one is written grouped into one commit (db/group-commit.ts);
 * - the server's other statements (`acquire`, `query`…, `release`): the connection is held for
 *   the main thread from `acquire` to `release` (one query, or a whole transaction), and no
 *   ingest transaction runs meanwhile — one connection, one transaction at a time, as before.
 */
import { CompiledQuery, Kysely, type DatabaseConnection } from 'kysely';
import { parentPort, workerData } from 'node:worker_threads';
import { ingestEvents } from '../registry/ingest.js';
import { fromWire } from './event-wire.js';
import { cachingStatements, openSqliteWriter, TurnTakingSqliteDialect } from './sqlite.js';
import {
  serializeError,
  type WriterReply,
  type WriterRequest,
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

function holding(): DatabaseConnection {
  if (!held) throw new Error('the writer connection is not held');
  return held.connection;
}

async function onConnectionRequest(request: Exclude<WriterRequest, { op: 'ingest' }>): Promise<unknown> {
  switch (request.op) {
    case 'acquire':
      // Queued behind the ingest transaction that holds the connection, if any.
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
  if (request.op === 'ingest') {
    void reply(
      request.id,
      ingestEvents(
        db,
        'sqlite',
        fromWire(request.events),
        new Date(request.receivedAt),
        request.tokenProject,
      ),
    );
    return;
  }
  connectionWork = connectionWork.then(() => reply(request.id, onConnectionRequest(request)));
});
