/**
 * The scheduled environments the plan route lists with their transitions: in id order, only
 * active and paused ones, at most the limit — read in chunks through the index of scheduled
 * environments, so cleaned ones between chunks are read past, not counted.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateToLatest, type ServerDatabase } from '../../../src/server/db/database.js';
import { CleanupDecisionRepository } from '../../../src/server/db/repositories/cleanup-decisions.js';
import { createTestDatabase, dialects, type TestDatabase } from '../helpers.js';

const schedule = JSON.stringify({ sleepAt: '20:00', wakeAt: '08:00', weekdays: ['mon'], timeZone: 'UTC' });

describe.each(dialects)('scheduled environments on %s', (dialect) => {
  let testDb: TestDatabase;
  let database: ServerDatabase;
  beforeAll(async () => {
    testDb = await createTestDatabase(dialect);
    database = await testDb.open();
    await migrateToLatest(database);
    const at = new Date().toISOString();
    const env = (n: number, state: 'active' | 'paused' | 'cleaned', scheduled = true) => ({
      id: `env-${String(n).padStart(2, '0')}`,
      project: n % 2 ? 'odd' : 'even',
      name: 'dev',
      namespace: `ns-${n}`,
      state,
      protected: 0,
      created_at: at,
      updated_at: at,
      last_activity_at: at,
      policy_schedule: scheduled ? schedule : null,
    });
    await database.db
      .insertInto('environments')
      .values([
        env(1, 'cleaned'),
        env(2, 'active'),
        env(3, 'cleaned'),
        env(4, 'cleaned'),
        env(5, 'active', false),
        env(6, 'cleaned'),
        env(7, 'paused'),
        env(8, 'cleaned'),
        env(9, 'active'),
        env(10, 'active'),
        env(11, 'active'),
      ])
      .execute();
  });
  afterAll(async () => {
    await database.close();
    await testDb.drop();
  });

  it('lists active and paused ones in id order up to the limit, past cleaned ones across chunks', async () => {
    const repo = new CleanupDecisionRepository(database.db, database.reader);
    // A limit of 2 reads chunks of 4: the first has one to list, the next two more.
    const ids = async (limit: number, filter: { project?: string } = {}) =>
      (await repo.scheduledEnvironments({ visible: 'all', ...filter }, limit)).map((e) => e.id);
    expect(await ids(2)).toEqual(['env-02', 'env-07']);
    expect(await ids(3)).toEqual(['env-02', 'env-07', 'env-09']);
    expect(await ids(100)).toEqual(['env-02', 'env-07', 'env-09', 'env-10', 'env-11']);
    expect(await ids(100, { project: 'odd' })).toEqual(['env-07', 'env-09', 'env-11']);
    expect(await ids(1, { project: 'even' })).toEqual(['env-02']);
  });
});
