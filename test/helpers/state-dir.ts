/** A state directory (TEND_STATE_DIR: the host index of local environments) of the test file's own. */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll } from 'vitest';

/** Sets TEND_STATE_DIR to a fresh directory for the file's tests; removed at the end. */
export function useTempStateDir(): { readonly dir: string } {
  const state = { dir: '' };
  beforeAll(() => {
    state.dir = mkdtempSync(path.join(os.tmpdir(), 'tend-state-'));
    process.env.TEND_STATE_DIR = state.dir;
  });
  afterAll(() => {
    delete process.env.TEND_STATE_DIR;
    rmSync(state.dir, { recursive: true, force: true });
  });
  return state;
}
