/**
 * The database layer under the ingest path: the PostgreSQL array literals ingest builds itself,
 * checked by a real PostgreSQL reading them back; and the SQLite WAL, which must start over
 * (not grow) while writes never pause.
 */
import { statSync } from 'node:fs';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateToLatest, openDatabase, type ServerDatabase } from '../../src/server/db/database.js';
import { postgresArray } from '../../src/server/registry/ingest.js';
import { createTestDatabase, type TestDatabase } from './helpers.js';

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
    const count = await database.db
      .selectFrom('projects')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    expect(Number(count.n)).toBe(transactions * rowsPerTransaction);
    const integrity = await sql<{ integrity_check: string }>`pragma integrity_check`.execute(database.db);
    expect(integrity.rows[0]!.integrity_check).toBe('ok');
    const written = (await sql<{ page_count: number }>`pragma page_count`.execute(database.db)).rows[0]!
      .page_count;
    await database.close();
    expect(Number(written)).toBeGreaterThan(4 * restartPages);
    // The connection's own checkpoint (the fallback) would start it over only at 4 × 1024 pages.
    expect(largestWal / pageSize).toBeLessThan(2 * restartPages);
  });
});
