/**
 * Group commit on a real SQLite file and PostgreSQL: writes that arrive together share
 * transactions (on SQLite), each gets its own result, and a write that fails fails alone —
 * nothing the others wrote is lost.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { GroupCommit } from '../../src/server/db/group-commit.js';
import type { ServerDatabase } from '../../src/server/db/database.js';
import { migrateToLatest } from '../../src/server/db/database.js';
import { createTestDatabase, dialects, type TestDatabase } from './helpers.js';

describe.each(dialects)('group commit on %s', (dialect) => {
  let testDb: TestDatabase;
  let database: ServerDatabase;
  beforeEach(async () => {
    testDb = await createTestDatabase(dialect);
    database = await testDb.open();
    await migrateToLatest(database);
  });
  afterEach(async () => {
    await database.close();
    await testDb.drop();
  });

  const breaker = (project: string, due = 1) => ({
    project,
    opened_at: '2026-03-29T00:00:00.000Z',
    due_count: due,
    active_count: 1,
  });

  it('writes arriving together share a commit on SQLite; each gets its own result', async () => {
    const writes = new GroupCommit(database.db);
    const transactions = new Set<unknown>();
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        writes.run(async (trx) => {
          transactions.add(trx);
          await trx
            .insertInto('cleanup_breakers')
            .values(breaker(`p${i}`, i))
            .execute();
          return i;
        }),
      ),
    );
    expect(results).toEqual(Array.from({ length: 20 }, (_, i) => i));
    const rows = await database.db.selectFrom('cleanup_breakers').select('project').execute();
    expect(rows).toHaveLength(20);
    // The first ran alone; the 19 that queued meanwhile went together (PostgreSQL: one each).
    expect(transactions.size).toBe(dialect === 'sqlite' ? 2 : 20);
  });

  it('a write that fails fails alone: the others of its batch are committed', async () => {
    const writes = new GroupCommit(database.db);
    await database.db.insertInto('cleanup_breakers').values(breaker('taken')).execute();
    const outcomes = await Promise.allSettled(
      ['a', 'b', 'taken', 'c', 'd'].map((project) =>
        writes.run(async (trx) => {
          await trx.insertInto('cleanup_breakers').values(breaker(project)).execute();
          return project;
        }),
      ),
    );
    expect(outcomes.map((o) => o.status)).toEqual([
      'fulfilled',
      'fulfilled',
      'rejected',
      'fulfilled',
      'fulfilled',
    ]);
    const rows = await database.db
      .selectFrom('cleanup_breakers')
      .select('project')
      .orderBy('project')
      .execute();
    expect(rows.map((r) => r.project)).toEqual(['a', 'b', 'c', 'd', 'taken']);
  });

  it('a write that throws is undone alone: what it wrote before throwing is not stored', async () => {
    const writes = new GroupCommit(database.db);
    const transactions = new Set<unknown>();
    const outcomes = await Promise.allSettled(
      ['a', 'b', 'half', 'c'].map((project) =>
        writes.run(async (trx) => {
          transactions.add(trx);
          await trx.insertInto('cleanup_breakers').values(breaker(project)).execute();
          if (project === 'half') throw new Error('refused after writing');
          return project;
        }),
      ),
    );
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    expect((outcomes[2] as PromiseRejectedResult).reason).toEqual(new Error('refused after writing'));
    const rows = await database.db
      .selectFrom('cleanup_breakers')
      .select('project')
      .orderBy('project')
      .execute();
    expect(rows.map((r) => r.project)).toEqual(['a', 'b', 'c']);
    // On SQLite the three that queued behind the first shared one transaction, the failure too.
    expect(transactions.size).toBe(dialect === 'sqlite' ? 2 : 4);
  });
});
