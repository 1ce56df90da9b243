import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'tools/kube-sim/test/**/*.test.ts'],
    pool: 'forks',
    // Most tests wait on servers, kube-sim and child processes, not the CPU: Vitest's default of
    // one worker per core but one leaves a 2-core machine running one file at a time.
    maxWorkers: 3,
    testTimeout: 60_000,
    hookTimeout: 60_000,
    reporters: ['default', './test/summary-reporter.ts'],
  },
});
