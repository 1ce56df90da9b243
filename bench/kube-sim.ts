/**
 * The kube-sim benchmark (issue 4): requests per second for get, list and create through
 * @kubernetes/client-node, and the time to list 10,000 namespaces (each holding a few
 * objects), raw over HTTPS and through client-node. client-node is measured twice: with one
 * keep-alive agent shared through a middleware, and with its default of a new agent (and TLS
 * handshake) per request. Watch delivery latency is reported with
 * all 10,000 namespaces present.
 */
import type { ConfigurationOptions } from '@kubernetes/client-node';
import { CoreV1Api, KubeConfig, setHeaderMiddleware, Watch } from '@kubernetes/client-node';
import { Agent, request } from 'node:https';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startKubeSim } from '../tools/kube-sim/src/index.js';
import type { KubeSim } from '../tools/kube-sim/src/index.js';
import { figure, median, timeIt } from './support.js';

const NAMESPACES = 10_000;

async function pool(
  total: number,
  concurrency: number,
  fn: (i: number) => Promise<unknown>,
): Promise<number> {
  let next = 0;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total) await fn(next++);
    }),
  );
  return performance.now() - start;
}

function rawGet(sim: KubeSim, p: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${sim.url}${p}`,
      { ca: sim.caPem, headers: { Authorization: `Bearer ${sim.token}` } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

async function seed(sim: KubeSim): Promise<void> {
  for (let i = 0; i < NAMESPACES; i++) {
    const ns = `env-${String(i).padStart(5, '0')}`;
    sim.store.create('namespaces', '', {
      metadata: { name: ns, labels: { 'tend.dev/managed': 'true', 'tend.dev/env': i % 2 ? 'pr' : 'dev' } },
    });
    sim.store.create('configmaps', ns, { metadata: { name: 'tend-environment' }, data: { id: String(i) } });
    sim.store.create('secrets', ns, { metadata: { name: 'registry' }, data: { token: 'eA==' } });
  }
  // The namespace controller adds a ServiceAccount and the root CA ConfigMap to each.
  while (sim.store.count('serviceaccounts') < NAMESPACES) await new Promise((r) => setImmediate(r));
}

export async function run(): Promise<void> {
  const sim = await startKubeSim();
  try {
    const kc = new KubeConfig();
    kc.loadFromString(sim.kubeconfigYaml);
    const core = kc.makeApiClient(CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: 'bench' } } });
    for (let i = 0; i < 100; i++) {
      await core.createNamespacedConfigMap({
        namespace: 'bench',
        body: { metadata: { name: `cm-${i}` }, data: { i: String(i) } },
      });
    }

    const concurrency = 16;
    // client-node 1.x makes a new https.Agent, hence a new TLS handshake, for every request.
    // A middleware that hands every request one keep-alive agent measures the server instead.
    const agent = new Agent({ keepAlive: true, maxSockets: concurrency, ca: sim.caPem });
    const header = setHeaderMiddleware('User-Agent', 'kube-sim-bench');
    const keepAlive: ConfigurationOptions = {
      middleware: [
        {
          pre: (ctx) => {
            ctx.setAgent(agent);
            return header.pre(ctx);
          },
          post: header.post,
        },
      ],
      middlewareMergeStrategy: 'append',
    };
    for (const [label, opts] of [
      ['keep-alive agent', keepAlive],
      ['default agent per request', undefined],
    ] as const) {
      const gets = opts ? 6000 : 1000;
      const getMs = await pool(gets, concurrency, (i) =>
        core.readNamespacedConfigMap({ namespace: 'bench', name: `cm-${i % 100}` }, opts),
      );
      figure(
        `client-node get (configmap), ${label}`,
        (gets / getMs) * 1000,
        'req/s',
        opts ? { min: 2000 } : undefined,
      );
      const lists = opts ? 3000 : 500;
      const listMs = await pool(lists, concurrency, () =>
        core.listNamespacedConfigMap({ namespace: 'bench', limit: 10 }, opts),
      );
      figure(`client-node list (10 configmaps), ${label}`, (lists / listMs) * 1000, 'req/s');
      const creates = opts ? 3000 : 500;
      const createMs = await pool(creates, concurrency, (i) =>
        core.createNamespacedConfigMap(
          {
            namespace: 'bench',
            body: { metadata: { name: `new-${label.length}-${i}` }, data: { i: String(i) } },
          },
          opts,
        ),
      );
      figure(`client-node create (configmap), ${label}`, (creates / createMs) * 1000, 'req/s');
    }
    agent.destroy();

    const seedMs = await timeIt(() => seed(sim));
    figure(`seed ${NAMESPACES} namespaces × 4 objects (in-process)`, seedMs, 'ms');
    const rawTimes: number[] = [];
    let count = 0;
    for (let i = 0; i < 7; i++) {
      rawTimes.push(
        await timeIt(async () => {
          count = (JSON.parse(await rawGet(sim, '/api/v1/namespaces')) as { items: unknown[] }).items.length;
        }),
      );
    }
    if (count < NAMESPACES) throw new Error(`listed only ${count} namespaces`);
    figure(`list ${count} namespaces, HTTPS + JSON.parse (median of 7)`, median(rawTimes), 'ms', {
      max: 300,
    });
    const clientTimes: number[] = [];
    for (let i = 0; i < 5; i++) clientTimes.push(await timeIt(() => core.listNamespace()));
    figure(`list ${count} namespaces through client-node (median of 5)`, median(clientTimes), 'ms');
    const selTimes: number[] = [];
    for (let i = 0; i < 5; i++) {
      selTimes.push(
        await timeIt(() => rawGet(sim, '/api/v1/namespaces?labelSelector=tend.dev%2Fenv%3Dpr&limit=500')),
      );
    }
    figure('list namespaces by label, first page of 500 (median of 5)', median(selTimes), 'ms');
    const allCm: number[] = [];
    for (let i = 0; i < 3; i++) allCm.push(await timeIt(() => rawGet(sim, '/api/v1/configmaps')));
    figure(
      `list all ${sim.store.count('configmaps')} configmaps across namespaces (median of 3)`,
      median(allCm),
      'ms',
    );

    // Watch delivery: time from create to the event reaching a client-node Watch.
    const latencies: number[] = [];
    let pending: { name: string; at: number; done: () => void } | undefined;
    const ctl = await new Watch(kc).watch(
      '/api/v1/namespaces',
      { resourceVersion: String(sim.store.resourceVersion()) },
      (type, obj: { metadata: { name: string } }) => {
        if (type === 'ADDED' && pending && obj.metadata.name === pending.name) {
          latencies.push(performance.now() - pending.at);
          pending.done();
        }
      },
      () => {},
    );
    for (let i = 0; i < 200; i++) {
      const name = `watched-${i}`;
      await new Promise<void>((done) => {
        pending = { name, at: performance.now(), done };
        void core.createNamespace({ body: { metadata: { name } } });
      });
    }
    ctl.abort();
    figure(`create → watch event, ${NAMESPACES} namespaces present (median of 200)`, median(latencies), 'ms');
  } finally {
    await sim.stop();
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) await run();
