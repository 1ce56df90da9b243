/**
 * The cleanup executor at scale (issue 11): 1,000 idle environments, each with a namespace on
 * kube-sim that tend created (label and annotations) and recorded (its uid), policies enforced,
 * the per-pass cap lifted (`maxPerPass` 1,000). One executor pass with the server's job queue in
 * process (the embedded home): inventory, claim, and for every job the server's re-check at
 * start, a fresh GET of the namespace checked against the job, a DELETE with
 * `preconditions: {uid, resourceVersion}`, the wait until it is gone, and `complete`. Prints
 * deletions per second (target ≥ 50/s) and the requests counted by the simulator. Then what
 * the pods' requests cost an inventory (`inventoryWithRequests`).
 *
 * kube-sim runs in this process (its namespaces are seeded without HTTP): its work is counted
 * in the time, so the figure is a lower bound of the executor's own rate. The floor, measured in
 * the same run on as many other namespaces: the bare GET and DELETE with preconditions through
 * @kubernetes/client-node at the executor's concurrency (64), then the same wait until gone —
 * what any executor must at least do. With the client's defaults (no connection reuse, unlike
 * tend's client) it can come out slower than the executor: a reference, not a strict bound.
 */
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { CleanupExecutor } from '../src/executor/executor.js';
import { kubernetesPlugin } from '../src/plugins/kubernetes/index.js';
import type { ServedPlugin } from '../src/router/cleanup.js';
import { composeCleanup } from '../src/server/cleanup/compose.js';
import { defaultCleanupSettings } from '../src/server/cleanup/settings.js';
import { Metrics } from '../src/server/metrics.js';
import { setWorldClock, startSim, type SimHandle } from '../test/plugins/kubernetes/helpers.js';
import { createTestServer, postEvents } from '../test/server/helpers.js';
import { recordingEvents, seedNamespace } from '../test/cleanup/helpers.js';
import { figure, ratio } from './support.js';

const count = Number(process.env.TEND_BENCH_NAMESPACES ?? 1000);
const hour = 3_600_000;

/**
 * What the pods' requests (the savings report) cost an inventory: `count` more recorded
 * namespaces with 2 running pods each; the first pass lists the cluster's pods (new namespaces),
 * the next one reuses that listing (at most 5 minutes old) — what most passes do.
 */
async function inventoryWithRequests(
  executor: CleanupExecutor,
  sim: SimHandle['sim'],
  server: Awaited<ReturnType<typeof createTestServer>>,
): Promise<void> {
  let events: unknown[] = [];
  for (let i = 0; i < count; i++) {
    const project = `pods${i}`;
    const ns = seedNamespace(sim, `${project}-dev`, { project });
    for (const pod of ['api', 'worker']) {
      sim.store.create('pods', ns.name, {
        metadata: { name: pod },
        spec: {
          containers: [
            {
              name: pod,
              image: `bench/${pod}:v1`,
              resources: { requests: { cpu: '250m', memory: '256Mi' } },
            },
          ],
        },
      });
    }
    events.push(...recordingEvents(sim, [ns], { project }));
    if (events.length >= 400 || i === count - 1) {
      const res = await postEvents(server, events);
      if (res.statusCode !== 200) throw new Error(`ingest: ${res.statusCode} ${res.body}`);
      events = [];
    }
  }
  const timed = async () => {
    const before = sim.requests.latest();
    const started = performance.now();
    const pass = await executor.runPass();
    if (!pass.inventories[0]?.complete) throw new Error(`inventory: ${JSON.stringify(pass.inventories)}`);
    const ms = performance.now() - started;
    const podLists = sim.requests
      .list({ since: before })
      .filter((r) => r.verb === 'list' && r.resource === 'pods');
    return { ms, podLists: podLists.length };
  };
  const listing = await timed();
  const reusing = await timed();
  console.log(
    `  ${count} namespaces with 2 pods each: the first pass listed pods in ${listing.podLists} page(s), the next in ${reusing.podLists}`,
  );
  figure(
    `inventory pass, ${count.toLocaleString('en')} namespaces, listing their pods' requests`,
    listing.ms,
    'ms',
  );
  figure('the next pass (the listing reused, as for 5 minutes)', reusing.ms, 'ms');
  ratio('inventory listing pods ÷ reusing the listing', listing.ms, reusing.ms, 'reusing');
}

export async function run(): Promise<void> {
  const handle = await startSim();
  // The server's clock runs 2 hours ahead once everything is recorded: the environments are idle.
  // The cluster's moves with it: the planner takes idleness from the time the cluster attests.
  let offsetMs = 0;
  const now = () => new Date(Date.now() + offsetMs);
  setWorldClock(() => now().getTime());
  const server = await createTestServer('sqlite', { now });
  try {
    const cleanup = composeCleanup(server.database.db, server.database.reader, new Metrics(), now, {
      ...defaultCleanupSettings,
      maxPerPass: count,
    });
    // One project per environment: the per-project breaker stays shut.
    const namespaces: { name: string; uid: string }[] = [];
    let events: unknown[] = [];
    const flush = async () => {
      const res = await postEvents(server, events);
      if (res.statusCode !== 200) throw new Error(`ingest: ${res.statusCode} ${res.body}`);
      events = [];
    };
    for (let i = 0; i < count; i++) {
      const project = `bench${i}`;
      const ns = seedNamespace(handle.sim, `${project}-dev`, { project });
      namespaces.push(ns);
      events.push(...recordingEvents(handle.sim, [ns], { project }));
      if (events.length >= 400) await flush();
    }
    if (events.length > 0) await flush();
    for (let i = 0; i < count; i++) await cleanup.switches.enforce(`bench${i}`, undefined, 'bench');
    offsetMs = 2 * hour;

    const executor = new CleanupExecutor({
      queue: cleanup.queue,
      plugins: [
        {
          plugin: kubernetesPlugin as ServedPlugin['plugin'],
          settings: { kubeconfig: handle.kubeconfig, contexts: ['kube-sim'] },
        },
      ],
      protection: { patterns: [], systemName: 'tend-system' },
      kind: 'embedded',
      name: 'bench',
      version: 'bench',
    });
    const first = await executor.runPass();
    if (!first.inventories[0]?.complete) throw new Error(`inventory: ${JSON.stringify(first.inventories)}`);
    const planned = await cleanup.pass.run();
    console.log(`  ${count} namespaces recorded and due; the planning pass planned ${planned?.planned} jobs`);

    const before = handle.sim.requests.latest();
    const started = performance.now();
    const pass = await executor.runPass();
    const seconds = (performance.now() - started) / 1000;
    const requests = handle.sim.requests.list({ since: before });
    const done = pass.jobs.filter((j) => j.outcome === 'done').length;
    const gone = namespaces.filter((n) => !handle.sim.store.get('namespaces', '', n.name)).length;
    const gets = requests.filter((r) => r.verb === 'get' && r.resource === 'namespaces').length;
    const deletes = requests.filter((r) => r.verb === 'delete' && r.resource === 'namespaces').length;
    console.log(
      `  one executor pass: ${done} done, ${pass.jobs.length - done} other; ${gone} namespaces gone; ` +
        `simulator saw ${gets} namespace GETs (fresh checks and waits until gone), ${deletes} DELETEs`,
    );
    if (done !== count || gone !== count || deletes !== count) process.exitCode = 1;
    figure(`executor pass (inventory + ${count.toLocaleString('en')} jobs)`, seconds * 1000, 'ms');
    const rate = done / seconds;
    figure('deletions per second, each checked fresh with precondition', rate, '/s', { min: 50 });

    // The floor: bare GET + DELETE with preconditions + wait until gone, 64 at once.
    const kc = new KubeConfig();
    kc.loadFromFile(handle.kubeconfig);
    const core = kc.makeApiClient(CoreV1Api);
    const bare = Array.from({ length: count }, (_, i) =>
      seedNamespace(handle.sim, `floor${i}`, { project: `floor${i}` }),
    );
    const floorStarted = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: 64 }, async () => {
        while (next < bare.length) {
          const { name } = bare[next++]!;
          const ns = await core.readNamespace({ name });
          await core.deleteNamespace({
            name,
            body: {
              preconditions: { uid: ns.metadata!.uid!, resourceVersion: ns.metadata!.resourceVersion! },
            },
          });
          for (;;) {
            const still = await core.readNamespace({ name }).catch(() => undefined);
            if (!still || still.metadata?.uid !== ns.metadata!.uid) break;
            await new Promise((resolve) => setTimeout(resolve, 100));
          }
        }
      }),
    );
    const floorRate = count / ((performance.now() - floorStarted) / 1000);
    figure('floor: bare GET + DELETE (preconditions) + wait, 64 at once', floorRate, '/s');
    ratio('executor deletions per second ÷ floor', rate, floorRate, 'floor');
    await inventoryWithRequests(executor, handle.sim, server);
  } finally {
    await server.close();
    await handle.stop();
  }
}

await run();
