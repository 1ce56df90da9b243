/**
 * The embedded executor: `tend server --kubeconfig <file> [--context a --context b]` cleans the
 * clusters of those contexts itself (and whatever `--plugin`/`--set` add), talking to its own job queue in-process. Its passes run in
 * the background until the server closes; closing lets the jobs in flight finish.
 */
import os from 'node:os';
import { cliVersion } from '../version.js';
import type { CleanupCallContext } from '../plugin/types.js';
import type { ServedPlugin } from '../router/cleanup.js';
import { CleanupExecutor, type PassReport } from './executor.js';
import { targetLabel, type ExecutorLogLevel } from './log.js';
import type { CleanupQueue } from '../cleanup/protocol.js';

export interface EmbeddedExecutorOptions {
  queue: CleanupQueue;
  /** What it serves (settings.ts `servedPlugins`). */
  plugins: readonly ServedPlugin[];
  protection: CleanupCallContext['protection'];
  /** Until the first heartbeat answers with the server's interval. */
  intervalMs: number;
  concurrency?: number;
  log: (level: ExecutorLogLevel, message: string) => void;
  onPass?: (report: PassReport) => void;
}

export interface EmbeddedExecutor {
  executor: CleanupExecutor;
  /** Stops after the pass in flight; resolves when it has. */
  stop(): Promise<void>;
}

export function startEmbeddedExecutor(options: EmbeddedExecutorOptions): EmbeddedExecutor {
  const executor = new CleanupExecutor({
    queue: options.queue,
    plugins: options.plugins,
    protection: options.protection,
    kind: 'embedded',
    name: `tend server on ${os.hostname()}`,
    version: cliVersion,
    intervalMs: options.intervalMs,
    ...(options.concurrency ? { concurrency: options.concurrency } : {}),
    log: options.log,
  });
  const controller = new AbortController();
  const running = executor.run(controller.signal, (report) => {
    for (const inventory of report.inventories) {
      if (!inventory.complete)
        options.log(
          'warn',
          `${targetLabel(report.targets.find((t) => t.targetKey === inventory.targetKey) ?? inventory)}: inventory incomplete: ${inventory.error}`,
        );
    }
    options.onPass?.(report);
  });
  running.catch((error: unknown) =>
    options.log('error', `the embedded executor stopped: ${(error as Error).message}`),
  );
  return {
    executor,
    async stop() {
      controller.abort();
      await running.catch(() => undefined);
    },
  };
}
