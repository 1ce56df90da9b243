/**
 * A spawn helper that dies before it is ready, or cannot start (src/plugins/exec/spawner.ts): it
 * never read a request, so tend starts what was queued to it itself, and every command after it.
 * The same for a Node helper (the default) and a Python one (TEND_EXEC_PYTHON): an opted-in
 * Python that is missing or too old does not fall back to Node. Each case loads the spawner
 * afresh: helpers turned off stay off for the module.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type * as Helpers from './exec-helpers.js';

const saved = ['TEND_EXEC_HELPERS', 'TEND_EXEC_PYTHON'].map((name) => [name, process.env[name]] as const);
const execPath = process.execPath;
afterEach(() => {
  for (const [name, value] of saved) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
  process.execPath = execPath;
});

let helpers: typeof Helpers;
beforeEach(async () => {
  vi.resetModules();
  helpers = await import('./exec-helpers.js');
  process.env.TEND_EXEC_HELPERS = '2';
  delete process.env.TEND_EXEC_PYTHON;
});

/** The parents of two commands started together (queued to the first helper), then of two more. */
async function parents(): Promise<{ queued: number[]; after: number[] }> {
  const queued = await Promise.all([helpers.parentOfCommand(), helpers.parentOfCommand()]);
  const after = [await helpers.parentOfCommand(), await helpers.parentOfCommand()];
  return { queued, after };
}

const programs = [
  { program: '/bin/false', why: 'exits at once, without saying it is ready' },
  { program: '/nonexistent/program', why: 'cannot be started' },
];

describe('a spawn helper that dies before it is ready', () => {
  it.each(programs)(
    'a Node one that $why: tend starts what was queued, and everything after',
    async ({ program }) => {
      // The helper runs tend's own Node: here, a program that is no Node.
      process.execPath = program;
      const pending = parents();
      process.execPath = execPath;
      const { queued, after } = await pending;
      expect([...queued, ...after]).toEqual([process.pid, process.pid, process.pid, process.pid]);
    },
  );

  it.each(programs)(
    'a Python one that $why: tend starts everything itself, no Node helper',
    async ({ program }) => {
      process.env.TEND_EXEC_PYTHON = program;
      const { queued, after } = await parents();
      expect([...queued, ...after]).toEqual([process.pid, process.pid, process.pid, process.pid]);
    },
  );
});
