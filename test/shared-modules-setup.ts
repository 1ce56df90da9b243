/**
 * For the test files that share a worker's modules (vitest.config.ts, project `shared-modules`):
 * a file that leaves process.env or the working directory changed fails, instead of changing
 * what the next file in the worker sees.
 */
import { afterAll, expect } from 'vitest';

const envBefore = { ...process.env };
const cwdBefore = process.cwd();

afterAll(() => {
  expect({ ...process.env }, 'process.env after this file (it shares its worker)').toEqual(envBefore);
  expect(process.cwd(), 'working directory after this file (it shares its worker)').toBe(cwdBefore);
});
