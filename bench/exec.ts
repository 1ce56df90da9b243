/**
 * The exec benchmark (issue 15): exec actions against the process-spawn floor, each measured in
 * the same run as its floors.
 *
 * - 500 exec Builds + 500 exec Tests (`echo`), first run of `tend test` (the whole CLI command),
 *   against `seq 1000 | xargs -P8 -n1 echo` and against Node spawning 1,000 `echo` 8 at a time;
 *   target ≤ 3× xargs.
 * - 200 exec `true` Builds (`tend build`), against spawning `true` 200 times, 8 at a time, from
 *   Node; target ≤ 1.15×.
 *
 * Each figure is the median of three runs. tend picks the Python spawn helper where a Python
 * runs (it does here); the same CLI runs with the Node helper (`TEND_EXEC_HELPER=node`) and with
 * `TEND_EXEC_HELPERS=0` (every command spawned by tend's own process) are shown beside them.
 */
import { spawn, spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { execProjectFiles, figure, median, ratio, tempProject, timeIt } from './support.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const tendBin = path.join(repoRoot, 'bin', 'tend.js');
const runs = 3;

/** `args` of the CLI in `root`, from a fresh `.tend` (nothing cached): the median of `runs`. */
async function firstRuns(root: string, args: string[], env: Record<string, string> = {}): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    rmSync(path.join(root, '.tend'), { recursive: true, force: true });
    times.push(
      await timeIt(() => {
        const result = spawnSync(process.execPath, [tendBin, ...args, '--root', root], {
          stdio: 'ignore',
          env: { ...process.env, CI: 'true', TEND_SERVER_URL: '', ...env },
        });
        if (result.status !== 0) throw new Error(`tend ${args.join(' ')} exited with ${result.status}`);
      }),
    );
  }
  return median(times);
}

async function medianOf(fn: () => Promise<unknown> | unknown): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) times.push(await timeIt(fn));
  return median(times);
}

/** Spawns `command` `count` times from this process, `concurrency` at a time, output read and dropped. */
async function spawnAll(command: string, args: string[], count: number, concurrency: number): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < count) {
      next++;
      const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
      child.stdout.resume();
      child.stderr.resume();
      await new Promise((resolve) => child.once('close', resolve));
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}

export async function run(): Promise<void> {
  console.log('exec: exec actions against spawning processes directly');

  const echoes = tempProject(execProjectFiles(500, 500));
  const xargs = await medianOf(() =>
    spawnSync('sh', ['-c', 'seq 1000 | xargs -P8 -n1 echo'], { stdio: 'ignore' }),
  );
  const nodeSpawn = await medianOf(() => spawnAll('echo', ['x'], 1000, 8));
  const viaTend = await firstRuns(echoes.root, ['test']);
  const nodeHelper = await firstRuns(echoes.root, ['test'], { TEND_EXEC_HELPER: 'node' });
  const withoutHelper = await firstRuns(echoes.root, ['test'], { TEND_EXEC_HELPERS: '0' });
  figure('floor: seq 1000 | xargs -P8 -n1 echo', xargs, 'ms');
  figure('floor: Node spawning 1,000 echo, 8 at a time', nodeSpawn, 'ms');
  figure('500 exec Builds + 500 exec Tests, first run (tend test)', viaTend, 'ms');
  figure('  the same, TEND_EXEC_HELPER=node (the Node spawn helper)', nodeHelper, 'ms');
  figure('  the same, TEND_EXEC_HELPERS=0 (no spawn helper)', withoutHelper, 'ms');
  ratio('1,000 exec actions vs xargs -P8', viaTend, xargs, 'xargs', { max: 3 });
  ratio('1,000 exec actions vs Node spawning 8 at a time', viaTend, nodeSpawn, 'Node spawn');
  ratio('  TEND_EXEC_HELPER=node vs xargs -P8', nodeHelper, xargs, 'xargs', { max: 3 });
  ratio('  TEND_EXEC_HELPERS=0 vs xargs -P8', withoutHelper, xargs, 'xargs', { max: 3 });
  echoes.remove();

  const truesProject = tempProject(execProjectFiles(200, 0, 'true'));
  const directSpawn = await medianOf(() => spawnAll('true', [], 200, 8));
  const trueViaTend = await firstRuns(truesProject.root, ['build']);
  const trueNodeHelper = await firstRuns(truesProject.root, ['build'], { TEND_EXEC_HELPER: 'node' });
  const trueWithoutHelper = await firstRuns(truesProject.root, ['build'], { TEND_EXEC_HELPERS: '0' });
  figure('floor: Node spawning `true` 200 times, 8 at a time', directSpawn, 'ms');
  figure('200 exec `true` actions via the CLI (whole command)', trueViaTend, 'ms', { max: 1500 });
  figure('  the same, TEND_EXEC_HELPER=node (the Node spawn helper)', trueNodeHelper, 'ms');
  figure('  the same, TEND_EXEC_HELPERS=0 (no spawn helper)', trueWithoutHelper, 'ms');
  ratio(
    '200 exec actions vs spawning `true` 200 times, 8 at a time',
    trueViaTend,
    directSpawn,
    'direct spawn',
    {
      max: 1.15,
    },
  );
  ratio('  TEND_EXEC_HELPER=node vs direct spawn', trueNodeHelper, directSpawn, 'direct spawn', {
    max: 1.15,
  });
  ratio('  TEND_EXEC_HELPERS=0 vs direct spawn', trueWithoutHelper, directSpawn, 'direct spawn', {
    max: 1.15,
  });
  truesProject.remove();
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) await run();
