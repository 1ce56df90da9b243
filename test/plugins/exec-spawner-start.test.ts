/**
 * How spawn helpers come up (src/plugins/exec/spawner.ts), in a process that has none yet: a
 * command given while its helper is still starting waits for that helper instead of being forked
 * by tend. (A helper that dies before it is ready: exec-spawner-unready.test.ts, in a process of
 * its own, since it turns helpers off.)
 */
import { afterAll, describe, expect, it } from 'vitest';
import { parentOfCommand } from './exec-helpers.js';

const previous = process.env.TEND_EXEC_HELPERS;
afterAll(() => {
  if (previous === undefined) delete process.env.TEND_EXEC_HELPERS;
  else process.env.TEND_EXEC_HELPERS = previous;
});

describe('spawn helpers starting', () => {
  it('the first commands wait for the helper that is starting, none is forked by tend', async () => {
    process.env.TEND_EXEC_HELPERS = '1';
    const parents = await Promise.all(Array.from({ length: 4 }, parentOfCommand));
    expect(parents).not.toContain(process.pid);
    expect(new Set(parents).size).toBe(1);
  });
});
