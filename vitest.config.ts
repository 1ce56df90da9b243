import fg from 'fast-glob';
import { configDefaults, defineConfig } from 'vitest/config';
import SlowFirstSequencer from './test/sequencer.js';

/**
 * Test files that run one after the other in a worker that keeps its imported modules (Vitest's
 * `isolate: false`). Importing src afresh for each file (for the server: Fastify, Kysely, TypeBox
 * and every route) costs each file one to two seconds of CPU; in a shared worker it is paid once
 * per worker. A file belongs here only if it leaves nothing behind for the next one: no
 * process.env or working directory change (test/shared-modules-setup.ts fails a file that leaves
 * one), no module mocks, spies or fake timers, no process listeners, no kube-sim through the
 * Kubernetes test helpers (they set KUBECONFIG and a world clock of the file's), no plugin event
 * types of its own (they are registered process-wide). The files that do stay isolated, listed
 * below. The server's files and the others share workers apart: the others load plugins in
 * process, whose event types the server would then know.
 */
const isolatedFiles = [
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
  'test/config/garden-files.test.ts', // process.chdir
  'test/plugins/exec-spawner-start.test.ts', // process.env
  'test/plugins/exec-spawner-unready.test.ts', // process.env, vi.resetModules
  'test/plugins/exec-spawner.test.ts', // process.env
  'test/plugins/validate.test.ts', // plugin event types of its own
  'test/events/cleanup-contract.test.ts', // process.env, kube-sim
  'test/stream/outbox.test.ts', // process.env
  'test/cli/conventions.test.ts', // kube-sim
  'test/commands/init.test.ts', // kube-sim
  'test/plugins/kubernetes/garden-helm-exec.test.ts', // process.env
  'test/plugins/kubernetes/garden-manifests.test.ts', // process.env
  'test/plugins/kubernetes/kustomize.test.ts', // process.env
  'test/plugins/kubernetes/requests.test.ts', // process.env
];
const sharedServerFiles = fg.sync('test/server/**/*.test.ts', { ignore: isolatedFiles });
const sharedOtherFiles = fg.sync(
  [
    'test/*.test.ts',
    'test/{cli,commands,config,events,expressions,graph,plugin,repository,router,session,stream}/**/*.test.ts',
    'test/plugins/{,kubernetes/}*.test.ts',
    'tools/kube-sim/test/**/*.test.ts',
  ],
  { ignore: isolatedFiles },
);
const shared = (name: string, include: string[]) => ({
  extends: true as const,
  test: { name, include, isolate: false, setupFiles: ['test/shared-modules-setup.ts'] },
});

export default defineConfig({
  test: {
    pool: 'forks',
    // Most tests wait on servers, kube-sim and child processes, not the CPU: Vitest's default of
    // one worker per core but one leaves a 2-core machine running one file at a time. Measured on
    // 2 cores, full runs without Vitest's cache: 3 workers 1,014 s; 4 workers with the slowest files
    // first (test/sequencer.ts) 836 to 917 s, the CPU still idle a third of the time; 5 workers,
    // the same tree and machine, 861 s against 917 s.
    maxWorkers: 5,
    sequence: { sequencer: SlowFirstSequencer },
    // Fails the run when a test left a process running (a server, a service, a wrapper's child).
    globalSetup: ['test/leftover-processes.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    reporters: ['default', './test/summary-reporter.ts'],
    projects: [
      {
        extends: true,
        test: {
          name: 'isolated',
          include: ['test/**/*.test.ts', 'tools/kube-sim/test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, ...sharedServerFiles, ...sharedOtherFiles],
        },
      },
      shared('shared-server', sharedServerFiles),
      shared('shared-units', sharedOtherFiles),
    ],
  },
});
