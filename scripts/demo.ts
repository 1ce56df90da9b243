/**
 * The demo (`npm run demo`): starts a local Kubernetes API simulator and a tend server (SQLite)
 * whose embedded cleanup executor serves the simulator, runs the example projects against both
 * with the real CLI, and shows automatic cleanup end to end: a builds-only project (its only
 * action a container Build in the cluster) with `afterInactivity: 1m` is planned as a dry run,
 * enforced, and deleted by the server on its own once idle, while a foreign namespace and an
 * adopted one stay, and a `cleanup.done` webhook reaches a local receiver that verifies its
 * signature. It ends by printing the dashboard URL and tokens, keeps everything running
 * until Ctrl-C (or exits at once with --exit), then cleans up what it deployed.
 */
import { spawn } from 'node:child_process';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { startKubeSim } from '../tools/kube-sim/src/index.js';
import { startServer } from '../src/server/start.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const tendBin = path.join(repoRoot, 'bin', 'tend.js');
const workDir = path.join(repoRoot, '.demo');
const demoArgs = parseArgs({
  options: { exit: { type: 'boolean', default: false }, port: { type: 'string', default: '0' } },
}).values;
const exitAtOnce = demoArgs.exit;
// `--port N` serves the demo's tend server on a fixed port (the dashboard URL stays the same from
// one run to the next); 0, the default, takes any free one.
const serverPort = Number(demoArgs.port);
if (!Number.isInteger(serverPort) || serverPort < 0 || serverPort > 65_535) {
  console.error(`demo: --port must be a port number (0-65535, 0 for any free port), got ${demoArgs.port}`);
  process.exit(2);
}

function step(message: string): void {
  process.stdout.write(`\n▸ ${message}\n`);
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** Runs the real CLI; its output goes to the terminal, except with `capture`. */
function tend(
  args: string[],
  options: { cwd?: string; env?: Record<string, string>; capture?: boolean } = {},
) {
  return new Promise<{ code: number; stdout: string }>((resolve, reject) => {
    const child = spawn(process.execPath, [tendBin, ...args], {
      cwd: options.cwd ?? repoRoot,
      env: { ...process.env, ...options.env },
      stdio: ['ignore', options.capture ? 'pipe' : 'inherit', 'inherit'],
    });
    let stdout = '';
    child.stdout?.on('data', (d) => (stdout += d));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code: code ?? 1, stdout }));
  });
}

async function must(args: string[], options: Parameters<typeof tend>[1] = {}) {
  const result = await tend(args, options);
  if (result.code !== 0) throw new Error(`tend ${args.join(' ')} exited with ${result.code}`);
  return result;
}

/** Runs kubectl against the simulator; its output goes to the terminal. */
function kubectl(kubeconfig: string, args: string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn('kubectl', ['--kubeconfig', kubeconfig, ...args], { stdio: 'inherit' });
    child.once('error', reject);
    child.once('close', (code) => resolve(code ?? 1));
  });
}

/** Polls until `condition` holds (bounded): the demo waits for what happens, not for a time. */
async function waitUntil(
  what: string,
  condition: () => Promise<boolean> | boolean,
  timeoutMs: number,
  lastSeen?: () => string,
) {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) {
      const seen = lastSeen ? `; last seen: ${lastSeen()}` : '';
      throw new Error(`gave up waiting for ${what} after ${timeoutMs / 1000}s${seen}`);
    }
    await new Promise((r) => setTimeout(r, 500));
  }
}

/** The builds-only project: one environment tend creates, one whose namespace existed before. */
function writeBuildsProject(dir: string, registryHost: string): void {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    path.join(dir, 'tend.yml'),
    `# Only a container Build, run in the cluster: the namespace it creates is touched by builds
# alone, and cleaned up automatically after a minute without activity.
kind: Project
name: builds
defaultEnvironment: dev
environments:
  - name: dev
    defaultNamespace: builds-dev
    cleanup: { afterInactivity: 1m, action: delete }
  - name: shared
    defaultNamespace: builds-shared  # exists before tend uses it: adopted, never deleted
    cleanup: { afterInactivity: 1m, action: delete }
providers:
  - name: kubernetes
    context: kube-sim
    deploymentRegistry: ${registryHost}/builds
---
kind: Build
type: container
name: api
`,
  );
  writeFileSync(
    path.join(dir, 'Dockerfile'),
    'FROM node:20-alpine\nCOPY . /app\nCMD ["node", "/app/main.js"]\n',
  );
  writeFileSync(path.join(dir, 'main.js'), 'console.log("hello from the builds-only project");\n');
}

/**
 * A webhook receiver on 127.0.0.1 that verifies `tend-signature` as docs/cleanup.md describes:
 * HMAC-SHA256 of "<t>.<body>" with the webhook's secret, t within 5 minutes.
 */
async function webhookReceiver() {
  const received: { event: string; environment: string; verified: boolean }[] = [];
  const state = { secret: '' };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const header = String(req.headers['tend-signature'] ?? '');
      const t = Number(/(?:^|,)t=(\d+)/.exec(header)?.[1] ?? NaN);
      const v1 = /(?:^|,)v1=([0-9a-f]{64})/.exec(header)?.[1] ?? '';
      const expected = createHmac('sha256', state.secret).update(`${t}.${body}`).digest('hex');
      const verified =
        Math.abs(Date.now() / 1000 - t) <= 300 &&
        v1.length === 64 &&
        timingSafeEqual(Buffer.from(v1, 'hex'), Buffer.from(expected, 'hex'));
      const notice = JSON.parse(body) as {
        environment: { project: string; name: string; namespace: string };
      };
      const e = notice.environment;
      received.push({
        event: String(req.headers['tend-event']),
        environment: `${e.project}/${e.name} (${e.namespace})`,
        verified,
      });
      res.writeHead(verified ? 204 : 401).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    received,
    set secret(value: string) {
      state.secret = value;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** A project whose idle environment is paused (not deleted) after a minute, and resumed by the next deploy. */
function writeSleepyProject(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    path.join(dir, 'tend.yml'),
    `# A web Deployment with 3 replicas: paused (scaled to 0, replicas recorded) after a minute
# without activity, resumed exactly by the next \`tend deploy\`.
kind: Project
name: sleepy
defaultEnvironment: dev
environments:
  - name: dev
    defaultNamespace: sleepy-dev
    cleanup: { afterInactivity: 1m, action: pause }
providers:
  - name: kubernetes
    context: kube-sim
---
kind: Deploy
type: kubernetes
name: web
spec:
  files: [web.yaml]
`,
  );
  writeFileSync(
    path.join(dir, 'web.yaml'),
    `apiVersion: apps/v1
kind: Deployment
metadata: { name: web }
spec:
  replicas: 3
  selector: { matchLabels: { app: web } }
  template:
    metadata: { labels: { app: web } }
    spec: { containers: [{ name: web, image: nginx:1.27 }] }
`,
  );
}

async function main(): Promise<void> {
  mkdirSync(workDir, { recursive: true });
  const serverData = path.join(workDir, 'server');
  rmSync(serverData, { recursive: true, force: true });

  step('starting kube-sim, a local Kubernetes API simulator');
  const sim = await startKubeSim();
  const kubeconfig = path.join(workDir, 'kubeconfig');
  await sim.writeKubeconfig(kubeconfig);
  console.log(
    `  API ${sim.url}, registry ${sim.registryHost}, kubeconfig ${path.relative(repoRoot, kubeconfig)}`,
  );

  step('starting tend server (SQLite) with its embedded cleanup executor for kube-sim');
  console.log(
    `  as: tend server --data-dir ${path.relative(repoRoot, serverData)} --kubeconfig ${path.relative(repoRoot, kubeconfig)} --cleanup-interval 2s`,
  );
  const server = await startServer({
    dataDir: serverData,
    port: serverPort,
    logLevel: 'warn',
    cleanup: { intervalMs: 2000 },
    executor: { kubeconfig, contexts: [] },
  });
  console.log(`  ${server.url}`);

  const token = async (name: string, scope: string) =>
    JSON.parse(
      (
        await must(
          ['server', 'token', 'create', '--name', name, '--scope', scope, '--data-dir', serverData, '--json'],
          { capture: true },
        )
      ).stdout,
    ).token as string;
  const ingestToken = await token('demo-cli', 'ingest');
  const readToken = await token('demo-dashboard', 'read');
  const adminToken = await token('demo-admin', 'admin');
  const api = async <T>(route: string, init: RequestInit = {}, bearer = readToken): Promise<T> => {
    const res = await fetch(`${server.url}${route}`, {
      ...init,
      headers: { authorization: `Bearer ${bearer}`, 'content-type': 'application/json' },
    });
    if (!res.ok) throw new Error(`${route}: ${res.status} ${await res.text()}`);
    return (await res.json()) as T;
  };
  const namespaceExists = (name: string) => sim.store.get('namespaces', '', name) !== undefined;

  const env = {
    TEND_SERVER_URL: server.url,
    TEND_TOKEN: ingestToken,
    KUBECONFIG: kubeconfig,
    TEND_DEMO_REGISTRY: sim.registryHost,
  };
  const adminEnv = { TEND_SERVER_URL: server.url, TEND_TOKEN: adminToken };

  // First, so its minute of inactivity passes while the other examples run.
  step('a builds-only project: `tend build` in the cluster, nothing else (policy: delete after 1m idle)');
  const builds = path.join(workDir, 'builds-only');
  writeBuildsProject(builds, sim.registryHost);
  await kubectl(kubeconfig, ['create', 'namespace', 'team-foreign']);
  await kubectl(kubeconfig, ['create', 'namespace', 'builds-shared']);
  console.log("  team-foreign: not tend's (no tend label); builds-shared: exists before tend uses it");
  await must(['build'], { cwd: builds, env });
  // Something to bring back at the end: the executor archives it before the deletion.
  await kubectl(kubeconfig, [
    '-n',
    'builds-dev',
    'create',
    'configmap',
    'build-settings',
    '--from-literal=cache=on',
  ]);
  await must(['--env', 'shared', 'build'], { cwd: builds, env });
  // A command waits 5 s at most for the server to take its events; a busy machine may need more,
  // and the next command would send them: here nothing else runs in this project, so push them.
  await must(['events', 'push'], { cwd: builds, env, capture: true });

  step('a project whose idle environment is paused, not deleted (policy: pause after 1m idle)');
  const sleepy = path.join(workDir, 'sleepy');
  writeSleepyProject(sleepy);
  await must(['deploy'], { cwd: sleepy, env });
  await must(['events', 'push'], { cwd: sleepy, env, capture: true });
  const replicas = () => sim.store.get('deployments.apps', 'sleepy-dev', 'web')?.spec?.replicas as number;
  console.log(`  sleepy-dev: deployment web has ${replicas()} replicas`);

  const localShop = path.join(repoRoot, 'examples', 'local-shop');
  const port = String(await freePort());
  const shopVars = ['--var', `port=${port}`];

  step('examples/local-shop: deploy, test and seed a local Node.js service (exec provider)');
  await must([...shopVars, 'deploy'], { cwd: localShop, env });
  await must([...shopVars, 'test', '--show-output'], { cwd: localShop, env });
  await must([...shopVars, 'run', 'seed'], { cwd: localShop, env });
  step('what the local-shop service printed: `tend logs service` (add -f to follow it)');
  await must([...shopVars, 'logs', 'service', '--tail', '5'], { cwd: localShop, env });

  const shop = path.join(repoRoot, 'examples', 'shop');
  if (existsSync(path.join(shop, 'tend.yml'))) {
    step('examples/shop: build an image in the cluster, deploy it, run a test pod (kubernetes provider)');
    const shopEnv = { ...env };
    await must(['--var', `registry=${sim.registryHost}`, 'test'], { cwd: shop, env: shopEnv });
    step("the logs of the api Deployment's pods: `tend logs api`");
    await must(['--var', `registry=${sim.registryHost}`, 'logs', 'api', '--tail', '5'], {
      cwd: shop,
      env: shopEnv,
    });
  }

  step("the server's view of the environments");
  const readEnv = { TEND_SERVER_URL: server.url, TEND_TOKEN: readToken };
  await must(['environments'], { env: readEnv });
  const [localShopEnv] = JSON.parse(
    (await must(['envs', '--project', 'local-shop', '--json'], { env: readEnv, capture: true })).stdout,
  ) as { id: string }[];
  if (localShopEnv) {
    step('one environment: its resources (cluster by context), sessions and cleanup plan');
    await must(['envs', localShopEnv.id], { env: readEnv });
    step('protecting the local-shop environment from automatic cleanup (admin), from its directory');
    await must([...shopVars, 'protect'], { cwd: localShop, env: adminEnv });
  }

  step('automatic cleanup: the plan while the policy is new (a dry run: nothing is deleted)');
  type Plan = {
    serverTime: string;
    items: { namespace: string; kind: string; reason: string | null; dueAt: string; sentence: string }[];
  };
  // Due, not only ahead ("would be deleted at … once enforced"): what it would do now. The
  // decision is the last pass's, so its sentence says which (not the due time against the
  // request's time: a pass before the due time still words it ahead).
  let lastPlan: Plan | undefined;
  await waitUntil(
    'the dry-run decision for builds-dev',
    async () => {
      lastPlan = await api<Plan>('/api/v1/cleanup/plan?project=builds');
      return lastPlan.items.some(
        (i) => i.namespace === 'builds-dev' && i.kind === 'dry-run' && i.sentence.startsWith('would delete'),
      );
    },
    120_000,
    () => JSON.stringify(lastPlan),
  );
  await must(['cleanup', 'plan', '--project', 'builds'], { env: adminEnv });
  if (!namespaceExists('builds-dev')) throw new Error('builds-dev was deleted during the dry run');

  step('a webhook: cleanup.done to a local receiver that verifies each signature');
  const receiver = await webhookReceiver();
  const added = JSON.parse(
    (
      await must(
        [
          'server',
          'webhook',
          'add',
          '--url',
          `${receiver.url}/hooks/tend`,
          '--event',
          'cleanup.done',
          '--project',
          'builds',
          '--data-dir',
          serverData,
          '--json',
        ],
        { capture: true },
      )
    ).stdout,
  ) as { id: string; secret: string };
  receiver.secret = added.secret;
  console.log(`  ${added.id} → ${receiver.url}/hooks/tend (its secret was printed once, to the receiver)`);

  step('enforcing the policy (admin): from now on the server deletes idle environments of builds');
  await must(['cleanup', 'enforce', '--project', 'builds'], { env: adminEnv });

  step('waiting for the server to delete builds-dev on its own (no manual trigger)');
  const enforcedAt = Date.now();
  await waitUntil('builds-dev to be deleted', () => !namespaceExists('builds-dev'), 60_000);
  console.log(`  builds-dev deleted ${((Date.now() - enforcedAt) / 1000).toFixed(1)}s after enforcing`);
  type Audit = {
    items: { at: string; actor: string; action: string; detail: Record<string, unknown> | null }[];
  };
  const done = async () =>
    (await api<Audit>('/api/v1/audit?action=cleanup-done&limit=50', {}, adminToken)).items.find(
      (e) => e.detail?.namespace === 'builds-dev',
    );
  await waitUntil('the cleanup-done audit entry', async () => (await done()) !== undefined, 30_000);
  const entry = (await done())!;
  console.log(`  audit: ${entry.at} ${entry.action} by ${entry.actor}: ${JSON.stringify(entry.detail)}`);

  // A first attempt that fails on a busy machine is retried after 10 s, then 20 s (the server's backoff).
  await waitUntil('the cleanup.done webhook delivery', () => receiver.received.length > 0, 120_000);
  const delivery = receiver.received[0]!;
  console.log(
    `  webhook: ${delivery.event} for ${delivery.environment} delivered to ${receiver.url}/hooks/tend, signature ${delivery.verified ? 'verified' : 'NOT verified'}`,
  );
  await receiver.close();
  step('pause and exact resume: enforcing sleepy, whose environment the server pauses on its own');
  await must(['cleanup', 'enforce', '--project', 'sleepy'], { env: adminEnv });
  await waitUntil('sleepy-dev to be paused', () => replicas() === 0, 60_000);
  const recorded = sim.store.get('deployments.apps', 'sleepy-dev', 'web')?.metadata.annotations?.[
    'tend.dev/paused-replicas'
  ];
  console.log(`  paused: deployment web at ${replicas()} replicas (tend.dev/paused-replicas: ${recorded})`);
  await kubectl(kubeconfig, ['get', 'deployments', '-n', 'sleepy-dev']);
  await must(['deploy'], { cwd: sleepy, env });
  console.log(`  resumed: deployment web back at ${replicas()} replicas`);

  step('the cluster afterwards: the foreign and the adopted namespace are still there');
  await kubectl(kubeconfig, ['get', 'namespaces']);
  await must(['cleanup', 'plan', '--project', 'builds'], { env: adminEnv });

  step('undo: `tend restore` brings builds-dev back from the archive taken before its deletion (admin)');
  const [deleted] = (
    await api<{ items: { id: string }[] }>('/api/v1/environments?project=builds&environment=dev')
  ).items;
  await must(['envs', deleted!.id], { env: adminEnv });
  await must(['restore', deleted!.id], { cwd: builds, env: { ...env, ...adminEnv } });

  // With --exit everything is torn down below: a URL, tokens and commands to try against a
  // server that is about to stop would lead nowhere.
  if (!exitAtOnce) {
    console.log(`
Dashboard:  ${server.url}/
Read token: ${readToken}
Admin token: ${adminToken}
  (paste one into the dashboard's login form; the CLI above used an ingest token;
   the Cleanup page shows the plan, jobs, policies and executors)
Try (while the demo runs, from the repository's root; with the Node the demo runs on):
            export TEND_SERVER_URL=${server.url} TEND_TOKEN=${ingestToken}
            (cd examples/local-shop && ${process.execPath} ../../bin/tend.js --var port=${port} status)
            (cd examples/shop && KUBECONFIG=../../.demo/kubeconfig ${process.execPath} ../../bin/tend.js --var registry=${sim.registryHost} status)
            kubectl --kubeconfig .demo/kubeconfig get namespaces --show-labels
`);
  }

  const finish = async () => {
    step('cleaning up: stopping the local-shop service, kube-sim and the server');
    await tend([...shopVars, 'cleanup', 'env'], { cwd: localShop, env });
    if (existsSync(path.join(shop, 'tend.yml'))) {
      await tend(['--var', `registry=${sim.registryHost}`, 'cleanup', 'env'], { cwd: shop, env });
    }
    await server.close();
    await sim.stop();
  };
  if (exitAtOnce) {
    await finish();
    return;
  }
  console.log('Press Ctrl-C to stop the demo.');
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  await finish();
}

main().catch((error: unknown) => {
  console.error(`demo failed: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
