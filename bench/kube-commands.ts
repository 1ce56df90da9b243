/**
 * The Kubernetes path of the CLI against kubectl: `tend status` and a cached `tend deploy` of
 * examples/shop (a container Build, a kubernetes Deploy, a pod Test) through `bin/tend.js`, each
 * against `kubectl get ns` on the same kube-sim in the same run (target ≤ 2.5×), and a pod Test
 * whose container runs 0.3 s: the whole command beyond the pod's own 0.3 s (target ≤ 1.5 s).
 * `tend --version` is measured alongside, for what starting tend costs of it.
 *
 * kube-sim runs in its own process (its CLI, as `npm run kube-sim` starts it), so that what is
 * measured is the client alone. The commands run interleaved, round after round, so that a busy
 * machine weighs on kubectl as on tend.
 */
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { figure, median, ratio } from './support.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const tendBin = path.join(repoRoot, 'bin', 'tend.js');
const kubectlBin = '/usr/bin/kubectl';
const rounds = 9;
/** The pod Test's container: `sleep 0.3` between two lines. */
const podRunMs = 300;

function timeCommand(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv): number {
  const start = performance.now();
  const result = spawnSync(command, args, { stdio: ['ignore', 'ignore', 'pipe'], cwd, env });
  const elapsed = performance.now() - start;
  if (result.status !== 0) {
    throw new Error(`${command} ${args.join(' ')} exited with ${result.status}: ${result.stderr.toString()}`);
  }
  return elapsed;
}

export async function run(): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tend-bench-kube-'));
  const kubeconfig = path.join(dir, 'kubeconfig');
  const sim = spawn(
    process.execPath,
    ['--import', 'tsx', path.join(repoRoot, 'tools/kube-sim/src/cli.ts'), '--kubeconfig', kubeconfig],
    { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  try {
    const registry = await new Promise<string>((resolve, reject) => {
      createInterface(sim.stderr).on('line', (line) => {
        const host = /registry http:\/\/([^,\s]+)/.exec(line)?.[1];
        if (host) resolve(host);
        else process.stderr.write(`${line}\n`);
      });
      sim.once('exit', (code) => reject(new Error(`kube-sim exited with ${code}`)));
    });
    sim.stdout.resume();
    const env = { ...process.env, CI: 'true', KUBECONFIG: kubeconfig };
    const shop = path.join(dir, 'shop');
    cpSync(path.join(repoRoot, 'examples', 'shop'), shop, { recursive: true });
    const vars = ['--var', `registry=${registry}`];
    const pods = path.join(dir, 'pods');
    mkdirSync(pods);
    writeFileSync(
      path.join(pods, 'tend.yml'),
      'kind: Project\nname: pods\ndefaultEnvironment: dev\n' +
        'environments: [{ name: dev, defaultNamespace: bench-pods }]\n' +
        'providers: [{ name: kubernetes, context: kube-sim }]\n---\n' +
        'kind: Test\ntype: kubernetes-pod\nname: short\n' +
        `spec: { image: alpine, command: [sh, -c, "echo one && sleep ${podRunMs / 1000} && echo two"] }\n`,
    );

    // The first deploy builds and deploys; the first run of each command fills its code cache.
    timeCommand(process.execPath, [tendBin, ...vars, 'deploy'], shop, env);
    timeCommand(process.execPath, [tendBin, ...vars, 'status'], shop, env);
    timeCommand(process.execPath, [tendBin, 'test', '--force'], pods, env);
    const times = {
      kubectl: [] as number[],
      version: [] as number[],
      status: [] as number[],
      deploy: [] as number[],
      test: [] as number[],
    };
    for (let i = 0; i < rounds; i++) {
      times.kubectl.push(timeCommand(kubectlBin, ['get', 'ns'], shop, env));
      times.version.push(timeCommand(process.execPath, [tendBin, '--version'], shop, env));
      times.status.push(timeCommand(process.execPath, [tendBin, ...vars, 'status'], shop, env));
      times.deploy.push(timeCommand(process.execPath, [tendBin, ...vars, 'deploy'], shop, env));
      times.test.push(timeCommand(process.execPath, [tendBin, 'test', '--force'], pods, env));
    }
    const kubectl = median(times.kubectl);
    console.log(`kubernetes commands against kube-sim, median of ${rounds} rounds`);
    figure('kubectl get ns (yardstick)', kubectl, 'ms');
    figure('tend --version', median(times.version), 'ms');
    ratio('  vs kubectl get ns', median(times.version), kubectl, 'kubectl get ns');
    figure('tend status (examples/shop)', median(times.status), 'ms');
    ratio('  vs kubectl get ns', median(times.status), kubectl, 'kubectl get ns', { max: 2.5 });
    figure('tend deploy, cached (examples/shop)', median(times.deploy), 'ms');
    ratio('  vs kubectl get ns', median(times.deploy), kubectl, 'kubectl get ns', { max: 2.5 });
    figure(`tend test --force, a pod Test running ${podRunMs} ms`, median(times.test), 'ms');
    figure('  of it beyond the pod', median(times.test) - podRunMs, 'ms', { max: 1500 });
  } finally {
    sim.kill('SIGTERM');
    await new Promise((r) => (sim.exitCode !== null ? r(null) : sim.once('exit', r)));
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) await run();
