/**
 * The event stream benchmark (issue 7), against the real server in the same process (SQLite):
 *
 * - end-to-end events/s: a plugin's `ctx.events.emit` → router → session bus → outbox → stream →
 *   `POST /api/v1/events` → rows in the server's database, timed until the last row is there;
 * - the overhead streaming adds to a 1,000-action no-op graph run: the same run with and without
 *   a server configured, alternated in the same process (target: under 5%);
 * - what a down server costs a command: `tend status` (the real CLI) with a server whose address
 *   refuses connections vs. without a server (target: at most 0.5 s more).
 *
 * `TEND_BENCH_ONLY=end-to-end` runs only the first part, `TEND_BENCH_ONLY=overhead` only the second.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Type } from 'typebox';
import { monotonicFactory } from 'ulidx';
import { executeCommand } from '../src/commands/execute.js';
import type { ActionStatusPayload } from '../src/events/catalog.js';
import { readSessionLog } from '../src/events/local-log.js';
import type { PluginDefinition, PluginPayload } from '../src/plugin/types.js';
import { migrateToLatest, openDatabase } from '../src/server/db/database.js';
import { openSqlite } from '../src/server/db/sqlite.js';
import { TokenRepository } from '../src/server/db/repositories/tokens.js';
import { spawn } from 'node:child_process';
import { pushOutbox } from '../src/stream/push.js';
import { listSegmentIds } from '../src/outbox/segments.js';
import { createNoopPlugin } from '../test/fixtures/noop-plugin.js';
import { figure, interquartileMean, median, ratio, tempProject } from './support.js';

/**
 * A plugin whose Build action emits `spec.count` events of `spec.type`: actionStatus (the bulk
 * of a real stream) or namespaceStatus with a new uid each (a re-created namespace every time,
 * the server's most expensive event; distinct uids also keep the bus from coalescing them).
 */
function emitterPlugin(): PluginDefinition {
  const status = async () => ({ state: 'not-ready' as const, outputs: {} });
  const build = async (
    ctx: Parameters<PluginDefinition['provider']['init']>[0],
    { action }: { action: { ref: string; version: string; spec: { count: number; type: string } } },
  ) => {
    const ns = {
      namespaceName: ctx.environment.namespace,
      state: 'ready',
      role: 'app',
      cause: 'observed',
      target: { kind: 'local', hostId: ctx.hostId, path: '/bench' },
      project: ctx.environment.project,
      environment: ctx.environment.name,
    } as const;
    for (let i = 0; i < action.spec.count; i++) {
      if (action.spec.type === 'namespaceStatus') {
        const payload: PluginPayload<'namespaceStatus'> = { ...ns, namespaceUid: `${action.ref}-${i}` };
        ctx.events.emit('namespaceStatus', payload);
      } else {
        const payload: ActionStatusPayload = {
          actionRef: action.ref,
          kind: 'Build',
          version: action.version,
          state: 'processing',
          durationMs: i,
        };
        ctx.events.emit('actionStatus', payload);
      }
    }
    return { outputs: {} };
  };
  return {
    name: 'emitter',
    description: 'emits events, nothing else',
    configSchema: Type.Object({}, { additionalProperties: false }),
    emits: ['namespaceStatus', 'actionStatus'],
    provider: {
      init: async () => undefined,
      getEnvironmentStatus: async () => ({ ready: true }),
      prepareEnvironment: async () => ({ ready: true }),
      cleanupEnvironment: async () => ({ deleted: false, message: 'nothing to do' }),
    },
    actionTypes: [
      {
        name: 'emit',
        description: 'emits spec.count events of spec.type',
        kinds: {
          Build: {
            specSchema: Type.Object(
              { count: Type.Number(), type: Type.String() },
              { additionalProperties: false },
            ),
            handlers: { getStatus: status, build } as never,
          },
        },
      },
    ],
  };
}

const projectHead = (provider: string, server?: string) =>
  `kind: Project\nname: bench-stream\ndefaultEnvironment: dev\n` +
  `environments: [{ name: dev, defaultNamespace: bench-stream-dev }]\nproviders: [{ name: ${provider} }]\n` +
  (server ? `server: ${server}\n` : '');

function noopGraph(actions: number, server?: string): Record<string, string> {
  const docs = [projectHead('noop', server)];
  for (let i = 0; i < actions; i++) {
    const dep = i >= 10 ? `dependencies: [build.a${i - 1 - (i % 10)}]\n` : '';
    docs.push(`kind: Build\ntype: noop\nname: a${i}\n${dep}spec: {}\n`);
  }
  return { 'tend.yml': docs.join('---\n') };
}

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** `tend server` on a free port (the built CLI: `npm run bench` builds first). */
async function spawnServer(dataDir: string): Promise<{ url: string; close(): Promise<void> }> {
  const child = spawn(
    process.execPath,
    [path.join(repoRoot, 'bin', 'tend.js'), 'server', '--port', '0', '--data-dir', dataDir],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let log = '';
  const url = await new Promise<string>((resolve, reject) => {
    child.stderr!.on('data', (d: Buffer) => {
      log += d.toString();
      const match = /listening on (http:\/\/[^\s"]+)/.exec(log);
      if (match) resolve(match[1]!);
    });
    child.once('exit', () => reject(new Error(`tend server exited: ${log}`)));
  });
  return {
    url,
    close: () =>
      new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

/** Events/s of `pushOutbox` against an HTTP server that answers every batch at once. */
async function clientAlone(events: number): Promise<number> {
  const ids = monotonicFactory();
  const sink = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => res.end('{"accepted":0,"duplicates":0}'));
  });
  await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve));
  const { port } = sink.address() as AddressInfo;
  const project = tempProject({});
  try {
    const outbox = path.join(project.root, 'outbox');
    mkdirSync(outbox);
    const run = async () => {
      const sessionId = ids();
      const lines: string[] = [];
      for (let i = 0; i < events; i++) {
        const payload = {
          actionRef: `build.a${i}`,
          kind: 'Build',
          version: 'v-0123456789ab',
          state: 'ready',
        };
        lines.push(
          JSON.stringify({
            id: ids(),
            type: 'actionStatus',
            sessionId,
            timestamp: new Date().toISOString(),
            payload,
          }),
        );
      }
      writeFileSync(path.join(outbox, `${sessionId}.jsonl`), lines.join('\n') + '\n');
      const start = performance.now();
      await pushOutbox({
        outboxDir: outbox,
        connection: { url: `http://127.0.0.1:${port}` },
        timeoutMs: 60_000,
      });
      return (events / (performance.now() - start)) * 1000;
    };
    await run(); // warm-up
    return median([await run(), await run(), await run()]);
  } finally {
    project.remove();
    sink.close();
  }
}

/** Milliseconds of one `tend status` of the built CLI in `root`, with the given environment. */
function timeStatus(root: string, env: NodeJS.ProcessEnv): Promise<number> {
  const start = performance.now();
  const child = spawn(process.execPath, [path.join(repoRoot, 'bin', 'tend.js'), 'status'], {
    cwd: root,
    env,
    stdio: 'ignore',
  });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) =>
      code === 0 ? resolve(performance.now() - start) : reject(new Error(`tend status exited ${code}`)),
    );
  });
}

/** `tend status` with a server that refuses connections vs. without a server, alternated (ABBA). */
async function refusedServerCost(base: NodeJS.ProcessEnv): Promise<void> {
  const project = tempProject({
    'tend.yml':
      `kind: Project\nname: bench-refused\ndefaultEnvironment: dev\n` +
      `environments: [{ name: dev, defaultNamespace: bench-refused-dev }]\nproviders: [{ name: exec }]\n---\n` +
      `kind: Build\ntype: exec\nname: b\nspec: { command: ["true"] }\n`,
  });
  // A port that was free a moment ago: nothing listens there, connections are refused.
  const closed = http.createServer();
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
  const { port } = closed.address() as AddressInfo;
  await new Promise<void>((resolve) => closed.close(() => resolve()));
  const noServer = { ...base, TEND_SERVER_URL: '', TEND_TOKEN: '' };
  const refused = { ...base, TEND_SERVER_URL: `http://127.0.0.1:${port}`, TEND_TOKEN: 'tend_bench' };
  try {
    await timeStatus(project.root, noServer); // warm-up
    await timeStatus(project.root, refused);
    const plain: number[] = [];
    const down: number[] = [];
    for (let i = 0; i < 6; i++) {
      if (i % 2 === 0) {
        plain.push(await timeStatus(project.root, noServer));
        down.push(await timeStatus(project.root, refused));
      } else {
        down.push(await timeStatus(project.root, refused));
        plain.push(await timeStatus(project.root, noServer));
      }
    }
    const [a, b] = [median(plain), median(down)];
    figure('tend status, no server (median of 6)', a, 'ms');
    figure('tend status, server refusing connections (median of 6)', b, 'ms');
    figure('what a down server costs tend status', b - a, 'ms', { max: 500 });
    ratio('tend status with a down server vs. without a server', b, a, 'no server');
  } finally {
    project.remove();
  }
}

export async function run(): Promise<void> {
  console.log('stream: events/s from ctx.events.emit to rows in the server; overhead on a 1,000-action run');
  const savedEnv = { ...process.env };
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tend-bench-stream-'));
  // No stored login, no server from the environment: only the projects' `server:` counts.
  process.env.TEND_CONFIG_DIR = path.join(dir, 'config');
  delete process.env.TEND_SERVER_URL;
  const dbFile = path.join(dir, 'tend.db');
  const db = await openDatabase({ sqliteFile: dbFile });
  await migrateToLatest(db);
  process.env.TEND_TOKEN = (
    await new TokenRepository(db.db).create({ name: 'bench', scope: 'ingest' })
  ).token;
  await db.close();
  // The server in a process of its own: its work must not count as the command's.
  const server = await spawnServer(dir);
  const rows = openSqlite(dbFile, { readOnly: true });
  const countRows = rows.prepare('select count(*) as n from events where session_id = ?');

  const write = process.stderr.write.bind(process.stderr);
  let waitedLines = 0;
  const quiet = () =>
    (process.stderr.write = ((chunk: string | Uint8Array) => {
      if (String(chunk).includes('wait in')) waitedLines++;
      return true;
    }) as typeof process.stderr.write);
  const loud = () => (process.stderr.write = write);

  /** Runs the command, then (if the exit wait was not enough) tend events push; returns ms to the last row. */
  const endToEnd = async (type: string, actions: number, perAction: number) => {
    const project = tempProject({
      'tend.yml': [
        projectHead('emitter', server.url),
        ...Array.from(
          { length: actions },
          (_, i) => `kind: Build\ntype: emit\nname: e${i}\nspec: { count: ${perAction}, type: ${type} }\n`,
        ),
      ].join('---\n'),
    });
    quiet();
    const start = performance.now();
    const result = await executeCommand('build', [], { root: project.root, concurrency: 8 }, [
      emitterPlugin(),
    ]);
    // A run that failed (a plugin contract change, say) would measure nothing: say so.
    if (result.exitCode !== 0) throw new Error(`the ${type} run failed: ${result.human}`);
    const outbox = path.join(project.root, '.tend', 'outbox');
    const pushed = listSegmentIds(outbox).length > 0;
    if (pushed) {
      // More than the 5 s exit wait could send: the rest goes the way a user would send it.
      const connection = { url: server.url, token: process.env.TEND_TOKEN };
      await pushOutbox({ outboxDir: outbox, connection, timeoutMs: 600_000 });
    }
    const ms = performance.now() - start;
    loud();
    const stored = (countRows.get(result.data.sessionId) as { n: number }).n;
    project.remove();
    return { ms, stored, pushed };
  };

  const only = process.env.TEND_BENCH_ONLY;
  try {
    if (only !== 'overhead') await endToEndFigures();
    if (only !== 'end-to-end') await overhead();
    if (only === undefined) await refusedServerCost(process.env);
  } finally {
    loud();
    rows.close();
    await server.close();
    process.env = savedEnv;
    rmSync(dir, { recursive: true, force: true });
  }

  async function endToEndFigures() {
    await endToEnd('actionStatus', 1, 1_000); // warm-up
    const bulk = await endToEnd('actionStatus', 10, 5_000);
    figure('actionStatus events emitted by the plugin (10 actions × 5,000)', 50_000, 'events');
    figure('  of them stored by the server (+ the session and action events)', bulk.stored, 'events');
    figure(
      `end to end: ctx.events.emit → rows in the server${bulk.pushed ? ' (rest by events push)' : ''}`,
      (50_000 / bulk.ms) * 1000,
      'events/s',
    );
    const ns = await endToEnd('namespaceStatus', 5, 1_000);
    figure('  of 5,000 namespaceStatus, stored (+ the session and action events)', ns.stored, 'events');
    figure(
      `end to end, 5,000 namespaceStatus with new uids (server-bound)${ns.pushed ? ' (rest by events push)' : ''}`,
      (5_000 / ns.ms) * 1000,
      'events/s',
      { min: 10_000 },
    );
    // The stream client alone: the same delivery to a server that answers at once.
    const client = await clientAlone(50_000);
    figure('the stream client alone (server answering at once)', client, 'events/s');
  }

  async function overhead() {
    // Overhead on a 1,000-action no-op run: without and with a server, alternated.
    const without = tempProject(noopGraph(1_000));
    const withServer = tempProject(noopGraph(1_000, server.url));
    const noop = createNoopPlugin();
    const once = async (root: string) => {
      const t = performance.now();
      const cpuAtStart = process.cpuUsage();
      const result = await executeCommand('build', [], { root, concurrency: 8, force: true }, [noop.plugin]);
      const total = performance.now() - t;
      const used = process.cpuUsage(cpuAtStart);
      const cpu = (used.user + used.system) / 1000;
      // The session's own duration: from its start to its end, before the exit wait.
      const log = readSessionLog(path.join(root, '.tend', 'events', `${result.data.sessionId}.jsonl`));
      const completed = log.events.find((e) => e.type === 'sessionCompleted');
      return { total, cpu, work: (completed?.payload as { durationMs: number }).durationMs };
    };
    quiet();
    await once(without.root);
    await once(withServer.root);
    const plain: { total: number; cpu: number; work: number }[] = [];
    const streamed: { total: number; cpu: number; work: number }[] = [];
    // Alternated, the order flipped each time (ABBA), so drift of the machine cancels out.
    for (let i = 0; i < 16; i++) {
      if (i % 2 === 0) {
        plain.push(await once(without.root));
        streamed.push(await once(withServer.root));
      } else {
        streamed.push(await once(withServer.root));
        plain.push(await once(without.root));
      }
    }
    loud();
    // The session's duration is whole milliseconds (about 35 for this run): a median of them moves
    // in steps of 3 %; the interquartile mean does not.
    const work = [
      interquartileMean(plain.map((r) => r.work)),
      interquartileMean(streamed.map((r) => r.work)),
    ] as const;
    const total = [median(plain.map((r) => r.total)), median(streamed.map((r) => r.total))] as const;
    figure('1,000 no-op actions, the run, no server (interquartile mean of 16)', work[0], 'ms');
    figure('1,000 no-op actions, the run, streaming (interquartile mean of 16)', work[1], 'ms');
    figure('overhead of streaming on the run', ((work[1] - work[0]) / work[0]) * 100, '%', { max: 5 });
    ratio('the run streaming vs. the same run without a server', work[1], work[0], 'no server');
    figure('1,000 no-op actions, whole command, no server', total[0], 'ms');
    figure('1,000 no-op actions, whole command incl. exit wait, streaming', total[1], 'ms');
    ratio(
      'whole command streaming vs not (the exit wait sends the last events)',
      total[1],
      total[0],
      'no server',
    );
    // The process's CPU time for the whole command: what streaming costs whatever else runs on
    // the machine (the durations above stretch when other processes take the cores).
    const cpu = [median(plain.map((r) => r.cpu)), median(streamed.map((r) => r.cpu))] as const;
    figure('1,000 no-op actions, CPU of the whole command, no server', cpu[0], 'ms');
    figure('1,000 no-op actions, CPU of the whole command, streaming', cpu[1], 'ms');
    ratio('CPU of the command streaming vs not', cpu[1], cpu[0], 'no server');
    if (waitedLines > 0) console.log(`  (${waitedLines} run(s) ended with events waiting in the outbox)`);
    without.remove();
    withServer.remove();
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) await run();
