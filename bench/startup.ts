/**
 * The start-up benchmark (issue 15): unchanged re-runs of exec projects through the real CLI
 * (`bin/tend.js`, as a user runs it), against yardsticks measured in the same run: `tend --version`
 * for the 500 Builds + 500 Tests re-run (target ≤ 3×; and ≤ 4.29× `node -e ""`, the issue's
 * 0.6 s at 0.14 s), `node -e ""` for the 100 Builds re-run (target 0.3 s at 0.14 s: ≤ 2.14×).
 * Also `tend --version` itself and the time to the first byte `tend build` prints.
 *
 * The projects are bench/support.ts's `execProjectFiles` (N exec Builds + M exec Tests, `echo`).
 */
import { spawn, spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { execProjectFiles, figure, median, ratio, tempProject } from './support.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const tendBin = path.join(repoRoot, 'bin', 'tend.js');
const runs = 7;

const env = { ...process.env, CI: 'true' };

function timeCommand(args: string[], cwd?: string): number {
  const start = performance.now();
  const result = spawnSync(process.execPath, args, { stdio: 'ignore', cwd, env });
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

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) await run();
