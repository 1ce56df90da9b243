/**
 * The kube-sim benchmark (issue 4): requests per second for get, list and create through
 * @kubernetes/client-node, and the time to list 10,000 namespaces (each holding a few
 * objects), raw over HTTPS and through client-node, plus watch delivery latency.
 *
 * The simulator runs in its own process (the CLI with `--seed-namespaces`), as it does for
 * the demo, so that client and server do not share one event loop. client-node is measured
 * twice: with one keep-alive undici Agent handed to every request by a middleware, and with its
 * default of a new undici Agent — hence a new TLS handshake — per request.
 */
import type { ConfigurationOptions } from '@kubernetes/client-node';
import { CoreV1Api, KubeConfig, setHeaderMiddleware, Watch } from '@kubernetes/client-node';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { Agent } from 'undici';
import { figure, median, timeIt } from './support.js';

const NAMESPACES = 10_000;
const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

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

export async function run(): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'kube-sim-bench-'));
  const kubeconfig = path.join(dir, 'kubeconfig');
  const started = performance.now();
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      path.join(repoRoot, 'tools/kube-sim/src/cli.ts'),
      '--kubeconfig',
      kubeconfig,
      '--seed-namespaces',
      String(NAMESPACES),
    ],
    { cwd: repoRoot, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  try {
    const url = await new Promise<string>((resolve, reject) => {
      createInterface(child.stdout).once('line', resolve);
      child.once('exit', (code) => reject(new Error(`kube-sim exited with ${code}`)));
    });
    figure(`start kube-sim and seed ${NAMESPACES} namespaces × 4 objects`, performance.now() - started, 'ms');
    const kc = new KubeConfig();
    kc.loadFromFile(kubeconfig);
    const ca = Buffer.from(kc.getCurrentCluster()!.caData!, 'base64').toString();
    const token = kc.getCurrentUser()!.token!;
    const core = kc.makeApiClient(CoreV1Api);
    const rawGet = (p: string): Promise<string> =>
      new Promise((resolve, reject) => {
        const req = request(`${url}${p}`, { ca, headers: { Authorization: `Bearer ${token}` } }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
        });
        req.on('error', reject);
        req.end();
      });

    await core.createNamespace({ body: { metadata: { name: 'bench' } } });
    for (let i = 0; i < 100; i++) {
      await core.createNamespacedConfigMap({
        namespace: 'bench',
        body: { metadata: { name: `cm-${i}` }, data: { i: String(i) } },
      });
    }
    const concurrency = 16;
    const dispatcher = new Agent({ connections: concurrency, connect: { ca } });
    const header = setHeaderMiddleware('User-Agent', 'kube-sim-bench');
    const keepAlive: ConfigurationOptions = {
      middleware: [
        {
          pre: (ctx) => {
            ctx.setDispatcher(dispatcher);
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
      const gets = opts ? 8000 : 1000;
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
    await dispatcher.close();

    const rawTimes: number[] = [];
    let count = 0;
    for (let i = 0; i < 7; i++) {
      rawTimes.push(
        await timeIt(async () => {
          count = (JSON.parse(await rawGet('/api/v1/namespaces')) as { items: unknown[] }).items.length;
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
    for (let i = 0; i < 5; i++)
      selTimes.push(
        await timeIt(() => rawGet('/api/v1/namespaces?labelSelector=tend.dev%2Fenv%3Dpr&limit=500')),
      );
    figure('list namespaces by label, first page of 500 (median of 5)', median(selTimes), 'ms');
    const secretTimes: number[] = [];
    for (let i = 0; i < 3; i++) secretTimes.push(await timeIt(() => rawGet('/api/v1/secrets')));
    figure(`list all ${NAMESPACES} secrets across namespaces (median of 3)`, median(secretTimes), 'ms');

    // Watch delivery: time from a create to its event reaching a client-node Watch.
    const latencies: number[] = [];
    let pending: { name: string; at: number; done: () => void } | undefined;
    const list = await core.listNamespace({ limit: 1 });
    const ctl = await new Watch(kc).watch(
      '/api/v1/namespaces',
      { resourceVersion: list.metadata?.resourceVersion },
      (type, obj: { metadata: { name: string } }) => {
        if (type === 'ADDED' && pending && obj.metadata.name === pending.name) {
          latencies.push(performance.now() - pending.at);
          pending.done();
        }
      },
      () => {},
    );
    for (let i = 0; i < 200; i++) {
      await new Promise<void>((done) => {
        pending = { name: `watched-${i}`, at: performance.now(), done };
        void core.createNamespace({ body: { metadata: { name: pending.name } } });
      });
    }
    ctl.abort();
    figure(`create → watch event, ${NAMESPACES} namespaces present (median of 200)`, median(latencies), 'ms');
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => (child.exitCode !== null ? r(null) : child.once('exit', r)));
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) await run();
