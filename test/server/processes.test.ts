/**
 * The server as real processes (`node bin/tend.js server`, built by `npm run build`): two
 * replicas on one PostgreSQL ingesting the same events concurrently, and graceful shutdown.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { request } from 'node:http';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TendEvent } from '../../src/events/catalog.js';
import { migrateToLatest, type ServerDatabase } from '../../src/server/db/database.js';
import { TokenRepository } from '../../src/server/db/repositories/tokens.js';
import { countRows, createTestDatabase, dialects, session, type TestDatabase } from './helpers.js';

const bin = fileURLToPath(new URL('../../bin/tend.js', import.meta.url));
const built = fileURLToPath(new URL('../../dist/src/main.js', import.meta.url));

interface ServerProcess {
  child: ChildProcess;
  url: string;
  stderr: () => string;
  /** Resolves when stderr has a line matching the pattern. */
  waitFor(pattern: RegExp): Promise<void>;
  exited: Promise<number | null>;
}

async function spawnServer(db: TestDatabase): Promise<ServerProcess> {
  const args = [
    bin,
    'server',
    '--port',
    '0',
    ...(db.url ? ['--database-url', db.url] : ['--data-dir', db.dir!]),
  ];
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  const waiters: { pattern: RegExp; resolve: () => void }[] = [];
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
    err += chunk;
    for (const w of [...waiters]) {
      if (w.pattern.test(err)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
    }
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const waitFor = (pattern: RegExp) =>
    new Promise<void>((resolve, reject) => {
      if (pattern.test(err)) return resolve();
      waiters.push({ pattern, resolve });
      void exited.then((code) => reject(new Error(`server exited (${code}) before ${pattern}:\n${err}`)));
    });
  await waitFor(/tend server listening on (http:\/\/[^"\s]+)/);
  const url = /tend server listening on (http:\/\/[^"\s]+)/.exec(err)![1]!;
  return { child, url, stderr: () => err, waitFor, exited };
}

async function post(url: string, token: string, events: TendEvent[]) {
  const res = await fetch(`${url}/api/v1/events`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ events }),
  });
  return { status: res.status, body: (await res.json()) as { accepted: number; duplicates: number } };
}

async function prepare(dialect: (typeof dialects)[number]) {
  const testDb = await createTestDatabase(dialect);
  const database: ServerDatabase = await testDb.open();
  await migrateToLatest(database);
  const { token } = await new TokenRepository(database.db).create({ name: 'ci', scope: 'admin' });
  return { testDb, database, token };
}

beforeAll(() => {
  if (!existsSync(built)) throw new Error(`${built} is missing: run npm run build before these tests`);
});

describe('two server processes on one PostgreSQL', () => {
  let testDb: TestDatabase;
  let database: ServerDatabase;
  let token: string;
  const servers: ServerProcess[] = [];
  beforeAll(async () => {
    ({ testDb, database, token } = await prepare('postgres'));
    // Both start at once: migrations serialise on an advisory lock.
    servers.push(...(await Promise.all([spawnServer(testDb), spawnServer(testDb)])));
  });
  afterAll(async () => {
    for (const s of servers) {
      s.child.kill('SIGTERM');
      await s.exited;
    }
    await database.close();
    await testDb.drop();
  });

  it('stores each event, environment, session and resource exactly once', async () => {
    // 40 sessions in 20 environments; each batch is sent to both replicas at the same time.
    const batches: TendEvent[][] = [];
    for (let i = 0; i < 40; i++) {
      const a = session({ user: `u${i % 20}` });
      batches.push([
        a.started(),
        a.ns('ready', { uid: `uid-${i % 20}` }),
        ...Array.from({ length: 100 }, () => a.heartbeat()),
        a.action(),
        a.completed(),
      ]);
    }
    const total = batches.reduce((n, b) => n + b.length, 0);
    const [a, b] = servers as [ServerProcess, ServerProcess];
    const results = await Promise.all(
      batches.flatMap((batch, i) => [
        post(a.url, token, batch),
        post(b.url, token, i % 2 ? [...batch].reverse() : batch),
      ]),
    );
    for (const r of results) expect(r.status).toBe(200);
    const accepted = results.reduce((n, r) => n + r.body.accepted, 0);
    const duplicates = results.reduce((n, r) => n + r.body.duplicates, 0);
    expect(accepted).toBe(total);
    expect(duplicates).toBe(total);

    const count = (table: 'events' | 'environments' | 'sessions' | 'resources') =>
      countRows(database.db, table);
    expect(await count('events')).toBe(total);
    expect(await count('environments')).toBe(20);
    expect(await count('sessions')).toBe(40);
    expect(await count('resources')).toBe(20);
    const sessions = await database.db.selectFrom('sessions').select('status').execute();
    expect(new Set(sessions.map((s) => s.status))).toEqual(new Set(['completed']));
  });
});

describe.each(dialects)('server process on %s', (dialect) => {
  let testDb: TestDatabase;
  let database: ServerDatabase;
  let token: string;
  beforeAll(async () => {
    ({ testDb, database, token } = await prepare(dialect));
  });
  afterAll(async () => {
    await database.close();
    await testDb.drop();
  });

  it('finishes an in-flight request on SIGTERM, then exits 0', async () => {
    const server = await spawnServer(testDb);
    const a = session({ user: 'graceful' });
    const body = JSON.stringify({
      events: [a.started(), ...Array.from({ length: 200 }, () => a.heartbeat())],
    });
    const half = Math.floor(body.length / 2);
    const response = new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = request(
        `${server.url}/api/v1/events`,
        {
          method: 'POST',
          headers: {
            authorization: `Bearer ${token}`,
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(body),
            // The server answers 100 Continue once it has parsed the headers: from then on the
            // request is in flight, whatever the load on the machine.
            expect: '100-continue',
          },
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8').on('data', (c: string) => (text += c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
        },
      );
      req.on('error', reject);
      // Once the request is in flight: half the body, then the signal; the rest only once the
      // server is shutting down.
      req.on('continue', () => {
        req.write(body.slice(0, half), () => {
          server.child.kill('SIGTERM');
          void server.waitFor(/shutting down/).then(() => req.end(body.slice(half)));
        });
      });
    });
    const res = await response;
    expect(res.status).toBe(200);
    expect(JSON.parse(res.text)).toEqual({ accepted: 201, duplicates: 0 });
    expect(await server.exited).toBe(0);
    expect(server.stderr()).toContain('tend server stopped');
    const stored = await database.db
      .selectFrom('events')
      .select((eb) => eb.fn.countAll().as('n'))
      .where('session_id', '=', a.sessionId)
      .executeTakeFirstOrThrow();
    expect(Number(stored.n)).toBe(201);
  });

  it('never logs tokens', async () => {
    const server = await spawnServer(testDb);
    await post(server.url, token, [session().started()]);
    await fetch(`${server.url}/api/v1/environments`, { headers: { authorization: `Bearer ${token}x` } });
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
    expect(server.stderr()).not.toContain(token);
    expect(server.stderr()).not.toContain(token.slice(5, 20));
  });
});
