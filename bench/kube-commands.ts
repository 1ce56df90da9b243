/**
 * The Kubernetes path of the CLI against kubectl: `tend status` and a cached `tend deploy` of
 * examples/shop (a container Build, a kubernetes Deploy, a pod Test) and of Garden's kustomize
 * example as Garden ships it (test/fixtures/garden-examples/kustomize: two kubernetes Deploys
 * rendered by `kubectl kustomize`, one a base, one an overlay of a base) through `bin/tend.js`,
 * each against `kubectl get ns` on the same kube-sim in the same run (target ≤ 2.5×), and a pod
 * Test whose container runs 0.3 s: the whole command beyond the pod's own 0.3 s (target ≤ 1.5 s).
 * `tend --version` is measured alongside, for what starting tend costs of it, and the floor of any
 * Kubernetes command on Node (kube/floor-get.cjs: Node itself lists the namespaces over HTTPS,
 * nothing of tend), for what of the ratio is Node's own and what is tend's.
 *
 * Then the same against a cluster that is not on the machine: through a proxy (kube/latency-proxy.ts)
 * that delays every chunk by `remoteDelayMs` each way, so that TLS handshakes and requests
 * pay a round trip, as against a real API server. Figures only (no target): they show what waiting
 * on the cluster costs a command beside its CPU, and whether tend's requests overlap its own work.
 *
 * Each command's CPU time (user + system of it and of what it ran, such as `kubectl kustomize`)
 * is printed beside its wall time: on a loaded machine the wall time says as much about the
 * neighbours as about tend, the CPU time much less.
 *
 * kube-sim runs in its own process (its CLI, as `npm run kube-sim` starts it), so that what is
 * measured is the client alone. The commands run interleaved, round after round, so that a busy
 * machine weighs on kubectl as on tend.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parse, stringify } from 'yaml';
import { childrenCpuMs, figure, interquartileMean, loadAverage, median, ratio } from './support.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const tendBin = path.join(repoRoot, 'bin', 'tend.js');
const kubectlBin = '/usr/bin/kubectl';
/**
 * 15: with 9, the ratio of one build moved by 0.1–0.2 from one run to the next (the medians of a
 * noisy machine's kubectl and tend, each of 9 samples); more rounds narrow that.
 */
const rounds = 15;
/** The delay each way of the proxy that stands for a cluster elsewhere (a 20 ms round trip). */
const remoteDelayMs = 10;
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

/** The first line of a child's stdout or stderr matching `pattern`: its first group. */
function announced(child: ChildProcess, stream: 'stdout' | 'stderr', pattern: RegExp): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    createInterface(child[stream]!).on('line', (line) => {
      const found = pattern.exec(line)?.[1];
      if (found) resolve(found);
      else process.stderr.write(`${line}\n`);
    });
    child.once('exit', (code) => reject(new Error(`${child.spawnargs.join(' ')} exited with ${code}`)));
  });
}

interface Kubeconfig {
  clusters: { name: string; cluster: { server: string; 'certificate-authority-data': string } }[];
  users: { name: string; user: { token: string } }[];
}

/**
 * What kube/floor-get.cjs reads (the cluster's address, CA and token, from kube-sim's kubeconfig),
 * and the same through the latency proxy, with the kubeconfig that goes through it.
 */
function clusterFiles(
  dir: string,
  kubeconfig: string,
  proxyPort: string,
): { floor: string; remoteFloor: string; remoteKubeconfig: string } {
  const config = parse(readFileSync(kubeconfig, 'utf8')) as Kubeconfig;
  const { server, 'certificate-authority-data': caData } = config.clusters[0]!.cluster;
  const proxied = `https://127.0.0.1:${proxyPort}`;
  const ca = Buffer.from(caData, 'base64').toString('utf8');
  const floorOf = (name: string, address: string) => {
    const file = path.join(dir, name);
    writeFileSync(file, JSON.stringify({ server: address, ca, token: config.users[0]!.user.token }));
    return file;
  };
  const remoteKubeconfig = path.join(dir, 'kubeconfig-remote');
  const remote = structuredClone(config);
  remote.clusters[0]!.cluster.server = proxied;
  writeFileSync(remoteKubeconfig, stringify(remote));
  return {
    floor: floorOf('floor.json', server),
    remoteFloor: floorOf('floor-remote.json', proxied),
    remoteKubeconfig,
  };
}

export async function run(): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tend-bench-kube-'));
  const kubeconfig = path.join(dir, 'kubeconfig');
  const sim = spawn(
    process.execPath,
    ['--import', 'tsx', path.join(repoRoot, 'tools/kube-sim/src/cli.ts'), '--kubeconfig', kubeconfig],
    { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let proxy: ChildProcess | undefined;
  try {
    const [registry, api] = await Promise.all([
      announced(sim, 'stderr', /registry http:\/\/([^,\s]+)/),
      announced(sim, 'stdout', /^https:\/\/(\S+)$/),
    ]);
    proxy = spawn(
      process.execPath,
      ['--import', 'tsx', path.join(repoRoot, 'bench/kube/latency-proxy.ts'), api, String(remoteDelayMs)],
      { cwd: repoRoot, stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const files = clusterFiles(dir, kubeconfig, await announced(proxy, 'stdout', /^listening (\d+)$/));
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
    const remoteEnv = { ...env, KUBECONFIG: files.remoteKubeconfig };
    timeCommand(process.execPath, [tendBin, ...vars, 'status'], shop, remoteEnv);
    timeCommand(process.execPath, [tendBin, ...context, 'deploy'], kustomize, remoteEnv);
    const loadBefore = loadAverage();
    const commands = {
      kubectl: new Samples(),
      floor: new Samples(),
      version: new Samples(),
      status: new Samples(),
      deploy: new Samples(),
      kustomizeStatus: new Samples(),
      kustomizeDeploy: new Samples(),
      test: new Samples(),
      remoteKubectl: new Samples(),
      remoteFloor: new Samples(),
      remoteStatus: new Samples(),
      remoteKustomizeDeploy: new Samples(),
    };
    const floorScript = path.join(repoRoot, 'bench/kube/floor-get.cjs');
    for (let i = 0; i < rounds; i++) {
      commands.kubectl.add(timeCommand(kubectlBin, ['get', 'ns'], shop, env));
      commands.floor.add(timeCommand(process.execPath, [floorScript, files.floor], shop, env));
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
      commands.remoteKubectl.add(timeCommand(kubectlBin, ['get', 'ns'], shop, remoteEnv));
      commands.remoteFloor.add(timeCommand(process.execPath, [floorScript, files.remoteFloor], shop, env));
      commands.remoteStatus.add(timeCommand(process.execPath, [tendBin, ...vars, 'status'], shop, remoteEnv));
      commands.remoteKustomizeDeploy.add(
        timeCommand(process.execPath, [tendBin, ...context, 'deploy'], kustomize, remoteEnv),
      );
    }
    const kubectl = commands.kubectl;
    console.log(
      `kubernetes commands against kube-sim, wall time: median of ${rounds} rounds; ` +
        `CPU time (user + system, with what the command ran): interquartile mean`,
    );
    console.log(`  load average (1, 5, 15 min): ${loadBefore} before the rounds, ${loadAverage()} after`);
    const compare = (name: string, measured: Samples, target?: { max: number }, yardstick = kubectl) => {
      figure(name, measured.wallMs, 'ms');
      ratio('  vs kubectl get ns', measured.wallMs, yardstick.wallMs, 'kubectl get ns', target);
      const cpu = measured.cpuMs;
      const kubectlCpu = yardstick.cpuMs;
      if (cpu === undefined || kubectlCpu === undefined) return;
      figure('  CPU time', cpu, 'ms');
      ratio('  CPU vs kubectl get ns', cpu, kubectlCpu, 'kubectl get ns CPU');
    };
    figure('kubectl get ns (yardstick)', kubectl.wallMs, 'ms');
    if (kubectl.cpuMs !== undefined) figure('  CPU time', kubectl.cpuMs, 'ms');
    compare('Node lists the namespaces itself (the floor: no tend)', commands.floor);
    compare('tend --version', commands.version);
    compare('tend status (examples/shop)', commands.status, { max: 2.5 });
    compare('tend deploy, cached (examples/shop)', commands.deploy, { max: 2.5 });
    compare("tend status (Garden's kustomize example)", commands.kustomizeStatus, { max: 2.5 });
    compare("tend deploy, cached (Garden's kustomize example)", commands.kustomizeDeploy, { max: 2.5 });
    figure(`tend test --force, a pod Test running ${podRunMs} ms`, commands.test.wallMs, 'ms');
    figure('  of it beyond the pod', commands.test.wallMs - podRunMs, 'ms', { max: 1500 });
    console.log(`the same cluster ${remoteDelayMs} ms away each way (kube/latency-proxy.ts; no target):`);
    const remote = commands.remoteKubectl;
    figure('kubectl get ns (yardstick)', remote.wallMs, 'ms');
    compare('Node lists the namespaces itself (the floor: no tend)', commands.remoteFloor, undefined, remote);
    compare('tend status (examples/shop)', commands.remoteStatus, undefined, remote);
    compare(
      "tend deploy, cached (Garden's kustomize example)",
      commands.remoteKustomizeDeploy,
      undefined,
      remote,
    );
  } finally {
    proxy?.kill('SIGTERM');
    sim.kill('SIGTERM');
    await new Promise((r) => (sim.exitCode !== null ? r(null) : sim.once('exit', r)));
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) await run();
