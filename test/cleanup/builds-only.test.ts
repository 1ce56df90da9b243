/**
 * The case tend was built for, end to end with real processes: a project whose environment is
 * touched only by an in-cluster container build (`tend build`, events streamed to the server)
 * is cleaned automatically by the embedded executor of `tend server --kubeconfig` once its
 * policy is enforced — no manual trigger — while a foreign namespace, an adopted one and the
 * system namespace stay.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateToLatest } from '../../src/server/db/database.js';
import { TokenRepository } from '../../src/server/db/repositories/tokens.js';
import { makeProject, removeProjects, repoRoot, runTend, tendBin, waitFor } from '../helpers/project.js';
import { dockerfile, startSim, type SimHandle } from '../plugins/kubernetes/helpers.js';
import { createTestDatabase, type TestDatabase } from '../server/helpers.js';
import { streamEnv } from '../stream/helpers.js';
import { exists, seedNamespace } from './helpers.js';

let handle: SimHandle;
let db: TestDatabase;
let server: ChildProcess | undefined;

beforeAll(async () => {
  handle = await startSim({ namespaceDeleteDelayMs: 20 });
  db = await createTestDatabase('sqlite');
});
afterAll(async () => {
  if (server && server.exitCode === null) {
    server.kill('SIGTERM');
    await new Promise((r) => server!.once('exit', r));
  }
  await db.drop();
  await handle.stop();
  removeProjects();
});

describe('a builds-only environment', () => {
  it('is deleted automatically by the embedded executor once its policy is enforced', async () => {
    const database = await db.open();
    await migrateToLatest(database);
    const repo = new TokenRepository(database.db);
    const ingest = (await repo.create({ name: 'ci', scope: 'ingest' })).token;
    const admin = (await repo.create({ name: 'ops', scope: 'admin' })).token;
    await database.close();

    const foreign = handle.sim.store.create('namespaces', '', { metadata: { name: 'foreign-team' } });
    const adopted = seedNamespace(handle.sim, 'adopted-dev', {
      project: 'builds',
      annotations: { 'tend.dev/adopted': 'true' },
    });

    server = spawn(
      process.execPath,
      [
        tendBin,
        'server',
        '--port',
        '0',
        '--data-dir',
        db.dir!,
        '--kubeconfig',
        handle.kubeconfig,
        '--cleanup-interval',
        '1s',
      ],
      { cwd: repoRoot, stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let log = '';
    server.stderr!.on('data', (d) => (log += d));
    const url = await waitFor(
      () => /"url":"(http:\/\/[^"]+)"/.exec(log)?.[1],
      'the server to listen',
      30_000,
    );

    const root = makeProject({
      'tend.yml': `kind: Project
name: builds
defaultEnvironment: dev
environments:
  - name: dev
    defaultNamespace: builds-dev
    cleanup: { afterInactivity: 0m, action: delete }
providers:
  - name: kubernetes
    context: kube-sim
    deploymentRegistry: ${handle.sim.registryHost}/builds
    podStartTimeout: 20
---
kind: Build
type: container
name: api
`,
      Dockerfile: dockerfile,
      'main.js': 'console.log("hello")\n',
    });
    const built = await runTend(['build', '--json'], {
      cwd: root,
      env: streamEnv(url, ingest, { KUBECONFIG: handle.kubeconfig }),
    });
    expect(built.code, built.stderr).toBe(0);
    expect(exists(handle.sim, 'builds-dev')).toBe(true);

    // A policy seen for the first time is a dry run: planned, shown, nothing deleted until enforced.
    let seen: { kind: string; sentence: string } | undefined;
    await waitFor(
      async () => {
        const res = await fetch(`${url}/api/v1/cleanup/plan?project=builds`, {
          headers: { authorization: `Bearer ${admin}` },
        });
        const { items } = (await res.json()) as {
          items: { namespace: string; kind: string; sentence: string }[];
        };
        seen = items.find((i) => i.namespace === 'builds-dev');
        return seen?.kind === 'dry-run';
      },
      () => `the dry-run decision (the plan says: ${JSON.stringify(seen ?? 'nothing')})`,
      30_000,
    );
    expect(exists(handle.sim, 'builds-dev')).toBe(true);
    const enforced = await fetch(`${url}/api/v1/cleanup/enforce`, {
      method: 'POST',
      headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
      body: JSON.stringify({ project: 'builds' }),
    });
    expect(enforced.status, await enforced.clone().text()).toBe(200);

    await waitFor(() => !exists(handle.sim, 'builds-dev'), 'the builds-only namespace to be deleted', 60_000);
    // The namespace can be gone a moment before the job's `complete` is recorded.
    await waitFor(
      async () => {
        const res = await fetch(`${url}/api/v1/audit?limit=100`, {
          headers: { authorization: `Bearer ${admin}` },
        });
        const { items } = (await res.json()) as {
          items: { action: string; detail: { namespace?: string } | null }[];
        };
        return items.some((e) => e.action === 'cleanup-done' && e.detail?.namespace === 'builds-dev');
      },
      'the cleanup-done audit entry',
      10_000,
    );
    expect(exists(handle.sim, foreign.metadata.name!)).toBe(true);
    expect(exists(handle.sim, adopted.name)).toBe(true);
    expect(exists(handle.sim, 'kube-system')).toBe(true);
  }, 120_000);
});
