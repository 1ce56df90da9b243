/**
 * The start-up benchmark (issue 15): unchanged re-runs of exec projects through the real CLI
 * (`bin/tend.js`, as a user runs it), against yardsticks measured in the same run: `tend --version`
 * for the 500 Builds + 500 Tests re-run (target ≤ 3×; and ≤ 4.29× `node -e ""`, the issue's
 * 0.6 s at 0.14 s), `node -e ""` for the 100 Builds re-run (target 0.3 s at 0.14 s: ≤ 2.14×).
 * Also `tend --version` itself and the time to the first byte `tend build` prints; and the
 * launcher's two choices on the Node line it runs on (src/cli/launch.ts), each against the other
 * way: its own code cache against Node's module compile cache (Node 22 and later), and TurboFan
 * made to wait against V8's default, on a configuration parsed afresh (`npm run bench` on another
 * line: `bash scripts/node-line.sh run 22 npm run bench`).
 *
 * The projects are bench/support.ts's `execProjectFiles` (N exec Builds + M exec Tests, `echo`).
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { turbofanDelay } from '../src/cli/launch.js';
import { execProjectFiles, figure, median, ratio, tempProject } from './support.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const tendBin = path.join(repoRoot, 'bin', 'tend.js');
const runs = 7;

const env = { ...process.env, CI: 'true' };

function timeCommand(args: string[], cwd?: string, extraEnv: Record<string, string> = {}): number {
  const start = performance.now();
  const result = spawnSync(process.execPath, args, { stdio: 'ignore', cwd, env: { ...env, ...extraEnv } });
  const elapsed = performance.now() - start;
  if (result.status !== 0) throw new Error(`${args.join(' ')} exited with ${result.status}`);
  return elapsed;
}

/** Milliseconds from spawning `tend <args>` to its first byte on stdout or stderr. */
async function firstOutput(args: string[], cwd: string): Promise<number> {
  const start = performance.now();
  const child = spawn(process.execPath, [tendBin, ...args], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const first = await new Promise<number>((resolve, reject) => {
    const onData = () => resolve(performance.now() - start);
    child.stdout.once('data', onData);
    child.stderr.once('data', onData);
    child.once('error', reject);
  });
  child.stdout.resume();
  child.stderr.resume();
  await new Promise((resolve) => child.once('close', resolve));
  return first;
}

function verdict(
  name: string,
  value: number,
  yardstick: number,
  yardstickName: string,
  maxRatio: number,
): void {
  ratio(`  vs ${yardstickName} (target ≤ ${maxRatio.toFixed(2)}×)`, value, yardstick, yardstickName);
  console.log(
    `  ${name}: target ≤ ${maxRatio.toFixed(2)}× ${yardstickName}: ${value <= maxRatio * yardstick ? 'met' : 'NOT met'}`,
  );
}

export async function run(): Promise<void> {
  console.log(
    `startup: the CLI from bin/tend.js, median of ${runs} rounds (each round runs every command once)`,
  );
  const large = tempProject(execProjectFiles(500, 500));
  const small = tempProject(execProjectFiles(100, 0));
  // The first runs: every action runs once; what follows is unchanged.
  timeCommand([tendBin, 'test'], large.root);
  timeCommand([tendBin, 'build'], small.root);

  // Interleaved, so that a busy machine weighs on the yardsticks as on the commands.
  const times = {
    node: [] as number[],
    version: [] as number[],
    large: [] as number[],
    small: [] as number[],
    first: [] as number[],
  };
  for (let i = 0; i < runs; i++) {
    times.node.push(timeCommand(['-e', '']));
    times.version.push(timeCommand([tendBin, '--version']));
    times.large.push(timeCommand([tendBin, 'test'], large.root));
    times.small.push(timeCommand([tendBin, 'build'], small.root));
    times.first.push(await firstOutput(['build'], small.root));
  }
  launcherChoices(small.root, large.root);
  large.remove();
  small.remove();
  const nodeStart = median(times.node);
  const version = median(times.version);
  const largeRerun = median(times.large);
  const smallRerun = median(times.small);
  const first = median(times.first);

  figure('node -e "" (yardstick)', nodeStart, 'ms');
  figure('tend --version', version, 'ms');
  ratio('  vs node -e ""', version, nodeStart, 'node start-up');
  // The targets: 0.6 s at a 0.2 s `tend --version`, 0.3 s at a 0.14 s `node -e ""`.
  figure('500 exec Builds + 500 exec Tests, unchanged re-run', largeRerun, 'ms');
  verdict('500 + 500 re-run', largeRerun, version, 'tend --version', 3);
  verdict('500 + 500 re-run', largeRerun, nodeStart, 'node -e ""', 600 / 140);
  figure('100 exec Builds, unchanged re-run', smallRerun, 'ms');
  verdict('100 re-run', smallRerun, nodeStart, 'node -e ""', 300 / 140);
  figure('tend build (100 cached Builds): time to first output', first, 'ms');
  ratio('  vs node -e ""', first, nodeStart, 'node start-up');
}

/** The launcher's code cache against Node's, and TurboFan made to wait against V8's default. */
function launcherChoices(small: string, large: string): void {
  console.log(`the launcher's choices on Node ${process.version} (V8 ${process.versions.v8})`);
  const major = Number(process.versions.node.split('.')[0]);
  if (major >= 22) {
    const nodeCache = mkdtempSync(path.join(os.tmpdir(), 'tend-bench-node-cache-'));
    const viaNode = { TEND_COMPILE_CACHE: '0', NODE_COMPILE_CACHE: nodeCache };
    const times = { own: [] as number[], node: [] as number[] };
    timeCommand([tendBin, 'build'], small, viaNode);
    for (let i = 0; i < runs; i++) {
      times.own.push(timeCommand([tendBin, 'build'], small));
      times.node.push(timeCommand([tendBin, 'build'], small, viaNode));
    }
    rmSync(nodeCache, { recursive: true, force: true });
    figure("100 cached Builds, the launcher's code cache", median(times.own), 'ms');
    figure("100 cached Builds, Node's module compile cache instead", median(times.node), 'ms');
    ratio("  Node's cache vs the launcher's", median(times.node), median(times.own), "the launcher's");
  }
  const delay = turbofanDelay[Number(process.versions.v8.split('.')[0])];
  if (!delay) {
    console.log('  no TurboFan delay on this V8 line (not measured yet)');
    return;
  }
  // V8's own default, given to Node: the launcher then leaves the flag alone.
  const options = spawnSync(process.execPath, ['--v8-options'], { encoding: 'utf8' }).stdout;
  const fallback = new RegExp(`default: (${delay.flag}=\\d+)`).exec(options)?.[1];
  if (!fallback) throw new Error(`V8 ${process.versions.v8} lists no default for ${delay.flag}`);
  const config = path.join(large, '.tend', 'cache', 'config.json');
  const parse = (flags: string[]) => {
    rmSync(config, { force: true });
    return timeCommand([...flags, tendBin, 'validate'], large);
  };
  const times = { waiting: [] as number[], default: [] as number[] };
  for (let i = 0; i < runs; i++) {
    times.waiting.push(parse([]));
    times.default.push(parse([fallback]));
  }
  figure(
    `1,000 actions' configuration parsed afresh, ${delay.flag}=${delay.value}`,
    median(times.waiting),
    'ms',
  );
  figure(`1,000 actions' configuration parsed afresh, V8's ${fallback}`, median(times.default), 'ms');
  ratio("  V8's default vs the launcher's", median(times.default), median(times.waiting), "the launcher's");
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) await run();
