/**
 * The exec plugin's cleanup handlers (the `cleanup` part of the plugin contract), for
 * `tend agent --local`: the host's local environments as one target (`local/<hostId>`), the
 * host index as inventory, and verify-and-remove of one environment directory through
 * `removeEnvironment`, the same path as `tend cleanup env`.
 */
import path from 'node:path';
import type { NamespaceStatusPayload } from '../../events/catalog.js';
import type {
  CleanupCallContext,
  CleanupInventory,
  CleanupJobSpec,
  CleanupResult,
  CleanupTarget,
} from '../../plugin/types.js';
import { TendError } from '../../errors.js';
import { listDeployStates } from './deploy.js';
import {
  listHostEnvironments,
  pauseEnvironment,
  readRecord,
  removeEnvironment,
  resumeEnvironment,
} from './environment.js';

export async function targets(ctx: CleanupCallContext): Promise<CleanupTarget[]> {
  return [
    {
      targetKey: `local/${ctx.hostId}`,
      pluginName: 'exec',
      description: `local environments of host ${ctx.hostId}`,
    },
  ];
}

export async function inventory(): Promise<CleanupInventory> {
  const listed = listHostEnvironments();
  return {
    complete: listed.complete,
    ...(listed.error ? { error: listed.error } : {}),
    // In the host index with a readable record: created by tend's exec provider, for that project and environment.
    items: listed.environments.map(({ dir, record }) => ({
      namespaceName: path.basename(dir),
      uid: record.uid,
      // The record never changes while the environment exists.
      version: record.uid,
      state: 'active' as const,
      managedByTend: true,
      ...(record.project ? { project: record.project } : {}),
      ...(record.environment ? { environment: record.environment } : {}),
      role: 'app' as const,
      adopted: false,
      detail: { path: dir },
    })),
  };
}

export async function verifyAndClean(
  ctx: CleanupCallContext,
  target: CleanupTarget,
  job: CleanupJobSpec,
): Promise<CleanupResult> {
  const recorded = job.target as { kind?: unknown; hostId?: unknown; path?: unknown };
  if (
    recorded.kind !== 'local' ||
    `local/${String(recorded.hostId)}` !== target.targetKey ||
    typeof recorded.path !== 'string' ||
    !path.isAbsolute(recorded.path)
  ) {
    return { outcome: 'cancelled', message: `the job's target is not a local environment of this host` };
  }
  const dir = recorded.path;
  const record = readRecord(dir);
  const report = (state: NamespaceStatusPayload['state'], cause: NamespaceStatusPayload['cause']) =>
    ctx.events.emit('namespaceStatus', {
      namespaceName: job.namespaceName,
      ...(record ? { namespaceUid: record.uid } : {}),
      state,
      role: 'app',
      cause,
      target: { kind: 'local', hostId: String(recorded.hostId), path: dir },
      project: job.project,
      environment: job.environment,
    });
  report(record ? 'ready' : 'missing', 'observed');
  if (!record) return { outcome: 'done', message: `environment ${dir} does not exist (already gone)` };
  const refusal =
    path.basename(dir) !== job.namespaceName
      ? `it is not the environment of namespace ${job.namespaceName}`
      : record.project !== job.project
        ? `it belongs to project "${record.project}"`
        : record.environment !== job.environment
          ? `it belongs to environment "${record.environment}"`
          : !job.namespaceUid || record.uid !== job.namespaceUid
            ? `it was re-created (uid ${record.uid}, the recorded one is ${job.namespaceUid ?? '(none)'})`
            : undefined;
  if (refusal) return { outcome: 'cancelled', message: `environment ${dir} left alone: ${refusal}` };
  if (job.dryRun) return { outcome: 'cancelled', message: `dry run: environment ${dir} passed every check` };
  // The server's last word right before the irreversible step: a command started since wins.
  const stop = await ctx.confirm?.();
  if (stop) return { outcome: 'cancelled', message: `environment ${dir} left alone: ${stop}` };
  if (job.action === 'pause') {
    const paused = await pauseEnvironment(dir);
    return {
      outcome: 'done',
      message: `paused environment ${dir}: stopped ${paused} process(es), state kept`,
    };
  }
  if (job.action === 'resume') {
    const started = await resumeEnvironment(dir, ctx.signal);
    return {
      outcome: 'done',
      message: `resumed environment ${dir}: started ${started.length} process(es)${started.length ? ` (${started.join(', ')})` : ''}`,
    };
  }
  if ((job.archive ?? 'none') !== 'none') {
    if (!ctx.archive) {
      throw new TendError(
        'TEND_ARCHIVE',
        `the job asks for an archive of environment ${dir} before its removal, and this executor cannot send one; not removed`,
      );
    }
    // Its state record: what ran there and how (a restore starts it again with tend deploy).
    await ctx.archive({
      kind: 'exec',
      path: dir,
      state: { record, deploys: listDeployStates(dir) },
      notArchived: [`the files in ${dir} and what its processes wrote: only the state record is archived`],
    });
  }
  const stopped = await removeEnvironment(dir);
  report('missing', 'deleted');
  return { outcome: 'done', message: `stopped ${stopped} process(es) and removed ${dir}` };
}
