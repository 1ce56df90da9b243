/**
 * Sessions of people signed in through the OpenID provider, on both databases: the session id is
 * stored only as its hash (like tokens), an expired session is not found, logging out deletes it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashToken } from '../../src/server/db/credentials.js';
import { migrateToLatest, type ServerDatabase } from '../../src/server/db/database.js';
import { PersonSessionRepository } from '../../src/server/db/repositories/person-sessions.js';
import { createTestDatabase, dialects, type TestDatabase } from './helpers.js';

describe.each(dialects)('person sessions on %s', (dialect) => {
  let testDb: TestDatabase;
  let database: ServerDatabase;
  let repo: PersonSessionRepository;
  beforeAll(async () => {
    testDb = await createTestDatabase(dialect);
    database = await testDb.open();
    await migrateToLatest(database);
    repo = new PersonSessionRepository(database.db);
  });
  afterAll(async () => {
    await database.close();
    await testDb.drop();
  });

  const person = {
    issuer: 'https://login.example.com',
    subject: '248289761001',
    email: 'alice@example.com',
    name: 'Alice',
    groups: ['shop-devs'],
  };

  it('stores the session id only as its hash, and finds the session by the id', async () => {
    const now = new Date('2026-06-01T10:00:00Z');
    const { id, csrf } = await repo.create(person, 3600_000, now);
    const rows = await database.db.selectFrom('person_sessions').selectAll().execute();
    expect(JSON.stringify(rows)).not.toContain(id);
    expect(rows.map((r) => r.id_hash)).toContain(hashToken(id));
    expect(await repo.find(id, now)).toEqual({ ...person, csrf });
    expect(await repo.find(`${id}x`, now)).toBeUndefined();
  });

  it('does not find an expired session, prunes it at the next sign-in, and deletes on logout', async () => {
    const now = new Date('2026-06-02T10:00:00Z');
    const { id } = await repo.create(person, 60_000, now);
    const later = new Date(now.getTime() + 60_000);
    expect(await repo.find(id, later)).toBeUndefined();
    const { id: next } = await repo.create(person, 60_000, later);
    const hashes = (await database.db.selectFrom('person_sessions').select('id_hash').execute()).map(
      (r) => r.id_hash,
    );
    expect(hashes).not.toContain(hashToken(id));
    await repo.delete(next);
    expect(await repo.find(next, later)).toBeUndefined();
  });
});
