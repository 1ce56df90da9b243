/**
 * A restore job at the executor (docs/cleanup.md#undo): the archive from the server, then a
 * restore session like `tend restore`'s — `sessionStarted` (command `restore`, the person who
 * asked, the environment's policy and pull request), the plugin's `restore` handler through the
 * router (its namespace created through the namespace gate, reported `created`), and
 * `sessionCompleted` or `sessionFailed`. The session's streamed events go back with the job's
 * outcome, and the server records them as it records a command's.
 */
import { TendError } from '../errors.js';
import { SessionBus } from '../events/bus.js';
import { isStreamedType, type TendEvent } from '../events/catalog.js';
import { statusReportOf } from '../events/resource-status.js';
import type { CleanupJob, CleanupQueue, RestoreOrder } from '../cleanup/protocol.js';
import type { CleanupCallContext, CleanupResult, CleanupTarget, RestoreResult } from '../plugin/types.js';
import { CleanupRouter, type ServedPlugin } from '../router/cleanup.js';
import { cliVersion } from '../version.js';
import { logPluginEvents, type ExecutorLogger } from './log.js';

export interface RestoreSessionOptions {
  queue: CleanupQueue;
  executorId: string;
  served: ServedPlugin;
  target: CleanupTarget;
  job: CleanupJob;
  protection: CleanupCallContext['protection'];
  hostId: string;
  signal: AbortSignal;
  log: ExecutorLogger;
}

/** The outcome to report, with the session's events (none when the archive could not be read). */
export async function runRestoreSession(
  o: RestoreSessionOptions,
): Promise<CleanupResult & { events: TendEvent[] }> {
  const { job } = o;
  let order: RestoreOrder;
  try {
    order = await o.queue.restoreOrder(job.id, o.executorId);
  } catch (error) {
    return {
      outcome: 'failed',
      message: `the archive could not be read: ${(error as Error).message}`,
      events: [],
    };
  }
  const bus = new SessionBus();
  const events: TendEvent[] = [];
  // The moment the namespace exists, the server records it (owned from then on, even if the
  // executor dies before it reports the outcome); the outcome carries every event again.
  let early: Promise<unknown> | undefined;
  bus.on('*', (event) => {
    if (!isStreamedType(event.type)) return;
    events.push(event);
    if (!early && statusReportOf(event)?.payload.cause === 'created') {
      early = o.queue
        .restoreEvents(job.id, { executorId: o.executorId, events: [...events] })
        .catch((error: unknown) =>
          o.log(
            'warn',
            `${job.namespaceName}: the created namespace could not be recorded yet (${(error as Error).message}); it is reported with the outcome`,
          ),
        );
    }
  });
  logPluginEvents(bus, o.log);
  const startedAt = Date.now();
  const into = job.namespaceName !== order.restorable.namespaceName;
  bus.emit('sessionStarted', {
    command: 'restore',
    args: [job.environmentId, ...(into ? ['--into', job.namespaceName] : [])],
    project: job.project,
    environment: job.environment,
    namespace: job.namespaceName,
    user: order.requestedBy.slice(0, 253) || 'unknown',
    hostId: o.hostId.slice(0, 253),
    cliVersion,
    ...(order.cleanupPolicy ? { cleanupPolicy: order.cleanupPolicy } : {}),
    ...(order.pullRequest ? { pullRequest: order.pullRequest } : {}),
  });
  const router = new CleanupRouter({
    bus,
    protection: o.protection,
    user: order.requestedBy,
    hostId: o.hostId,
  });
  let result: RestoreResult;
  try {
    result = await router.restore(
      o.served,
      o.target,
      job,
      { archive: order.restorable.archive, missingSecrets: order.restorable.missingSecrets },
      o.signal,
    );
  } catch (error) {
    await early;
    const code = error instanceof TendError ? error.code : 'TEND_INTERNAL';
    const message = (error as Error).message;
    bus.emit('sessionFailed', {
      durationMs: Date.now() - startedAt,
      error: { code, message: message.slice(0, 4000) },
    });
    bus.close();
    // A refusal (the namespace exists again, a protected name) is final; anything else is retried.
    return { outcome: code === 'TEND_ARCHIVE' ? 'cancelled' : 'failed', message, events };
  }
  await early;
  bus.emit('sessionCompleted', {
    durationMs: Date.now() - startedAt,
    succeeded: result.restored.length,
    cached: 0,
    failed: result.notRestored.length,
    aborted: 0,
  });
  bus.close();
  const notRestored = result.notRestored.map(({ what, why }) => `${what} (${why})`);
  return {
    outcome: 'done',
    message:
      `restored ${result.restored.length} object(s) into ${o.served.plugin.cleanup.words?.resource ?? 'resource'} ${result.namespace} from the archive of ${order.restorable.createdAt}` +
      (notRestored.length > 0 ? `; not restored: ${notRestored.join('; ')}` : ''),
    events,
  };
}
