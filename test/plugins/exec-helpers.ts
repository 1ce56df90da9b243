/** What the exec plugin's spawner tests share: the signal nobody aborts, a command's parent. */
import { readFileSync } from 'node:fs';
import { runCommand } from '../../src/plugins/exec/process.js';
import type { PluginLog } from '../../src/plugin/types.js';

export const quiet: PluginLog = { debug() {}, info() {}, warn() {}, error() {}, output() {} };
export const never = new AbortController().signal;

/** The parent (`$PPID`) of a command started now: a spawn helper's pid, or this process's. */
export async function parentOfCommand(): Promise<number> {
  const result = await runCommand(
    { command: ['sh', '-c', 'echo "::output ppid=$PPID"'], cwd: process.cwd(), env: {} },
    quiet,
    never,
  );
  return Number(result.outputs.ppid);
}

/** The program a process runs (`node`, `sh`, …), from /proc. */
export function programOf(pid: number): string {
  // The program's file name (argv[0]), not /proc/<pid>/comm: Node 24 names its main thread
  // "MainThread", and comm is the thread's name.
  const argv0 = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0] ?? '';
  return argv0.slice(argv0.lastIndexOf('/') + 1);
}
