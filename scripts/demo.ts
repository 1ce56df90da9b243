/**
 * The demo (`npm run demo`): starts a local Kubernetes API simulator and a tend server (SQLite),
 * runs the example projects against both with the real CLI, and ends by printing the dashboard
 * URL and a read token. It keeps both running until Ctrl-C (or exits at once with --exit), then
 * cleans up what it deployed.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startKubeSim } from '../tools/kube-sim/src/index.js';
import { startServer } from '../src/server/start.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const tendBin = path.join(repoRoot, 'bin', 'tend.js');
const workDir = path.join(repoRoot, '.demo');
const exitAtOnce = process.argv.includes('--exit');

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

  step('starting tend server (SQLite)');
  const server = await startServer({ dataDir: serverData, port: 0, logLevel: 'warn' });
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

  const env = {
    TEND_SERVER_URL: server.url,
    TEND_TOKEN: ingestToken,
    KUBECONFIG: kubeconfig,
    TEND_DEMO_REGISTRY: sim.registryHost,
  };
  const localShop = path.join(repoRoot, 'examples', 'local-shop');
  const port = String(await freePort());
  const shopVars = ['--var', `port=${port}`];

  step('examples/local-shop: deploy, test and seed a local Node.js service (exec provider)');
  await must([...shopVars, 'deploy'], { cwd: localShop, env });
  await must([...shopVars, 'test'], { cwd: localShop, env });
  await must([...shopVars, 'run', 'seed'], { cwd: localShop, env });

  const shop = path.join(repoRoot, 'examples', 'shop');
  if (existsSync(path.join(shop, 'tend.yml'))) {
    step('examples/shop: build an image in the cluster, deploy it, run a test pod (kubernetes provider)');
    const shopEnv = { ...env };
    await must(['--var', `registry=${sim.registryHost}`, 'test'], { cwd: shop, env: shopEnv });
  }

  step("the server's view of the environments");
  await must(['environments'], { env: { TEND_SERVER_URL: server.url, TEND_TOKEN: readToken } });

  console.log(`
Dashboard:  ${server.url}/
Read token: ${readToken}
  (paste it into the dashboard's login form; the CLI above used an ingest token)
Try:        cd examples/local-shop && node ../../bin/tend.js --var port=${port} status
            cd examples/shop && KUBECONFIG=../../.demo/kubeconfig node ../../bin/tend.js --var registry=${sim.registryHost} status
            kubectl --kubeconfig .demo/kubeconfig get namespaces --show-labels
`);

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
