/**
 * A spawn helper that dies before it is ready, or cannot start (src/plugins/exec/spawner.ts): it
 * never read a request, so tend starts what was queued to it itself, and every command after it.
 * Each case loads the spawner afresh: helpers turned off stay off for the module.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type * as Helpers from './exec-helpers.js';

const previous = process.env.TEND_EXEC_HELPERS;
const execPath = process.execPath;
afterEach(() => {
  if (previous === undefined) delete process.env.TEND_EXEC_HELPERS;
  else process.env.TEND_EXEC_HELPERS = previous;
  process.execPath = execPath;
});

let helpers: typeof Helpers;
beforeEach(async () => {
  vi.resetModules();
  helpers = await import('./exec-helpers.js');
  process.env.TEND_EXEC_HELPERS = '2';
});

/** The parents of two commands started together (queued to the first helper), then of two more. */
async function parents(): Promise<{ queued: number[]; after: number[] }> {
  const queued = await Promise.all([helpers.parentOfCommand(), helpers.parentOfCommand()]);
  const after = [await helpers.parentOfCommand(), await helpers.parentOfCommand()];
  return { queued, after };
}

describe('a spawn helper that dies before it is ready', () => {
  it.each([
    { program: '/bin/false', why: 'exits at once, without saying it is ready' },
    { program: '/nonexistent/node', why: 'cannot be started' },
  ])('one that $why: tend starts what was queued to it, and everything after', async ({ program }) => {
    // The helper runs tend's own Node: here, a program that is no Node.
    process.execPath = program;
    const pending = parents();
    process.execPath = execPath;
    const { queued, after } = await pending;
    expect([...queued, ...after]).toEqual([process.pid, process.pid, process.pid, process.pid]);
  });
});
