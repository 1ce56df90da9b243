/**
 * How spawn helpers come up (src/plugins/exec/spawner.ts), in a process that has none yet: a
 * command given while its helper is still starting waits for that helper instead of being forked
 * by tend, and a helper that dies before it is ready hands the commands queued to it back to
 * tend, which starts them itself from then on. (Helpers turned off stay off for the process: this
 * file has its own.)
 */
import { afterAll, describe, expect, it } from 'vitest';
import { runCommand } from '../../src/plugins/exec/process.js';
import type { PluginLog } from '../../src/plugin/types.js';
import { warmUpSpawnHelpers } from '../../src/plugins/exec/spawner.js';

const quiet: PluginLog = { debug() {}, info() {}, warn() {}, error() {}, output() {} };
const never = new AbortController().signal;

/** The parent (`$PPID`) of a command started now: a spawn helper's pid, or this process's. */
async function parentOfCommand(): Promise<number> {
  const result = await runCommand(
    { command: ['sh', '-c', 'echo "::output ppid=$PPID"'], cwd: process.cwd(), env: {} },
    quiet,
    never,
  );
  return Number(result.outputs.ppid);
}

const previous = process.env.TEND_EXEC_HELPERS;
const execPath = process.execPath;
afterAll(() => {
  if (previous === undefined) delete process.env.TEND_EXEC_HELPERS;
  else process.env.TEND_EXEC_HELPERS = previous;
  process.execPath = execPath;
});

describe('spawn helpers starting', () => {
  it('the first commands wait for the helper that is starting, none is forked by tend', async () => {
    process.env.TEND_EXEC_HELPERS = '1';
    warmUpSpawnHelpers(1);
    const parents = await Promise.all(Array.from({ length: 4 }, parentOfCommand));
    expect(parents).not.toContain(process.pid);
    expect(new Set(parents).size).toBe(1);
  });

  it('a helper that dies before it is ready: tend starts what was queued to it, and everything after', async () => {
    process.env.TEND_EXEC_HELPERS = '2';
    // The one helper ready is busy, so the next command starts a second helper and is queued to
    // it; that one is no Node and exits at once, without saying it is ready.
    const busy = runCommand({ command: ['sleep', '1'], cwd: process.cwd(), env: {} }, quiet, never);
    process.execPath = '/bin/false';
    const queued = parentOfCommand();
    process.execPath = execPath;
    expect(await queued).toBe(process.pid);
    expect((await busy).exitCode).toBe(0);
    // Helpers are off for this process: even the live helper is not used any more.
    expect(await parentOfCommand()).toBe(process.pid);
  });
});
