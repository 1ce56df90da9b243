import fg from 'fast-glob';
import { configDefaults, defineConfig } from 'vitest/config';

/**
 * Test files that run one after the other in a worker that keeps its imported modules (Vitest's
 * `isolate: false`): the in-process server tests. Importing src/server afresh (Fastify, Kysely,
 * TypeBox and every route) costs each file about 2 s of CPU; in a shared worker it is paid once
 * per worker. A file belongs here only if it leaves nothing behind for the next one: no
 * process.env change (test/shared-modules-setup.ts fails a file that leaves one), no module
 * mocks, spies or fake timers, no process listeners, no kube-sim through the Kubernetes test
 * helpers (they set KUBECONFIG and a world clock of the file's), no plugins loaded in process
 * (their event types are registered process-wide). The files that do, below, stay isolated.
 */
const isolatedServerFiles = [
  // process.env, kube-sim (KUBECONFIG, the world clock) or plugins loaded in process
  'test/server/cleanup/archive-attacks.test.ts',
  'test/server/cleanup/archive.test.ts',
  'test/server/cleanup/cli-schedules.test.ts',
  'test/server/cleanup/cli.test.ts',
  'test/server/cleanup/restore-job.test.ts',
  'test/server/cleanup/savings.test.ts',
  'test/server/cli.test.ts',
  'test/server/read-only-activity.test.ts',
  'test/server/webhook-cli.test.ts',
];
const sharedModuleFiles = fg.sync('test/server/**/*.test.ts', { ignore: isolatedServerFiles });

export default defineConfig({
  test: {
    pool: 'forks',
    // Most tests wait on servers, kube-sim and child processes, not the CPU: Vitest's default of
    // one worker per core but one leaves a 2-core machine running one file at a time.
    maxWorkers: 3,
    testTimeout: 60_000,
    hookTimeout: 60_000,
    reporters: ['default', './test/summary-reporter.ts'],
    projects: [
      {
        extends: true,
        test: {
          name: 'isolated',
          include: ['test/**/*.test.ts', 'tools/kube-sim/test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, ...sharedModuleFiles],
        },
      },
      {
        extends: true,
        test: {
          name: 'shared-modules',
          include: sharedModuleFiles,
          isolate: false,
          setupFiles: ['test/shared-modules-setup.ts'],
        },
      },
    ],
  },
});
