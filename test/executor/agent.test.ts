/**
 * `tend agent` as a real process (bin/tend.js, built) against the server over HTTP and kube-sim:
 * one pass with --once --json; its token from a file, TEND_TOKEN or `tend login`; usage errors; an agent SIGKILLed in the middle of a DELETE, whose
 * job another agent finishes once the lease expired (one `done`); the HTTP queue through 429
 * storms and resets in front of the server (nothing lost).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { HttpCleanupQueue } from '../../src/executor/http-queue.js';
import { CleanupExecutor } from '../../src/executor/executor.js';
import { repoRoot, runTend, tendBin, waitFor } from '../helpers/project.js';
import { startSim, type SimHandle } from '../plugins/kubernetes/helpers.js';
import { createTestServer, type TestServer } from '../server/helpers.js';
import { FaultProxy } from '../stream/fault-proxy.js';
import { dueEnvironments, servedClusters, testProtection, exists, testClock } from '../cleanup/helpers.js';

let handle: SimHandle;
let server: TestServer;
let url: string;
let clock: ReturnType<typeof testClock>;
const children: ChildProcess[] = [];
const scratch = mkdtempSync(path.join(tmpdir(), 'tend-agent-'));
/** The agent token of the current server, in a file (as a mounted Secret holds it). */
const tokenFile = path.join(scratch, 'agent-token');
/** An empty configuration directory: no `tend login` of the machine's user is read. */
const noLogin = { TEND_CONFIG_DIR: path.join(scratch, 'no-login'), TEND_SERVER_URL: '', TEND_TOKEN: '' };

beforeAll(async () => {
  handle = await startSim({ namespaceDeleteDelayMs: 20 });
  delete process.env.KUBECONFIG;
});
afterAll(async () => {
  await handle.stop();
  rmSync(scratch, { recursive: true, force: true });
});

beforeEach(async () => {
  clock = testClock();
  server = await createTestServer('sqlite', {
    now: clock.now,
    cleanup: { maxPerPass: 1000, intervalMs: 1000 },
  });
  url = await server.app.listen({ port: 0, host: '127.0.0.1' });
  writeFileSync(tokenFile, `${server.tokens.agent}\n`, { mode: 0o600 });
  handle.sim.faults.clear();
});
afterEach(async () => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
  await server.close();
});

const due = (n: number) =>
  dueEnvironments({ sim: handle.sim, server, clock, cleanup: server.app.cleanup.switches }, n, 'a');

function agentArgs(...extra: string[]) {
  return ['agent', '--server', url, '--token-file', tokenFile, '--kubeconfig', handle.kubeconfig, ...extra];
}

async function auditOf(action: string) {
  return server.database.db.selectFrom('audit_log').selectAll().where('action', '=', action).execute();
}

describe('tend agent', () => {
  it('runs a pass with --once --json: heartbeat, inventory, the due jobs done', async () => {
    const namespaces = await due(2);
    // The first pass makes the target known and listed; the planner then plans; the second acts.
    const first = await runTend(agentArgs('--once', '--json'));
    expect(first.code, first.stderr).toBe(0);
    const report = JSON.parse(first.stdout) as { last: { inventories: { complete: boolean }[] } };
    expect(report.last.inventories).toEqual([expect.objectContaining({ complete: true })]);
    expect((await server.app.cleanup.pass.run())?.planned).toBe(2);
    const second = await runTend(agentArgs('--once', '--json'));
    expect(second.code, second.stderr).toBe(0);
    const jobs = (JSON.parse(second.stdout) as { last: { jobs: { outcome: string }[] } }).last.jobs;
    expect(jobs.map((j) => j.outcome)).toEqual(['done', 'done']);
    for (const ns of namespaces) expect(exists(handle.sim, ns.name)).toBe(false);
    expect(await auditOf('cleanup-done')).toHaveLength(2);
  });

  it('with --dry-run runs every check and deletes nothing', async () => {
    const [ns] = await due(1);
    expect((await runTend(agentArgs('--once'))).code).toBe(0);
    expect((await server.app.cleanup.pass.run())?.planned).toBe(1);
    const run = await runTend(agentArgs('--once', '--json', '--dry-run'));
    expect(run.code, run.stderr).toBe(0);
    const jobs = (JSON.parse(run.stdout) as { last: { jobs: { outcome: string; message: string }[] } }).last
      .jobs;
    expect(jobs).toEqual([
      expect.objectContaining({
        outcome: 'cancelled',
        message: expect.stringMatching(/dry run.*passed every check/),
      }),
    ]);
    expect(exists(handle.sim, ns!.name)).toBe(true);
    expect(await auditOf('cleanup-done')).toHaveLength(0);
  });

  it('takes its server and token from TEND_SERVER_URL and TEND_TOKEN, or from tend login', async () => {
    const fromEnvironment = await runTend(['agent', '--kubeconfig', handle.kubeconfig, '--once', '--json'], {
      env: { ...noLogin, TEND_SERVER_URL: url, TEND_TOKEN: server.tokens.agent },
    });
    expect(fromEnvironment.code, fromEnvironment.stderr).toBe(0);
    const loginDir = path.join(scratch, 'login');
    mkdirSync(loginDir, { recursive: true });
    writeFileSync(
      path.join(loginDir, 'credentials.json'),
      JSON.stringify({ server: url, token: server.tokens.agent, savedAt: new Date().toISOString() }),
      { mode: 0o600 },
    );
    const fromLogin = await runTend(['agent', '--kubeconfig', handle.kubeconfig, '--once', '--json'], {
      env: { ...noLogin, TEND_CONFIG_DIR: loginDir },
    });
    expect(fromLogin.code, fromLogin.stderr).toBe(0);
    const executors = await server.database.db.selectFrom('cleanup_executors').select('id').execute();
    expect(executors).toHaveLength(2);
  });

  it.each([
    [['agent', '--kubeconfig', '/nonexistent'], /needs a server and an agent-scope token/],
    [['agent', '--server', 'http://127.0.0.1:1'], /needs a server and an agent-scope token/],
    [['agent', '--server', 'http://127.0.0.1:1', '--token-file', '/nonexistent/token'], /cannot read/],
    [
      ['agent', '--server', 'http://127.0.0.1:1', '--token-file', 'EMPTY'],
      /must hold one token \(it is empty\)/,
    ],
    [['agent', '--server', 'http://127.0.0.1:1', '--token-file', 'WORDS'], /must hold one token/],
    [['agent', '--server', 'http://127.0.0.1:1', '--token-file', 'DIR'], /not a regular file/],
    [['agent', '--server', 'http://127.0.0.1:1', '--token-file', 'HUGE'], /not a token/],
    [['agent', '--server', 'http://127.0.0.1:1', '--token-file', 'EMPTY', '--token', 't'], /not both/],
    [
      ['agent', '--server', 'http://127.0.0.1:1', '--token', 't', '--interval', 'soon'],
      /--interval expects a duration/,
    ],
    [['agent', '--server', 'not a url', '--token', 't', '--once'], /is not a URL/],
  ])('refuses bad usage clearly: %j', async (args, message) => {
    const files: Record<string, string> = {
      EMPTY: ' \n',
      WORDS: 'tend_abc tend_def\n',
      HUGE: 'x'.repeat(5000),
    };
    for (const [name, content] of Object.entries(files)) writeFileSync(path.join(scratch, name), content);
    mkdirSync(path.join(scratch, 'DIR'), { recursive: true });
    const resolved = args.map((a) => (/^[A-Z]+$/.test(a) ? path.join(scratch, a) : a));
    const run = await runTend(resolved, { env: noLogin });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(message);
  });

  it('is refused with a token of another scope', async () => {
    const run = await runTend([
      'agent',
      '--server',
      url,
      '--token',
      server.tokens.read,
      '--kubeconfig',
      handle.kubeconfig,
      '--once',
    ]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/heartbeat/);
  });

  it('a job of an agent SIGKILLed mid-DELETE is finished by another after the lease, once', async () => {
    const [ns] = await due(1);
    expect((await runTend(agentArgs('--once'))).code).toBe(0);
    expect((await server.app.cleanup.pass.run())?.planned).toBe(1);
    // The DELETE hangs: the agent is killed while the job is executing.
    const hang = handle.sim.faults.add({
      type: 'latency',
      ms: 60_000,
      verb: 'delete',
      resource: 'namespaces',
    });
    const agent = spawn(process.execPath, [tendBin, ...agentArgs('--interval', '1s')], {
      cwd: repoRoot,
      stdio: 'ignore',
    });
    children.push(agent);
    await waitFor(() => handle.sim.faults.fired(hang) > 0, "the agent's DELETE", 30_000);
    agent.kill('SIGKILL');
    await new Promise((r) => agent.once('exit', r));
    handle.sim.faults.remove(hang);
    const [job] = await server.database.db.selectFrom('cleanup_jobs').selectAll().execute();
    expect(job!.state).toBe('executing');
    expect(exists(handle.sim, ns!.name)).toBe(true);

    // Another agent cannot take it while the lease holds…
    const early = await runTend(agentArgs('--once', '--json'));
    expect((JSON.parse(early.stdout) as { last: { jobs: unknown[] } }).last.jobs).toEqual([]);
    // …and finishes it once the lease expired.
    clock.advance(30 * 60_000);
    const late = await runTend(agentArgs('--once', '--json'));
    expect(late.code, late.stderr).toBe(0);
    expect((JSON.parse(late.stdout) as { last: { jobs: { outcome: string }[] } }).last.jobs).toEqual([
      expect.objectContaining({ outcome: 'done' }),
    ]);
    expect(exists(handle.sim, ns!.name)).toBe(false);
    expect(await auditOf('cleanup-done')).toHaveLength(1);
  });

  it('stops gracefully on SIGTERM after its pass', async () => {
    const agent = spawn(process.execPath, [tendBin, ...agentArgs('--interval', '1s')], {
      cwd: repoRoot,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    children.push(agent);
    let stderr = '';
    agent.stderr!.on('data', (d) => (stderr += d));
    await waitFor(() => /pass 1:/.test(stderr), 'the first pass', 30_000);
    agent.kill('SIGTERM');
    const code = await new Promise((r) => agent.once('exit', r));
    expect(code).toBe(0);
    expect(stderr).toMatch(/stopping: finishing the jobs in flight/);
    expect(stderr).toMatch(/tend agent stopped/);
  });

  it('says which interval is in force: --interval until the server answers, then the server’s; targets by context', async () => {
    // The server runs a pass every 1 s (its --cleanup-interval): its answer paces the agent.
    const agent = spawn(process.execPath, [tendBin, ...agentArgs('--interval', '5s')], {
      cwd: repoRoot,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    children.push(agent);
    let stderr = '';
    agent.stderr!.on('data', (d) => (stderr += d));
    await waitFor(() => /pass 2:/.test(stderr), 'a second pass, 1 s after the first', 30_000);
    agent.kill('SIGTERM');
    expect(await new Promise((r) => agent.once('exit', r))).toBe(0);
    expect(stderr).toMatch(
      /started: http:\/\/127\.0\.0\.1:\d+, a pass every 5 s \(--interval\) until the server answers with its own interval/,
    );
    expect(stderr).toContain(
      'a pass every 1 s, as the server asks (its --cleanup-interval; --interval 5s only paces the passes until the server answers)',
    );
    // Said once, when it changed; not at every pass.
    expect(stderr.match(/as the server asks/g)).toHaveLength(1);
    expect(stderr).not.toMatch(/a pass every 5 s(?! \(--interval\))/);
    // The cluster by its kubeconfig context, its key (kube-system's uid) after it.
    expect(stderr).toMatch(
      /^pass 1: context \S+ \(https?:\/\/127\.0\.0\.1:\d+\) \[kubernetes\/[^\]]+\]: \d+ namespaces; /m,
    );
  });

  it('the HTTP queue gets through 429 storms and lost answers: every job done once', async () => {
    const namespaces = await due(6);
    const proxy = await FaultProxy.start(url);
    try {
      // Every third request refused with 429 (Retry-After 0), every seventh reset; and the first
      // job started is refused more often than the queue retries (it fails in the first pass and
      // its lease must return it).
      let refusedJob: string | undefined;
      let refusals = 0;
      proxy.plan = (i, record) =>
        record.path.endsWith('/start') && (refusedJob ??= record.path) === record.path && refusals++ < 7
          ? { kind: 'status', status: 429, retryAfter: '0' }
          : i % 3 === 1
            ? { kind: 'status', status: 429, retryAfter: '0' }
            : i % 7 === 5
              ? { kind: 'reset' }
              : { kind: 'pass' };
      const executor = new CleanupExecutor({
        queue: new HttpCleanupQueue({ server: proxy.url, token: server.tokens.agent, baseDelayMs: 5 }),
        plugins: servedClusters(handle.kubeconfig),
        protection: testProtection,
        kind: 'agent',
        name: 'storm',
        version: 'test',
      });
      await executor.runPass();
      await server.app.cleanup.pass.run();
      for (let pass = 0; pass < 10 && namespaces.some((ns) => exists(handle.sim, ns.name)); pass++) {
        // Past every lease and backoff; then a pass whose inventory is fresh when the server plans.
        clock.advance(10 * 60_000);
        await executor.runPass();
        await server.app.cleanup.pass.run();
      }
      expect(proxy.records.filter((r) => r.status === 429).length).toBeGreaterThan(3);
      // The refused job's start failed in the first pass (seven answers of 429), and yet it was done.
      expect(
        proxy.records.filter((r) => r.path === refusedJob && r.status === 429).length,
      ).toBeGreaterThanOrEqual(7);
      for (const ns of namespaces) expect(exists(handle.sim, ns.name)).toBe(false);
      const done = await auditOf('cleanup-done');
      expect(done).toHaveLength(6);
    } finally {
      await proxy.close();
    }
  });
});
