/**
 * The database layer under the ingest path: the PostgreSQL array literals ingest builds itself,
 * checked by a real PostgreSQL reading them back; the SQLite WAL, which must start over (not
 * grow) while writes never pause; and SQLite's one writer connection, which must hold up
 * neither reads nor answers.
 */
import { statSync } from 'node:fs';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildServer } from '../../src/server/app.js';
import type { App } from '../../src/server/services.js';
import { migrateToLatest, openDatabase, type ServerDatabase } from '../../src/server/db/database.js';
import { TokenRepository } from '../../src/server/db/repositories/tokens.js';
import { postgresArray } from '../../src/server/db/bulk.js';
import { waitFor } from '../helpers/project.js';
import { countRows, createTestDatabase, session, type TestDatabase } from './helpers.js';

describe('postgresArray on PostgreSQL', () => {
  let testDb: TestDatabase;
  let database: ServerDatabase;
  beforeAll(async () => {
    testDb = await createTestDatabase('postgres');
    database = await testDb.open();
  });
  afterAll(async () => {
    await database.close();
    await testDb.drop();
  });

  const readBack = async (literal: string, type: 'text' | 'integer') => {
    const result = await sql<{ value: unknown[] }>`select ${literal}::${sql.raw(type)}[] as value`.execute(
      database.db,
    );
    return result.rows[0]!.value;
  };

  it('reads back what JSON-safe strings, nulls and numbers were', async () => {
    const values = [
      'plain',
      'quote " inside',
      'back\\slash',
      '{"payload":"json","nested":{"a":[1,2]},"escaped":"line\\nbreak"}',
      '{braces}, commas, and spaces ',
      ' leading space',
      '',
      'NULL',
      'null',
      null,
      'ünïcödé, 日本語 and an emoji 😀',
      'line separator \u2028 here',
    ];
    expect(await readBack(postgresArray(values), 'text')).toEqual(values);
    expect(await readBack(postgresArray([0, 1, -7, null, 2147483647]), 'integer')).toEqual([
      0,
      1,
      -7,
      null,
      2147483647,
    ]);
    expect(await readBack(postgresArray([]), 'text')).toEqual([]);
  });

  it('reads back strings with characters JSON would escape differently', async () => {
    const values = ['new\nline', 'tab\there', 'bell \u0007', 'quote " and \\ with \r', null, 'x'];
    expect(postgresArray(values)).not.toContain('\\n');
    expect(await readBack(postgresArray(values), 'text')).toEqual(values);
  });
});

describe('the SQLite WAL under writes that never pause', () => {
  let testDb: TestDatabase;
  beforeAll(async () => {
    testDb = await createTestDatabase('sqlite');
  });
  afterAll(async () => {
    await testDb.drop();
  });

  it('creates the database, its WAL and shared-memory files, readable by their owner only (0600)', async () => {
    // A umask that would leave them readable by everyone: the server must not rely on it.
    const umask = process.umask(0o022);
    try {
      const dir = join(testDb.dir!, 'private');
      const file = join(dir, 'tend.db');
      const database = await openDatabase({ sqliteFile: file });
      await migrateToLatest(database);
      await database.db.insertInto('projects').values({ name: 'p', created_at: 'now' }).execute();
      for (const f of [file, `${file}-wal`, `${file}-shm`]) {
        expect(statSync(f).mode & 0o777, f).toBe(0o600);
      }
      expect(statSync(dir).mode & 0o777).toBe(0o700);
      await database.close();
    } finally {
      process.umask(umask);
    }
  });

  it('starts the WAL over at the restart size, long before the connection would checkpoint', async () => {
    const restartPages = 1024;
    const database = await openDatabase({
      sqliteFile: testDb.file!,
      walRestartPages: restartPages,
      checkpointIntervalMs: 10,
    });
    await migrateToLatest(database);
    const walFile = `${testDb.file!}-wal`;
    const pageSize = Number(
      (await sql<{ page_size: number }>`pragma page_size`.execute(database.db)).rows[0]!.page_size,
    );
    // Small transactions, about 20 times the restart size in all, with the event loop turning between
    // them as it does between requests.
    const transactions = 2000;
    const rowsPerTransaction = 8;
    const filler = 'x'.repeat(1000);
    let largestWal = 0;
    for (let i = 0; i < transactions; i++) {
      await database.db
        .insertInto('projects')
        .values(
          Array.from({ length: rowsPerTransaction }, (_, j) => ({
            name: `project-${i}-${j}-${filler}`,
            created_at: new Date().toISOString(),
          })),
        )
        .execute();
      largestWal = Math.max(largestWal, statSync(walFile).size);
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(await countRows(database.db, 'projects')).toBe(transactions * rowsPerTransaction);
    const integrity = await sql<{ integrity_check: string }>`pragma integrity_check`.execute(database.db);
    expect(integrity.rows[0]!.integrity_check).toBe('ok');
    const written = (await sql<{ page_count: number }>`pragma page_count`.execute(database.db)).rows[0]!
      .page_count;
    await database.close();
    expect(Number(written)).toBeGreaterThan(4 * restartPages);
    // The connection's own checkpoint (the fallback) would start it over only at 4 × 1024 pages;
    // the timer's restarts keep it well below that even when a busy machine delays the timer.
    expect(largestWal / pageSize).toBeLessThan(4 * restartPages);
  });
});

describe('SQLite: a backlog of batches', () => {
  let testDb: TestDatabase;
  let database: ServerDatabase;
  let app: App;
  let token: string;
  /** Events stored when each answer was sent, in the order of the answers. */
  const storedAtAnswer: number[] = [];
  let waiting = 0;
  beforeAll(async () => {
    testDb = await createTestDatabase('sqlite');
    database = await testDb.open();
    await migrateToLatest(database);
    ({ token } = await new TokenRepository(database.db).create({ name: 'ci', scope: 'ingest' }));
    app = await buildServer({ db: database });
    app.addHook('preHandler', async () => {
      waiting++;
    });
    app.addHook('onResponse', async () => {
      storedAtAnswer.push(await countEvents(database));
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
  });
  afterAll(async () => {
    await app.close();
    await database.close();
    await testDb.drop();
  });

  it('reads while the writer connection is held', async () => {
    const { release, held } = await holdWriter(database);
    try {
      const res = await app.inject({
        method: 'GET',
        url: '/api/v1/environments',
        headers: { authorization: `Bearer ${token}` },
      });
      // Authentication and the query ran on the reader: an ingest token is refused, not stuck.
      expect(res.statusCode).toBe(403);
      expect(await countEvents(database)).toBe(0);
    } finally {
      release();
      await held;
    }
  });

  it('answers each batch when it is stored, not when the whole backlog is', async () => {
    // The writer connection is busy (as during the WAL restart) while 10 batches arrive.
    storedAtAnswer.length = 0;
    const { release, held } = await holdWriter(database);
    const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/api/v1/events`;
    const answers = Array.from({ length: 10 }, (_, i) => {
      const a = session({ user: `backlog${i}` });
      return fetch(url, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ events: [a.started(), ...Array.from({ length: 99 }, () => a.heartbeat())] }),
      });
    });
    await waitFor(() => waiting === 10, 'the 10 batches at the handler');
    release();
    await held;
    for (const res of await Promise.all(answers)) expect(res.status).toBe(200);
    expect(await countEvents(database)).toBe(1000);
    // Each answer left once its own batch was stored: the first with 100 events stored, not 1000.
    expect(storedAtAnswer).toHaveLength(10);
    expect(storedAtAnswer[0]).toBeLessThan(1000);
  });
});

/** Holds the writer connection (the thread's) until `release`; resolves once it is held. */
async function holdWriter(database: ServerDatabase): Promise<{ release: () => void; held: Promise<void> }> {
  let release!: () => void;
  let acquired!: () => void;
  const holding = new Promise<void>((resolve) => (acquired = resolve));
  const held = database.db.connection().execute(
    () =>
      new Promise<void>((resolve) => {
        release = resolve;
        acquired();
      }),
  );
  await holding;
  return { release, held };
}

function countEvents(database: ServerDatabase): Promise<number> {
  return countRows(database.reader, 'events');
}
