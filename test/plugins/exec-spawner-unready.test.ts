/**
 * A spawn helper that dies before it is ready (src/plugins/exec/spawner.ts): it never read a
 * request, so tend starts what was queued to it itself, and every command after it (helpers are
 * off for the process). Its own file: helpers turned off stay off.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { parentOfCommand } from './exec-helpers.js';

const previous = process.env.TEND_EXEC_HELPERS;
const execPath = process.execPath;
afterAll(() => {
  if (previous === undefined) delete process.env.TEND_EXEC_HELPERS;
  else process.env.TEND_EXEC_HELPERS = previous;
  process.execPath = execPath;
});

describe('a spawn helper that dies before it is ready', () => {
  it('tend starts what was queued to it, and everything after', async () => {
    process.env.TEND_EXEC_HELPERS = '2';
    // No helper runs yet: the first commands start one and are queued to it. It is no Node and
    // exits at once, without saying it is ready.
    process.execPath = '/bin/false';
    const queued = Promise.all([parentOfCommand(), parentOfCommand()]);
    process.execPath = execPath;
    expect(await queued).toEqual([process.pid, process.pid]);
    // Helpers are off for this process: none starts any more.
    expect(await parentOfCommand()).toBe(process.pid);
    expect(await parentOfCommand()).toBe(process.pid);
  });
});
