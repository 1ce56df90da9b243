/**
 * The graph benchmark (issue 2): start-up time, framework overhead per action for graphs of
 * no-op actions, an unchanged re-run, and peak memory. Baselines run in the same process:
 * `node -e ""` for start-up, direct handler calls for the framework overhead. (Exec actions
 * against spawning directly: bench/exec.ts.)
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { executeCommand } from '../src/commands/execute.js';
import { createNoopPlugin } from '../test/fixtures/noop-plugin.js';
import { figure, median, ratio, tempProject, timeIt } from './support.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const tendBin = path.join(repoRoot, 'bin', 'tend.js');

export function projectFiles(actions: number): Record<string, string> {
  const docs = [
    `kind: Project\nname: bench\ndefaultEnvironment: dev\nenvironments: [{ name: dev, defaultNamespace: bench-dev }]\nproviders: [{ name: noop }]\n`,
  ];
  for (let i = 0; i < actions; i++) {
    // A layered graph: every action after the first 10 depends on one of the previous ten.
    const dep = i >= 10 ? `dependencies: [build.a${i - 1 - (i % 10)}]\n` : '';
    docs.push(`kind: Build\ntype: noop\nname: a${i}\n${dep}spec: {}\n`);
  }
  return { 'tend.yml': docs.join('---\n') };
}

function spawnTimes(command: string, args: string[], runs: number): number[] {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    spawnSync(command, args, { stdio: 'ignore' });
    times.push(performance.now() - start);
  }
  return times;
}

export async function run(): Promise<void> {
  console.log('graph: start-up, framework overhead, memory');

  const nodeStart = median(spawnTimes(process.execPath, ['-e', ''], 7));
  const versionStart = median(spawnTimes(process.execPath, [tendBin, '--version'], 7));
  figure('tend --version (median of 7)', versionStart, 'ms', { max: 250 });
  ratio('tend --version vs node -e ""', versionStart, nodeStart, 'node start-up');

  // Silence the progress lines of in-process runs: they measure the terminal, not tend.
  const write = process.stderr.write.bind(process.stderr);
  const quiet = () => (process.stderr.write = (() => true) as typeof process.stderr.write);
  const loud = () => (process.stderr.write = write);

  for (const size of [100, 1000, 5000]) {
    const project = tempProject(projectFiles(size));
    const noop = createNoopPlugin();
    quiet();
    const first = await timeIt(() =>
      executeCommand('build', [], { root: project.root, concurrency: 8 }, [noop.plugin]),
    );
    const rerun = await timeIt(() =>
      executeCommand('build', [], { root: project.root, concurrency: 8 }, [noop.plugin]),
    );
    loud();
    // Baseline: the same handlers called directly, no framework around them.
    const handlers = noop.plugin.actionTypes[0]!.kinds.Build!.handlers;
    const direct = await timeIt(async () => {
      for (let i = 0; i < size; i++) {
        const action = { ref: `build.a${i}`, version: 'v', spec: {} } as never;
        await handlers.getStatus({} as never, { action, force: false });
        await handlers.build({} as never, { action, force: false });
      }
    });
    figure(`${size} no-op actions, first run`, first, 'ms');
    figure(
      `${size} no-op actions, framework overhead per action`,
      (first - direct) / size,
      'ms',
      size === 5000 ? { max: 0.5 } : undefined,
    );
    figure(
      `${size} no-op actions, unchanged re-run (all cached)`,
      rerun,
      'ms',
      size === 1000 ? { max: 1000 } : undefined,
    );
    ratio(`${size} no-op actions vs direct handler calls`, first, direct, 'direct');
    project.remove();
  }
  figure('peak memory (max RSS) after the 5,000-action runs', process.resourceUsage().maxRSS / 1024, 'MB', {
    max: 200,
  });
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) await run();
