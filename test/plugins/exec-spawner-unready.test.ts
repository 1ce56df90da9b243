/**
 * A spawn helper that dies before it is ready, or cannot start (src/plugins/exec/spawner.ts): it
 * never read a request. A Python helper hands what was queued to it to Node helpers, which take
 * every command after it; a Node helper hands it to tend, which starts every command after it
 * itself; a Python asked for by name (TEND_EXEC_HELPER=python) does the same. Each case loads the
 * spawner afresh: helpers turned off stay off for the module.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type * as Helpers from './exec-helpers.js';

const saved = ['TEND_EXEC_HELPERS', 'TEND_EXEC_HELPER', 'TEND_EXEC_PYTHON'].map((name) => [
  name,
  process.env[name],
]);
const execPath = process.execPath;
afterEach(() => {
  for (const [name, value] of saved) {
    if (value === undefined) delete process.env[name!];
    else process.env[name!] = value;
  }
  process.execPath = execPath;
});

let helpers: typeof Helpers;
beforeEach(async () => {
  vi.resetModules();
  helpers = await import('./exec-helpers.js');
  process.env.TEND_EXEC_HELPERS = '2';
  delete process.env.TEND_EXEC_HELPER;
});

/** The parents of two commands started together (queued to the first helper), then of two more. */
async function parents(): Promise<{ queued: number[]; after: number[] }> {
  const queued = await Promise.all([helpers.parentOfCommand(), helpers.parentOfCommand()]);
  const after = [await helpers.parentOfCommand(), await helpers.parentOfCommand()];
  return { queued, after };
}

describe('a spawn helper that dies before it is ready', () => {
  it.each([
    { python: '/bin/false', why: 'exits at once, without saying it is ready' },
    { python: '/nonexistent/python3', why: 'cannot be started' },
  ])('a Python one that $why: Node helpers take what was queued, and what follows', async ({ python }) => {
    process.env.TEND_EXEC_PYTHON = python;
    const { queued, after } = await parents();
    for (const parent of [...queued, ...after]) {
      expect(parent).not.toBe(process.pid);
      expect(helpers.programOf(parent)).toBe('node');
    }
  });

  it('a Node one: tend starts what was queued to it, and everything after', async () => {
    process.env.TEND_EXEC_HELPER = 'node';
    // It is no Node and exits at once, without saying it is ready.
    process.execPath = '/bin/false';
    const pending = parents();
    process.execPath = execPath;
    const { queued, after } = await pending;
    expect([...queued, ...after]).toEqual([process.pid, process.pid, process.pid, process.pid]);
  });

  it('a Python asked for by name: tend starts everything itself, no Node helper', async () => {
    process.env.TEND_EXEC_HELPER = 'python';
    process.env.TEND_EXEC_PYTHON = '/bin/false';
    const { queued, after } = await parents();
    expect([...queued, ...after]).toEqual([process.pid, process.pid, process.pid, process.pid]);
  });
});
