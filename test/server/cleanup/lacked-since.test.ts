/**
 * What lets the server finish a begun delete job done (queue.ts goneSinceBegun): only a complete
 * inventory of the job's target taken after the attempt began, lacking the namespace with the
 * job's uid. An older list, or one that lists the namespace with that uid, attests nothing.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { CleanupInventoryRepository } from '../../../src/server/db/repositories/cleanup-inventories.js';
import { createTestDatabase, type TestDatabase } from '../helpers.js';

let db: TestDatabase | undefined;
afterEach(async () => db?.drop());

async function repository() {
  db = await createTestDatabase('sqlite', { migrated: true });
  const database = await db.open();
  return { repo: new CleanupInventoryRepository(database.db), close: () => database.close() };
}

const item = (uid: string) => ({
  namespaceName: 'shop-dev',
  uid,
  version: '1',
  state: 'active' as const,
  managedByTend: true,
  adopted: false,
});

describe('lackedSince', () => {
  it('only a complete list taken after the attempt began, lacking the uid, attests the namespace gone', async () => {
    const { repo, close } = await repository();
    try {
      const listed = (items: ReturnType<typeof item>[], at: string) =>
        repo.storeInventory({
          executorId: 'e1',
          actor: 'executor:e1',
          targetKey: 'kubernetes/c1',
          pluginName: 'kubernetes',
          complete: true,
          error: null,
          items,
          now: new Date(at),
          clockOffsetMs: null,
        });
      const ask = (since: string) =>
        repo.lackedSince({ targetKey: 'kubernetes/c1', namespaceName: 'shop-dev', uid: 'u1' }, since);
      await listed([], '2026-01-01T10:00:00.000Z');
      // The list before the attempt: nothing attested.
      expect(await ask('2026-01-01T10:05:00.000Z')).toBeUndefined();
      // The list after it lacks the namespace: gone, as of that list.
      expect(await ask('2026-01-01T09:55:00.000Z')).toBe('2026-01-01T10:00:00.000Z');
      // A list that shows the namespace with the job's uid: not gone; with another uid (re-created): gone.
      await listed([item('u1')], '2026-01-01T10:10:00.000Z');
      expect(await ask('2026-01-01T10:05:00.000Z')).toBeUndefined();
      await listed([item('u2')], '2026-01-01T10:20:00.000Z');
      expect(await ask('2026-01-01T10:15:00.000Z')).toBe('2026-01-01T10:20:00.000Z');
      // Another target's list says nothing of this one.
      expect(
        await repo.lackedSince(
          { targetKey: 'kubernetes/c2', namespaceName: 'shop-dev', uid: 'u1' },
          '2026-01-01T00:00:00.000Z',
        ),
      ).toBeUndefined();
    } finally {
      await close();
    }
  });
});
