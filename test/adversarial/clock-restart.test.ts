/**
 * Attack: the server restarts with its wall clock 9 hours ahead (Debian's `faketime`, which
 * leaves the system's monotonic clock alone, as a wrong wall clock does), 13 seconds after a
 * namespace under an 8-hour delete policy was used. Its first pass must not delete it, nor any
 * pass while the clock is wrong, and it says why. On SQLite the reading of both clocks that the
 * last process kept under the same boot shows the step, and the cluster's clock (the API
 * server's `Date`, in every inventory) disagrees with the server's; on PostgreSQL the database's
 * own clock disagrees too. The real `tend server` with its embedded executor, the real CLI.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { PlanItemView } from '../../src/api/cleanup.js';
import { makeProject, removeProjects, runTend, waitFor } from '../helpers/project.js';
import { startSim, type SimHandle } from '../plugins/kubernetes/helpers.js';
import { createTestDatabase, dialects, type TestDatabase } from '../server/helpers.js';
import { createStreamServer, removeServerDirs, streamEnv, type StreamServer } from '../stream/helpers.js';

afterAll(() => {
  removeProjects();
  removeServerDirs();
});

describe.each(dialects)('a restart with the wall clock 9 h ahead (%s)', (dialect) => {
  let sim: SimHandle | undefined;
  let database: TestDatabase | undefined;
  let server: StreamServer | undefined;
  afterEach(async () => {
    await server?.close();
    await database?.drop();
    await sim?.stop();
  });

  it('deletes nothing, in its first pass or any while the clock disagrees, and says why', async () => {
    sim = await startSim({ namespaceDeleteDelayMs: 20 });
    if (dialect === 'postgres') database = await createTestDatabase('postgres');
    server = await createStreamServer({
      ...(database ? { database } : {}),
      args: ['--kubeconfig', sim.kubeconfig, '--cleanup-interval', '1s'],
    });
    let { url } = await server.start();
    const s = server;
    const get = async <T>(route: string): Promise<T> => {
      const res = await fetch(`${url}${route}`, { headers: { authorization: `Bearer ${s.tokens.admin}` } });
      expect(res.status, route).toBe(200);
      return (await res.json()) as T;
    };
    const decision = async () =>
      (await get<{ items: PlanItemView[] }>('/api/v1/cleanup/plan?limit=50')).items.find(
        (d) => d.namespace === 'restart-dev',
      );

    const root = makeProject({
      'tend.yml': `kind: Project
name: restart
defaultEnvironment: dev
environments:
  - name: dev
    defaultNamespace: restart-dev
    cleanup: { afterInactivity: 8h, action: delete }
providers:
  - name: kubernetes
    context: kube-sim
---
kind: Deploy
type: kubernetes
name: settings
spec:
  manifests:
    - { apiVersion: v1, kind: ConfigMap, metadata: { name: settings }, data: { a: b } }
`,
    });
    writeFileSync(path.join(root, '.gitignore'), '.tend\n');
    const tend = (token: string, ...args: string[]) =>
      runTend(args, { cwd: root, env: { KUBECONFIG: sim!.kubeconfig, ...streamEnv(url, token) } });
    const deployed = await tend(s.tokens.ingest, 'deploy');
    expect(deployed.code, deployed.stderr).toBe(0);
    const enforced = await tend(s.tokens.admin, 'cleanup', 'enforce', '--project', 'restart');
    expect(enforced.code, enforced.stderr).toBe(0);
    // Planned on the right clock: due in 8 h.
    await waitFor(
      async () => (await decision())?.kind === 'scheduled',
      'the namespace to be scheduled',
      30_000,
    );

    await s.current!.kill('SIGTERM');
    ({ url } = await s.start(undefined, {
      prefix: ['faketime', '-f', '+9h'],
      env: { FAKETIME_DONT_FAKE_MONOTONIC: '1' },
    }));
    const why = dialect === 'postgres' ? /the wall clock is 9 h 0 min ahead of the database's/ : undefined;
    // Passes run every second; wait until the server says why it plans nothing, then for three more
    // of the executor's inventories (each a chance to be given a deletion).
    await waitFor(
      async () => {
        const status = await get<{ lastPassNote: string | null }>('/api/v1/cleanup/status');
        return why ? why.test(status.lastPassNote ?? '') : (await decision())?.reason === 'clock-disagrees';
      },
      'the server to see its clock disagree',
      30_000,
    );
    // Three more heartbeats of the executor: each stamps its last-seen time anew (compared for
    // change, not order: the first pass after the restart stamped one before it saw the step).
    const lastSeen = async () =>
      (await get<{ executors: { lastSeenAt: string }[] }>('/api/v1/cleanup/status')).executors
        .map((e) => e.lastSeenAt)
        .join();
    let heartbeats = 0;
    let previous = await lastSeen();
    await waitFor(
      async () => {
        const current = await lastSeen();
        if (current !== previous) heartbeats++;
        previous = current;
        return heartbeats >= 3;
      },
      'three more executor passes',
      60_000,
    );

    expect(sim.sim.store.get('namespaces', '', 'restart-dev')).toBeDefined();
    const audit = await get<{ items: { action: string }[] }>('/api/v1/audit?limit=200');
    const actions = new Set(audit.items.map((a) => a.action));
    expect(actions.has('cleanup-planned')).toBe(false);
    if (dialect === 'postgres') expect(actions.has('cleanup-clock-disagrees')).toBe(true);
    else {
      // The step across the restart is seen from the reading kept under this boot.
      expect(actions.has('cleanup-clock-step')).toBe(true);
      expect(actions.has('cleanup-clock-disagrees')).toBe(true);
      expect(await decision()).toMatchObject({ kind: 'blocked', reason: 'clock-disagrees' });
    }
    const metrics = await (
      await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${s.tokens.admin}` } })
    ).text();
    expect(metrics).toMatch(
      dialect === 'postgres'
        ? /tend_cleanup_last_pass_outcome\{outcome="skipped"\} 1/
        : /tend_cleanup_blocked\{[^}]*reason="clock-disagrees"[^}]*\} 1/,
    );
  });
});
