/**
 * The stage the attacks are replayed on: kube-sim, a real tend server listening on 127.0.0.1 (on
 * SQLite or PostgreSQL) with a clock the test moves — its wall clock and, apart, its monotonic
 * clock, so that a step of one against the other can be staged; kube-sim's clock (the `Date` its
 * API server answers with) is the world's, which a step of the server's clock does not move — the real CLI streaming its
 * events to the server, and a cleanup executor (the one `tend server --kubeconfig` embeds)
 * serving kube-sim's cluster through the server's job queue.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { CleanupExecutor, type PassReport } from '../../src/executor/executor.js';
import { countOutbox } from '../../src/outbox/read.js';
import { makeProject, runTend, type TendRun } from '../helpers/project.js';
import { startSim, type SimHandle } from '../plugins/kubernetes/helpers.js';
import { createTestServer, type Dialect, type TestServer } from '../server/helpers.js';
import { streamEnv } from '../stream/helpers.js';
import { servedClusters, testProtection } from '../cleanup/helpers.js';
import type { ArchiveSettings } from '../../src/server/cleanup/archives.js';
import { defaultCleanupSettings } from '../../src/server/cleanup/settings.js';

export interface Stage {
  sim: SimHandle;
  server: TestServer;
  url: string;
  /** Moves every clock: time passing. */
  advance(ms: number): void;
  /** Moves the server's wall clock only: its clock set wrong (an operator, a bad time source). */
  step(ms: number): void;
  /**
   * Moves the server's wall clock and the world's, not the server's monotonic clock: time passed
   * that the server did not count (a VM resumed, a drifted clock corrected by NTP).
   */
  resume(ms: number): void;
  /** Runs the real CLI in a project, its events streamed to the server (ingest token) and delivered. */
  tend(root: string, ...args: string[]): Promise<TendRun>;
  /** A kubernetes project with one ConfigMap Deploy; `extra` goes into its environment entry. */
  project(o: { name: string; namespace: string; environmentExtra?: string; providerExtra?: string }): string;
  /** The executor serving kube-sim's cluster through the server's queue (in process). */
  executor: CleanupExecutor;
  /** Executor pass (heartbeat, inventory, claim and execute) → planning pass → executor pass. */
  cleanupRound(): Promise<{ before: PassReport; after: PassReport }>;
  /** Enforces the policies of a project (as `tend cleanup enforce --project P`). */
  enforce(project: string): Promise<void>;
  namespaceExists(name: string): boolean;
  stop(): Promise<void>;
}

export async function stage(
  dialect: Dialect,
  o: { maxPerPass?: number; archive?: Partial<ArchiveSettings> } = {},
): Promise<Stage> {
  // Every clock runs with real time, moved by the test's offsets: the real CLI streams on the
  // real clock, so a stage whose clocks stood still would see it run ahead of them when the
  // machine is slow (and judge its claims of creation by a clock the world left behind).
  let wallOffset = 0;
  let worldOffset = 0;
  let monotonicOffset = 0;
  const sim = await startSim({ namespaceDeleteDelayMs: 20, now: () => Date.now() + worldOffset });
  const server = await createTestServer(dialect, {
    now: () => new Date(Date.now() + wallOffset),
    monotonicNow: () => performance.now() + monotonicOffset,
    cleanup: {
      intervalMs: 30_000,
      maxPerPass: o.maxPerPass ?? 10,
      archive: { ...defaultCleanupSettings.archive, ...o.archive },
    },
  });
  const url = await server.app.listen({ port: 0, host: '127.0.0.1' });
  const executor = new CleanupExecutor({
    queue: server.app.cleanup.queue,
    plugins: servedClusters(sim.kubeconfig),
    protection: testProtection,
    kind: 'embedded',
    name: 'adversarial',
    version: 'test',
  });
  return {
    sim,
    server,
    url,
    executor,
    advance(ms) {
      wallOffset += ms;
      worldOffset += ms;
      monotonicOffset += ms;
    },
    step(ms) {
      wallOffset += ms;
    },
    resume(ms) {
      wallOffset += ms;
      worldOffset += ms;
    },
    async tend(root, ...args) {
      const env = { KUBECONFIG: sim.kubeconfig, ...streamEnv(url, server.tokens.ingest) };
      const run = await runTend(args, { cwd: root, env });
      // A command waits 5 s at most for its events to reach the server, then leaves the rest in
      // the outbox; on a busy machine the stage waits for them, as the attacks assume them recorded.
      // (When none wait, there is nothing to push: no second process.)
      if (countOutbox(path.join(root, '.tend', 'outbox')) === 0) return run;
      const pushed = await runTend(['events', 'push'], { cwd: root, env });
      if (pushed.code !== 0) throw new Error(`tend events push failed:\n${pushed.stderr}`);
      return run;
    },
    project({ name, namespace, environmentExtra, providerExtra }) {
      const root = makeProject({
        'tend.yml': `kind: Project
name: ${name}
defaultEnvironment: dev
environments:
  - name: dev
    defaultNamespace: ${namespace}
    cleanup: { afterInactivity: 1h, action: delete }
${environmentExtra ?? ''}
providers:
  - name: kubernetes
    context: kube-sim
    namespaceTimeout: 20
${providerExtra ?? ''}
---
kind: Deploy
type: kubernetes
name: settings
spec:
  manifests:
    - { apiVersion: v1, kind: ConfigMap, metadata: { name: settings }, data: { owner: '\${project.name}' } }
`,
      });
      writeFileSync(path.join(root, '.gitignore'), '.tend\n');
      return root;
    },
    async cleanupRound() {
      const before = await executor.runPass();
      await server.app.cleanup.pass.run();
      const after = await executor.runPass();
      return { before, after };
    },
    async enforce(project) {
      await server.app.cleanup.switches.enforce(project, undefined, 'test');
    },
    namespaceExists: (name) => sim.sim.store.get('namespaces', '', name) !== undefined,
    async stop() {
      await server.close();
      await sim.stop();
    },
  };
}
