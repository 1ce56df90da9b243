/**
 * Server benchmark (issue 6): ingest throughput and batch latency over real HTTP on 127.0.0.1,
 * on SQLite and PostgreSQL, and GET /api/v1/environments latency for a page of 50 out of
 * 100,000 environments.
 *
 * Targets on a 2-core machine: 50,000 events/s on SQLite, 20,000 on PostgreSQL; p99 under
 * 100 ms for a batch of 500; a page of 50 out of 100,000 in under 50 ms.
 *
 * Ingest is measured twice, with the load coming from a process of its own (as the CLIs'
 * requests do: its HTTP and JSON work does not take turns with the server's event loop):
 * - saturation: 4 clients, each sending its next batch when the last is answered, as fast as
 *   the server goes — the throughput, and the latency of a server with a queue;
 * - at the target rate: batches sent on a schedule (open loop) at 50,000 events/s on SQLite and
 *   20,000 on PostgreSQL, latency counted from when each batch was due — the latency target
 *   read as "p99 under 100 ms while ingesting at the target rate".
 * `TEND_BENCH_CLIENT=inline` runs the clients in the server's process instead (the method of
 * the first figures, which counts the clients' work as the server's).
 *
 * Run alone: `npx tsx bench/server-ingest.ts` (`TEND_BENCH_ONLY=ingest` skips the list
 * benchmark, `TEND_BENCH_DATABASE=sqlite|postgres` runs one database, `TEND_BENCH_BATCHES` and
 * `TEND_BENCH_TARGET_BATCHES` set the sizes). PostgreSQL from TEND_BENCH_DATABASE_URL or
 * TEND_TEST_DATABASE_URL (default postgres://postgres:postgres@127.0.0.1:5432/postgres); a
 * database is created for the run and dropped afterwards.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';
import { sql } from 'kysely';
import pg from 'pg';
import { monotonicFactory } from 'ulidx';
import type { TendEvent } from '../src/events/catalog.js';
import { buildServer } from '../src/server/app.js';
import { migrateToLatest, openDatabase, type ServerDatabase } from '../src/server/db/database.js';
import { TokenRepository } from '../src/server/db/repositories/tokens.js';
import { percentile } from './support.js';

const batchSize = 500;
const batches = Number(process.env.TEND_BENCH_BATCHES ?? 600);
/** Batches sent at the target rate (50,000 events/s on SQLite, 20,000 on PostgreSQL). */
const targetBatches = Number(process.env.TEND_BENCH_TARGET_BATCHES ?? 400);
const clients = 4;
const environmentsForList = 100_000;
const listRequests = 200;

const nextId = monotonicFactory();
const target = { kind: 'kubernetes' as const, clusterId: 'bench', server: 'https://k8s', context: 'bench' };

/** A batch as the CLI sends it: 10 sessions, each started, its namespace, 46 action updates, a heartbeat, the end. */
function makeBatch(b: number): TendEvent[] {
  const events: TendEvent[] = [];
  const timestamp = new Date().toISOString();
  for (let s = 0; s < 10; s++) {
    const sessionId = nextId();
    const user = `user${(b * 10 + s) % 500}`;
    const common = { project: 'bench', environment: 'dev', namespace: `bench-${user}` };
    const ev = (type: TendEvent['type'], payload: unknown) =>
      ({ id: nextId(), type, sessionId, timestamp, payload }) as TendEvent;
    events.push(
      ev('sessionStarted', {
        command: 'deploy',
        args: ['api'],
        ...common,
        user,
        hostId: 'bench-host',
        cliVersion: '0.1.0',
        cleanupPolicy: { afterInactivity: '8h', action: 'delete' },
      }),
    );
    events.push(
      ev('namespaceStatus', {
        pluginName: 'kubernetes',
        providerName: 'kubernetes',
        namespaceName: common.namespace,
        namespaceUid: `uid-${user}`,
        state: 'ready',
        role: 'app',
        cause: 'observed',
        target,
        project: 'bench',
        environment: 'dev',
      }),
    );
    for (let i = 0; i < 46; i++) {
      events.push(
        ev('actionStatus', {
          actionRef: `deploy.svc${i % 8}`,
          kind: 'Deploy',
          version: 'v-0123456789abcdef',
          state: i % 2 ? 'ready' : 'processing',
          ...(i % 2 ? { durationMs: 1234 } : {}),
        }),
      );
    }
    events.push(ev('sessionHeartbeat', { ...common, uptimeMs: 30_000 }));
    events.push(ev('sessionCompleted', { durationMs: 4321, succeeded: 8, cached: 0, failed: 0, aborted: 0 }));
  }
  return events;
}

const ms = (n: number) => `${n.toFixed(1)} ms`;

async function withServer<T>(
  database: ServerDatabase,
  work: (url: string, token: string) => Promise<T>,
): Promise<T> {
  await migrateToLatest(database);
  const { token } = await new TokenRepository(database.db).create({
    name: `bench-${nextId()}`,
    scope: 'admin',
  });
  const app = await buildServer({ db: database, logger: false, ownsDatabase: false });
  const url = await app.listen({ port: 0, host: '127.0.0.1' });
  try {
    return await work(url, token);
  } finally {
    await app.close();
  }
}

/**
 * The load: `clients` loops, each sending the next body and waiting for the answer; the latency
 * of each batch in ms and the seconds it all took. Plain JavaScript, so that it runs as it is in
 * a process of its own.
 */
const loadSource = `
async function load({ url, token, bodies, warmUp, clients, expected, batchesPerSecond }, mark) {
  // node:http (in scope as \`http\`) with keep-alive connections, as the CLI's stream sends
  // (src/stream/transport.ts).
  const agent = new http.Agent({ keepAlive: true, maxSockets: batchesPerSecond ? Infinity : clients });
  const target = new URL(url + '/api/v1/events');
  const send = (body) =>
    new Promise((resolve, reject) => {
      const started = performance.now();
      const request = http.request(
        target,
        {
          method: 'POST',
          agent,
          headers: {
            authorization: 'Bearer ' + token,
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(body),
          },
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8').on('data', (c) => (text += c)).on('end', () => {
            const answer = JSON.parse(text);
            if (res.statusCode !== 200 || answer.accepted !== expected) {
              reject(new Error('batch failed: ' + res.statusCode + ' ' + text.slice(0, 200)));
            } else resolve(performance.now() - started);
          });
        },
      );
      request.on('error', reject);
      request.end(body);
    });
  // Warm up (JIT, statement caches, and the connections the load needs, from here to the server
  // and from the server to its database) with batches not counted: in the open loop all at once,
  // as a fleet's CLIs keep their connections open; in the closed loop through the clients.
  let nextWarmUp = 0;
  if (batchesPerSecond) await Promise.all(warmUp.map(send));
  else
    await Promise.all(
      Array.from({ length: clients }, async () => {
        while (nextWarmUp < warmUp.length) await send(warmUp[nextWarmUp++]);
      }),
    );
  const latencies = [];
  let next = 0;
  mark('start');
  const started = performance.now();
  if (batchesPerSecond) {
    // Open loop: batch i is due at i / rate whether or not earlier ones were answered; its
    // latency counts from when it was due, so a server that falls behind shows it.
    await Promise.all(
      bodies.map(async (body, i) => {
        const due = started + (i * 1000) / batchesPerSecond;
        const wait = due - performance.now();
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
        await send(body);
        latencies.push(performance.now() - due);
      }),
    );
  } else {
    // Closed loop: each client sends its next batch when the last one is answered.
    await Promise.all(
      Array.from({ length: clients }, async () => {
        while (next < bodies.length) latencies.push(await send(bodies[next++]));
      }),
    );
  }
  const seconds = (performance.now() - started) / 1000;
  mark('end');
  return { latencies, seconds };
}
`;

interface LoadInput {
  url: string;
  token: string;
  bodies: string[];
  warmUp: string[];
  clients: number;
  expected: number;
  /** Open loop at this rate; otherwise `clients` closed loops. */
  batchesPerSecond?: number;
}
interface LoadResult {
  latencies: number[];
  seconds: number;
}

/**
 * Runs the load; `mark` is called when the timed part starts and ends (the server's CPU time is
 * taken between the two).
 */
async function runLoad(input: LoadInput, mark: (phase: 'start' | 'end') => void): Promise<LoadResult> {
  if (process.env.TEND_BENCH_CLIENT === 'inline') {
    const load = new Function('http', `${loadSource}; return load;`)(http) as (
      i: LoadInput,
      m: typeof mark,
    ) => Promise<LoadResult>;
    return load(input, mark);
  }
  // The input goes through a file: written through the child's stdin, its tens of MB would still
  // be in the pipe when the timing starts.
  const dir = mkdtempSync(join(tmpdir(), 'tend-bench-load-'));
  const inputFile = join(dir, 'input.json');
  writeFileSync(inputFile, JSON.stringify(input));
  const child = spawn(
    process.execPath,
    [
      '-e',
      `const http = require('node:http');
${loadSource}
const input = JSON.parse(require('node:fs').readFileSync(process.argv[1], 'utf8'));
load(input, (phase) => process.stdout.write(phase + '\\n')).then((result) =>
  process.stdout.write(JSON.stringify(result) + '\\n'),
);`,
      inputFile,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let result: LoadResult | undefined;
  const lines = createInterface({ input: child.stdout });
  lines.on('line', (line) => {
    if (line === 'start' || line === 'end') mark(line);
    else result = JSON.parse(line) as LoadResult;
  });
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  rmSync(dir, { recursive: true, force: true });
  if (code !== 0 || !result) throw new Error(`the load process failed (exit ${code})`);
  return result;
}

/** Saturation: `clients` closed loops as fast as the server answers. */
async function benchIngest(label: string, database: ServerDatabase, targetEventsPerSecond: number) {
  const bodies = (from: number, count: number) =>
    Array.from({ length: count }, (_, b) => JSON.stringify({ events: makeBatch(from + b) }));
  const warmUp = bodies(0, 16);
  const saturation = bodies(16, batches);
  const atTarget = bodies(16 + batches, targetBatches);
  const pacedWarmUp = bodies(16 + batches + targetBatches, 16);
  return withServer(database, async (url, token) => {
    let cpuAtStart = process.cpuUsage();
    let serverCpu = { user: 0, system: 0 };
    const markCpu = (phase: 'start' | 'end') => {
      if (phase === 'start') cpuAtStart = process.cpuUsage();
      else serverCpu = process.cpuUsage(cpuAtStart);
    };
    const load = { url, token, warmUp, clients, expected: batchSize };
    const full = await runLoad({ ...load, bodies: saturation }, markCpu);
    const events = batches * batchSize;
    const perSecond = events / full.seconds;
    const cpuSeconds = (serverCpu.user + serverCpu.system) / 1e6;
    full.latencies.sort((a, b) => a - b);
    console.log(
      `${label.padEnd(10)} ingest, ${clients} clients as fast as answered: ${events} events in ${batches} batches of ${batchSize}: ` +
        `${Math.round(perSecond).toLocaleString('en-US')} events/s; batch latency p50 ${ms(percentile(full.latencies, 50))}, p99 ${ms(percentile(full.latencies, 99))}; ` +
        `server process CPU ${(cpuSeconds / full.seconds).toFixed(2)} cores (${Math.round((100 * serverCpu.system) / 1e6 / cpuSeconds)}% system), ` +
        // On a shared machine the server may get less than a core: what one CPU-second ingests.
        `${Math.round(events / cpuSeconds).toLocaleString('en-US')} events per CPU-second`,
    );

    const batchesPerSecond = targetEventsPerSecond / batchSize;
    const paced = await runLoad(
      { ...load, warmUp: pacedWarmUp, bodies: atTarget, batchesPerSecond },
      () => {},
    );
    paced.latencies.sort((a, b) => a - b);
    console.log(
      `${label.padEnd(10)} ingest at the target rate, ${targetEventsPerSecond.toLocaleString('en-US')} events/s (${batchesPerSecond} batches of ${batchSize} a second, ${targetBatches} batches): ` +
        `batch latency p50 ${ms(percentile(paced.latencies, 50))}, p99 ${ms(percentile(paced.latencies, 99))}, max ${ms(paced.latencies.at(-1)!)}; ` +
        `achieved ${Math.round((targetBatches * batchSize) / paced.seconds).toLocaleString('en-US')} events/s`,
    );
    const p99AtTarget = percentile(paced.latencies, 99);
    const verdict = (met: boolean) => (met ? 'met' : 'NOT met');
    console.log(
      `${label.padEnd(10)} target ≥ ${targetEventsPerSecond.toLocaleString('en-US')} events/s (4 clients, batches of ${batchSize}): ` +
        `${verdict(perSecond >= targetEventsPerSecond)}; target p99 < 100 ms at ${targetEventsPerSecond.toLocaleString('en-US')} events/s: ${verdict(p99AtTarget < 100)}`,
    );
    return {
      eventsPerSecond: perSecond,
      p50: percentile(full.latencies, 50),
      p99: percentile(full.latencies, 99),
      atTarget: { p50: percentile(paced.latencies, 50), p99: p99AtTarget },
    };
  });
}

async function seedEnvironments(database: ServerDatabase, count: number): Promise<void> {
  const base = Date.parse('2025-01-01T00:00:00.000Z');
  const chunk = 2000;
  for (let i = 0; i < count; i += chunk) {
    const rows = Array.from({ length: Math.min(chunk, count - i) }, (_, j) => {
      const n = i + j;
      const at = new Date(base + n * 1000).toISOString();
      return {
        id: nextId(),
        project: `project${n % 50}`,
        name: n % 3 ? 'dev' : 'preview',
        namespace: `ns-${n}`,
        state: (n % 10 === 0 ? 'cleaned' : 'active') as 'active' | 'cleaned',
        owner: `user${n % 700}`,
        protected: 0,
        created_at: at,
        updated_at: at,
        last_activity_at: at,
        last_activity_type: 'sessionHeartbeat',
        last_activity_user: `user${n % 700}`,
        last_activity_command: 'deploy',
      };
    });
    await database.db.insertInto('environments').values(rows).execute();
  }
  if (database.dialect === 'postgres') await sql`analyze environments`.execute(database.db);
}

async function benchList(label: string, database: ServerDatabase) {
  await migrateToLatest(database);
  await seedEnvironments(database, environmentsForList);
  return withServer(database, async (url, token) => {
    const get = async (path: string) => {
      const started = performance.now();
      const res = await fetch(url + path, { headers: { authorization: `Bearer ${token}` } });
      const body = (await res.json()) as { items: unknown[]; nextCursor: string | null };
      if (res.status !== 200 || body.items.length !== 50) throw new Error(`list failed: ${res.status}`);
      return { ms: performance.now() - started, next: body.nextCursor };
    };
    const first = await get('/api/v1/environments?limit=50');
    const deepCursor = await (async () => {
      let cursor = first.next;
      for (let i = 0; i < 100 && cursor; i++)
        cursor = (await get(`/api/v1/environments?limit=50&cursor=${cursor}`)).next;
      return cursor;
    })();
    const cases: [string, string][] = [
      ['first page', '/api/v1/environments?limit=50'],
      ['page 101 (cursor)', `/api/v1/environments?limit=50&cursor=${deepCursor}`],
      ['project filter', '/api/v1/environments?limit=50&project=project7'],
      ['state=cleaned', '/api/v1/environments?limit=50&state=cleaned'],
      ['stale since 30d', '/api/v1/environments?limit=50&staleSince=30d'],
    ];
    const out: Record<string, { p50: number; p99: number }> = {};
    for (const [name, path] of cases) {
      const times: number[] = [];
      for (let i = 0; i < listRequests; i++) times.push((await get(path)).ms);
      times.sort((a, b) => a - b);
      out[name] = { p50: percentile(times, 50), p99: percentile(times, 99) };
      console.log(
        `${label.padEnd(10)} GET environments, 50 of ${environmentsForList.toLocaleString('en-US')}, ${name}: p50 ${ms(percentile(times, 50))}, p99 ${ms(percentile(times, 99))}`,
      );
    }
    return out;
  });
}

async function withSqlite<T>(work: (db: ServerDatabase) => Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), 'tend-bench-'));
  const database = await openDatabase({ sqliteFile: join(dir, 'tend.db') });
  try {
    return await work(database);
  } finally {
    await database.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function withPostgres<T>(work: (db: ServerDatabase) => Promise<T>): Promise<T | undefined> {
  const adminUrl =
    process.env.TEND_BENCH_DATABASE_URL ??
    process.env.TEND_TEST_DATABASE_URL ??
    'postgres://postgres:postgres@127.0.0.1:5432/postgres';
  const name = `tend_bench_${randomBytes(5).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  try {
    await admin.connect();
    await admin.query(`create database ${name}`);
  } catch (error) {
    console.log(
      `postgres   skipped: cannot create a database at ${adminUrl.replace(/:[^:@/]*@/, ':***@')}: ${(error as Error).message}`,
    );
    await admin.end().catch(() => undefined);
    return undefined;
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const database = await openDatabase({ databaseUrl: url.toString(), poolSize: 10 });
  try {
    return await work(database);
  } finally {
    await database.close();
    await admin.query(`drop database if exists ${name} with (force)`);
    await admin.end();
  }
}

export async function run(): Promise<void> {
  console.log(`# tend server: ingest and list (node ${process.version})`);
  const sqlite = process.env.TEND_BENCH_DATABASE !== 'postgres';
  const postgres = process.env.TEND_BENCH_DATABASE !== 'sqlite';
  if (sqlite) await withSqlite((db) => benchIngest('sqlite', db, 50_000));
  if (postgres) await withPostgres((db) => benchIngest('postgres', db, 20_000));
  if (process.env.TEND_BENCH_ONLY !== 'ingest') {
    if (sqlite) await withSqlite((db) => benchList('sqlite', db));
    if (postgres) await withPostgres((db) => benchList('postgres', db));
  }
  console.log(
    'targets: ingest 50,000 events/s (SQLite), 20,000 (PostgreSQL); batch p99 < 100 ms; page of 50 < 50 ms',
  );
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await run();
}
