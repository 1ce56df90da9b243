/**
 * The Kubernetes path of the CLI against kubectl: `tend status` and a cached `tend deploy` of
 * examples/shop (a container Build, a kubernetes Deploy, a pod Test) and of Garden's kustomize
 * example as Garden ships it (test/fixtures/garden-examples/kustomize: two kubernetes Deploys
 * rendered by `kubectl kustomize`, one a base, one an overlay of a base) through `bin/tend.js`,
 * each against `kubectl get ns` on the same kube-sim in the same run (target ≤ 2.5×), and a pod
 * Test whose container runs 0.3 s: the whole command beyond the pod's own 0.3 s (target ≤ 1.5 s).
 * `tend --version` is measured alongside, for what starting tend costs of it.
 *
 * Each command's CPU time (user + system of it and of what it ran, such as `kubectl kustomize`)
 * is printed beside its wall time: on a loaded machine the wall time says as much about the
 * neighbours as about tend, the CPU time much less.
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
import { childrenCpuMs, figure, interquartileMean, loadAverage, median, ratio } from './support.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const tendBin = path.join(repoRoot, 'bin', 'tend.js');
const kubectlBin = '/usr/bin/kubectl';
const rounds = 9;
/** The pod Test's container: `sleep 0.3` between two lines. */
const podRunMs = 300;

interface Sample {
  wallMs: number;
  /** undefined where the CPU time of children cannot be read (no /proc). */
  cpuMs: number | undefined;
}

function timeCommand(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv): Sample {
  const cpuBefore = childrenCpuMs();
  const start = performance.now();
  const result = spawnSync(command, args, { stdio: ['ignore', 'ignore', 'pipe'], cwd, env });
  const wallMs = performance.now() - start;
  const cpuAfter = childrenCpuMs();
  if (result.status !== 0) {
    throw new Error(`${command} ${args.join(' ')} exited with ${result.status}: ${result.stderr.toString()}`);
  }
  return {
    wallMs,
    cpuMs: cpuBefore === undefined || cpuAfter === undefined ? undefined : cpuAfter - cpuBefore,
  };
}

/** The samples of one command, round after round. */
class Samples {
  private readonly samples: Sample[] = [];

  add(sample: Sample): void {
    this.samples.push(sample);
  }

  get wallMs(): number {
    return median(this.samples.map((s) => s.wallMs));
  }

  /** CPU times come in ticks of 10 ms: the interquartile mean is robust like the median, and finer. */
  get cpuMs(): number | undefined {
    const cpu = this.samples.map((s) => s.cpuMs);
    return cpu.every((ms) => ms !== undefined) ? interquartileMean(cpu as number[]) : undefined;
  }
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
    // A compile cache of the bench's own: tend prunes the shared one to its newest builds, and other
    // checkouts' runs on the machine would leave these rounds without theirs.
    const env = {
      ...process.env,
      CI: 'true',
      KUBECONFIG: kubeconfig,
      XDG_CACHE_HOME: path.join(dir, 'cache'),
    };
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

    // Garden's kustomize example, unmodified; its local-kubernetes provider is pointed at kube-sim.
    const kustomize = path.join(dir, 'kustomize');
    cpSync(path.join(repoRoot, 'test', 'fixtures', 'garden-examples', 'kustomize'), kustomize, {
      recursive: true,
    });
    const context = ['--context', 'kube-sim'];

    // The first deploy builds and deploys; the first run of each command fills its code cache.
    timeCommand(process.execPath, [tendBin, ...vars, 'deploy'], shop, env);
    timeCommand(process.execPath, [tendBin, ...vars, 'status'], shop, env);
    timeCommand(process.execPath, [tendBin, ...context, 'deploy'], kustomize, env);
    timeCommand(process.execPath, [tendBin, ...context, 'status'], kustomize, env);
    timeCommand(process.execPath, [tendBin, 'test', '--force'], pods, env);
    const loadBefore = loadAverage();
    const commands = {
      kubectl: new Samples(),
      version: new Samples(),
      status: new Samples(),
      deploy: new Samples(),
      kustomizeStatus: new Samples(),
      kustomizeDeploy: new Samples(),
      test: new Samples(),
    };
    for (let i = 0; i < rounds; i++) {
      commands.kubectl.add(timeCommand(kubectlBin, ['get', 'ns'], shop, env));
      commands.version.add(timeCommand(process.execPath, [tendBin, '--version'], shop, env));
      commands.status.add(timeCommand(process.execPath, [tendBin, ...vars, 'status'], shop, env));
      commands.deploy.add(timeCommand(process.execPath, [tendBin, ...vars, 'deploy'], shop, env));
      commands.kustomizeStatus.add(
        timeCommand(process.execPath, [tendBin, ...context, 'status'], kustomize, env),
      );
      commands.kustomizeDeploy.add(
        timeCommand(process.execPath, [tendBin, ...context, 'deploy'], kustomize, env),
      );
      commands.test.add(timeCommand(process.execPath, [tendBin, 'test', '--force'], pods, env));
    }
    const kubectl = commands.kubectl;
    console.log(
      `kubernetes commands against kube-sim, wall time: median of ${rounds} rounds; ` +
        `CPU time (user + system, with what the command ran): interquartile mean`,
    );
    console.log(`  load average (1, 5, 15 min): ${loadBefore} before the rounds, ${loadAverage()} after`);
    const compare = (name: string, measured: Samples, target?: { max: number }) => {
      figure(name, measured.wallMs, 'ms');
      ratio('  vs kubectl get ns', measured.wallMs, kubectl.wallMs, 'kubectl get ns', target);
      const cpu = measured.cpuMs;
      const kubectlCpu = kubectl.cpuMs;
      if (cpu === undefined || kubectlCpu === undefined) return;
      figure('  CPU time', cpu, 'ms');
      ratio('  CPU vs kubectl get ns', cpu, kubectlCpu, 'kubectl get ns CPU');
    };
    figure('kubectl get ns (yardstick)', kubectl.wallMs, 'ms');
    if (kubectl.cpuMs !== undefined) figure('  CPU time', kubectl.cpuMs, 'ms');
    compare('tend --version', commands.version);
    compare('tend status (examples/shop)', commands.status, { max: 2.5 });
    compare('tend deploy, cached (examples/shop)', commands.deploy, { max: 2.5 });
    compare("tend status (Garden's kustomize example)", commands.kustomizeStatus, { max: 2.5 });
    compare("tend deploy, cached (Garden's kustomize example)", commands.kustomizeDeploy, { max: 2.5 });
    figure(`tend test --force, a pod Test running ${podRunMs} ms`, commands.test.wallMs, 'ms');
    figure('  of it beyond the pod', commands.test.wallMs - podRunMs, 'ms', { max: 1500 });
  } finally {
    sim.kill('SIGTERM');
    await new Promise((r) => (sim.exitCode !== null ? r(null) : sim.once('exit', r)));
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) await run();
