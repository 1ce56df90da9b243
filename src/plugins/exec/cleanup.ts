/**
 * The exec plugin's cleanup handlers (the `cleanup` part of the plugin contract), for
 * `tend agent --local`: the host's local environments as one target (`local/<hostId>`), the
 * host index as inventory, and the primitives the framework's checks call: read one environment
 * directory's record, remove it through `removeEnvironment` (the same path as `tend cleanup env`),
 * pause and resume its persistent processes, archive its state record.
 */
import path from 'node:path';
import type { EnvironmentArchive } from '../../cleanup/archive.js';
import type {
  CleanupActionResult,
  CleanupCallContext,
  CleanupInventory,
  CleanupResource,
  CleanupResourceRef,
  CleanupTarget,
} from '../../plugin/types.js';
import { listDeployStates } from './deploy.js';
import {
  listHostEnvironments,
  pauseEnvironment,
  readRecord,
  removeEnvironment,
  resumeEnvironment,
  type EnvironmentRecord,
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
    items: listed.environments.map(({ dir, record }) => resourceOf(dir, record)),
  };
}

/** An environment directory in tend's terms: no faked Kubernetes labels, its record's marks. */
function resourceOf(dir: string, record: EnvironmentRecord): CleanupResource {
  return {
    name: path.basename(dir),
    uid: record.uid,
    // The record never changes while the environment exists.
    version: record.uid,
    state: 'active',
    managedByTend: true,
    ...(record.project ? { project: record.project } : {}),
    ...(record.environment ? { environment: record.environment } : {}),
    role: 'app',
    adopted: false,
    detail: { path: dir },
  };
}

/** The environment directory the job's recorded target names (its `path`), as it is now. */
export async function read(
  _ctx: CleanupCallContext,
  _target: CleanupTarget,
  ref: CleanupResourceRef,
): Promise<CleanupResource | undefined> {
  if (ref.path === undefined || !path.isAbsolute(ref.path)) return undefined;
  const record = readRecord(ref.path);
  return record ? resourceOf(ref.path, record) : undefined;
}

const changed = (dir: string): CleanupActionResult => ({
  outcome: 'changed',
  message: `environment ${dir} changed since the check (another record); left alone`,
});

/**
 * The directory of a resource this plugin read, and its record again; or the answer when there
 * is none now (`gone`) or another one (`changed`).
 */
function current(
  resource: CleanupResource,
  uid: string,
): { dir: string; record: EnvironmentRecord } | CleanupActionResult {
  const dir = resource.detail!.path!;
  const record = readRecord(dir);
  if (!record) return { outcome: 'gone', message: `environment ${dir} does not exist (already gone)` };
  return record.uid === uid ? { dir, record } : changed(dir);
}

function reportRemoved(
  ctx: CleanupCallContext,
  target: CleanupTarget,
  dir: string,
  record: EnvironmentRecord,
) {
  ctx.events.emit('namespaceStatus', {
    namespaceName: path.basename(dir),
    namespaceUid: record.uid,
    state: 'missing',
    role: 'app',
    cause: 'deleted',
    target: { kind: 'local', hostId: target.targetKey.slice('local/'.length), path: dir },
    project: record.project,
    environment: record.environment,
  });
}

export async function remove(
  ctx: CleanupCallContext,
  target: CleanupTarget,
  resource: CleanupResource,
  precondition: { uid: string },
): Promise<CleanupActionResult> {
  const found = current(resource, precondition.uid);
  if ('outcome' in found) return found;
  const stopped = await removeEnvironment(found.dir);
  reportRemoved(ctx, target, found.dir, found.record);
  return { outcome: 'done', message: `stopped ${stopped} process(es) and removed ${found.dir}` };
}

export async function pause(
  _ctx: CleanupCallContext,
  _target: CleanupTarget,
  resource: CleanupResource,
  precondition: { uid: string },
): Promise<CleanupActionResult> {
  const found = current(resource, precondition.uid);
  if ('outcome' in found) return found;
  const paused = await pauseEnvironment(found.dir);
  return {
    outcome: 'done',
    message: `paused environment ${found.dir}: stopped ${paused} process(es), state kept`,
  };
}

export async function resume(
  ctx: CleanupCallContext,
  _target: CleanupTarget,
  resource: CleanupResource,
  precondition: { uid: string },
): Promise<CleanupActionResult> {
  const found = current(resource, precondition.uid);
  if ('outcome' in found) return found;
  const started = await resumeEnvironment(found.dir, ctx.signal);
  return {
    outcome: 'done',
    message: `resumed environment ${found.dir}: started ${started.length} process(es)${started.length ? ` (${started.join(', ')})` : ''}`,
  };
}

/** Its state record: what ran there and how (a restore starts it again with tend deploy). */
export async function archive(
  _ctx: CleanupCallContext,
  _target: CleanupTarget,
  resource: CleanupResource,
): Promise<EnvironmentArchive> {
  const dir = resource.detail!.path!;
  return {
    kind: 'exec',
    path: dir,
    state: { record: readRecord(dir), deploys: listDeployStates(dir) },
    notArchived: [`the files in ${dir} and what its processes wrote: only the state record is archived`],
  };
}
