/**
 * Cleanup across real processes: two `tend server` processes on one PostgreSQL database and two
 * `tend agent` processes for one cluster clean 200 due environments — each namespace deleted
 * exactly once, one `done` per job in the audit; and a server killed in the middle of a job, whose
 * job is neither stuck nor done twice after the restart.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CleanupExecutor } from '../../src/executor/executor.js';
import { buildServer } from '../../src/server/app.js';
import { migrateToLatest } from '../../src/server/db/database.js';
import { TokenRepository } from '../../src/server/db/repositories/tokens.js';
import { repoRoot, tendBin, waitFor } from '../helpers/project.js';
import { startSim, type SimHandle } from '../plugins/kubernetes/helpers.js';
import { createTestDatabase, type TestDatabase } from '../server/helpers.js';
import {
  countNamespaceDeletes,
  servedClusters,
  testProtection,
  exists,
  recordingEvents,
  seedNamespace,
  testClock,
} from '../cleanup/helpers.js';

let handle: SimHandle;
const children: ChildProcess[] = [];
const databases: TestDatabase[] = [];

beforeAll(async () => {
  handle = await startSim({ namespaceDeleteDelayMs: 20 });
  delete process.env.KUBECONFIG;
});
afterAll(() => handle.stop());
afterEach(async () => {
  for (const child of children.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await new Promise((r) => child.once('exit', r));
    }
  }
  for (const db of databases.splice(0)) await db.drop();
});

function spawnTend(args: string[]) {
  const child = spawn(process.execPath, [tendBin, ...args], {
    cwd: repoRoot,
    env: { ...process.env, CI: 'true' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let stderr = '';
  child.stderr!.on('data', (d) => (stderr += d));
  child.stdout!.resume();
  return { child, stderr: () => stderr };
}

/** The last lines of a process's log that are not routine (`routine` matches those), joined. */
function unusualLines(log: string, routine: RegExp): string {
  const lines = log.split('\n').filter((line) => line.trim() !== '' && !routine.test(line));
  return lines.slice(-8).join(' / ').slice(-1500);
}

/** A `tend server` process; resolves with its URL once it listens. */
async function serverProcess(args: string[]) {
  const server = spawnTend(['server', '--port', '0', '--cleanup-interval', '1s', ...args]);
  const url = await waitFor(
    () => /"url":"(http:\/\/[^"]+)"/.exec(server.stderr())?.[1],
    `the server to listen (${server.stderr().slice(-500)})`,
    30_000,
  );
  return { ...server, url };
}

async function tokens(db: TestDatabase) {
  const database = await db.open();
  try {
    await migrateToLatest(database);
    const repo = new TokenRepository(database.db);
    return {
      ingest: (await repo.create({ name: 'ci', scope: 'ingest' })).token,
      admin: (await repo.create({ name: 'ops', scope: 'admin' })).token,
      agent: (await repo.create({ name: 'agent', scope: 'agent' })).token,
    };
  } finally {
    await database.close();
  }
}

async function post(url: string, path: string, token: string, body: unknown) {
  const res = await fetch(url + path, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  expect(res.status, await res.clone().text()).toBeLessThan(300);
  return res.json();
}

describe('cleanup across processes', () => {
  it('two servers on one PostgreSQL and two agents: 200 namespaces, each deleted once, one done per job', async () => {
    const db = await createTestDatabase('postgres');
    databases.push(db);
    const t = await tokens(db);
    const common = ['--database-url', db.url!, '--cleanup-max-per-pass', '1000'];
    const s1 = await serverProcess(common);
    const s2 = await serverProcess(common);

    const namespaces = Array.from({ length: 200 }, (_, i) =>
      seedNamespace(handle.sim, `two-${i}-dev`, { project: `two-${i}` }),
    );
    // Recorded through either server; each environment of a project of its own (no breaker).
    for (const [i, ns] of namespaces.entries()) {
      const url = i % 2 === 0 ? s1.url : s2.url;
      await post(url, '/api/v1/events', t.ingest, {
        events: recordingEvents(handle.sim, [ns], { project: `two-${i}`, policy: '0m' }),
      });
      await post(url, '/api/v1/cleanup/enforce', t.admin, { project: `two-${i}` });
    }
    const deletes = countNamespaceDeletes(handle.sim);
    const agents = [s1.url, s2.url].map((url) =>
      spawnTend([
        'agent',
        '--server',
        url,
        '--token',
        t.agent,
        '--kubeconfig',
        handle.kubeconfig,
        '--interval',
        '1s',
      ]),
    );
    const database = await db.open();
    try {
      // What the jobs are, said on a timeout: how many in each state, and why the last ones ended.
      let seen = '';
      const doneJobs = async () => {
        const jobs = await database.db
          .selectFrom('cleanup_jobs')
          .select(['state', 'outcome_message', 'attempts', 'not_before', 'lease_owner', 'lease_expires_at'])
          .execute();
        const states = new Map<string, number>();
        for (const j of jobs) states.set(j.state, (states.get(j.state) ?? 0) + 1);
        // Why jobs ended other than done, counted; those that began (attempts > 0) in full.
        const reasons = new Map<string, number>();
        for (const j of jobs.filter((j) => j.state !== 'done')) {
          const reason = `${j.state}: ${String(j.outcome_message)
            .split(' — ')[0]!
            .replace(/two-\d+-dev/g, 'two-N-dev')}`;
          reasons.set(reason, (reasons.get(reason) ?? 0) + 1);
        }
        const begun = jobs.filter((j) => j.state !== 'done' && j.attempts > 0).slice(-10);
        const agentLogs = agents.map((a) => unusualLines(a.stderr(), / no jobs$/)).join(' | ');
        const serverLogs = [s1, s2].map((s) => unusualLines(s.stderr(), /"level":(10|20|30),/)).join(' | ');
        // The jobs' states last: a CI log shows a long message's end.
        seen = [
          `agents: ${agentLogs}`,
          `servers: ${serverLogs}`,
          `begun, not done: ${JSON.stringify(begun)}`,
          `not done: ${JSON.stringify([...reasons])}`,
          `states: ${JSON.stringify([...states])}`,
        ].join('; ');
        return jobs.filter((j) => j.state === 'done').length;
      };
      await waitFor(
        async () => (await doneJobs()) >= 200,
        () => `every job done (${seen})`,
        180_000,
      );
      // A pass that read its snapshot before a job completed may plan a second job for the same
      // environment; its re-checks must end it without a second DELETE. Wait until nothing is open.
      const openJobs = async () =>
        (await database.db.selectFrom('cleanup_jobs').select(['state']).execute()).filter(
          (j) => j.state === 'planned' || j.state === 'executing',
        ).length;
      await waitFor(async () => (await openJobs()) === 0, 'no job left open', 120_000);
      for (const ns of namespaces) expect(exists(handle.sim, ns.name)).toBe(false);
      expect(deletes()).toBe(200);
      const done = await database.db
        .selectFrom('audit_log')
        .select('detail')
        .where('action', '=', 'cleanup-done')
        .execute();
      const jobIds = done.map((r) => (JSON.parse(r.detail!) as { jobId: string }).jobId);
      expect(new Set(jobIds).size).toBe(jobIds.length);
      expect(jobIds.length).toBeGreaterThanOrEqual(200);
      const jobs = await database.db.selectFrom('cleanup_jobs').select(['state']).execute();
      expect(jobs.filter((j) => j.state === 'done')).toHaveLength(jobIds.length);
    } finally {
      await database.close();
    }
  }, 240_000);

  it('a server killed in the middle of a job: after the restart nothing is stuck or done twice', async () => {
    const db = await createTestDatabase('sqlite');
    databases.push(db);
    const t = await tokens(db);
    const ns = seedNamespace(handle.sim, 'killed-dev', { project: 'killed' });
    const hang = handle.sim.faults.add({
      type: 'latency',
      ms: 60_000,
      verb: 'delete',
      resource: 'namespaces',
    });
    const server = await serverProcess(['--data-dir', db.dir!, '--kubeconfig', handle.kubeconfig]);
    await post(server.url, '/api/v1/events', t.ingest, {
      events: recordingEvents(handle.sim, [ns], { project: 'killed', policy: '0m' }),
    });
    await post(server.url, '/api/v1/cleanup/enforce', t.admin, { project: 'killed' });
    // The embedded executor plans, claims, starts and hangs in the DELETE: kill the server there.
    await waitFor(() => handle.sim.faults.fired(hang) > 0, 'the embedded executor’s DELETE', 60_000);
    server.child.kill('SIGKILL');
    await new Promise((r) => server.child.once('exit', r));
    handle.sim.faults.remove(hang);

    // Restarted on the same database, later than the lease (the clock moved, not the test's time).
    const clock = testClock();
    clock.advance(30 * 60_000);
    const database = await db.open();
    const app = await buildServer({ db: database, now: clock.now, cleanup: { intervalMs: 1000 } });
    try {
      const before = await database.db.selectFrom('cleanup_jobs').selectAll().execute();
      expect(before.map((j) => j.state)).toEqual(['executing']);
      const executor = new CleanupExecutor({
        queue: app.cleanup.queue,
        plugins: servedClusters(handle.kubeconfig),
        protection: testProtection,
        kind: 'embedded',
        name: 'restarted',
        version: 'test',
      });
      // The claim returns the expired job and takes it; a planning pass changes nothing.
      const first = await executor.runPass();
      await app.cleanup.pass.run();
      const second = await executor.runPass();
      expect([...first.jobs, ...second.jobs].map((j) => j.outcome)).toEqual(['done']);
      expect(exists(handle.sim, 'killed-dev')).toBe(false);
      const jobs = await database.db.selectFrom('cleanup_jobs').select(['state']).execute();
      expect(jobs.map((j) => j.state)).toEqual(['done']);
      const done = await database.db
        .selectFrom('audit_log')
        .select('id')
        .where('action', '=', 'cleanup-done')
        .execute();
      expect(done).toHaveLength(1);
    } finally {
      await app.close();
    }
  }, 120_000);
});
