/**
 * The exec plugin's environment: a directory `.tend/envs/<namespace>/` that holds the state and
 * logs of its local processes. Every handler that touches it reports it with `namespaceStatus`
 * (target `{kind: "local", hostId, path}`); read-only handlers never create it.
 */
import { existsSync, readFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { newId } from '../../events/bus.js';
import type { NamespaceStatusPayload, Target } from '../../events/catalog.js';
import { writeFileAtomic } from '../../state/files.js';
import type { PluginContext, PluginPayload } from '../../plugin/types.js';

interface EnvironmentRecord {
  uid: string;
  project: string;
  environment: string;
  createdAt: string;
  createdBy: string;
}

export function environmentDir(ctx: PluginContext): string {
  return path.join(ctx.tendDir, 'envs', ctx.environment.namespace);
}

export function localTarget(ctx: PluginContext): Target {
  return { kind: 'local', hostId: ctx.hostId, path: environmentDir(ctx) };
}

function readRecord(dir: string): EnvironmentRecord | undefined {
  try {
    return JSON.parse(readFileSync(path.join(dir, 'environment.json'), 'utf8')) as EnvironmentRecord;
  } catch {
    return undefined;
  }
}

function emitStatus(
  ctx: PluginContext,
  state: NamespaceStatusPayload['state'],
  cause: NamespaceStatusPayload['cause'],
  uid: string | undefined,
): void {
  const payload: PluginPayload<'namespaceStatus'> = {
    namespaceName: ctx.environment.namespace,
    state,
    role: 'app',
    cause,
    target: localTarget(ctx),
    project: ctx.environment.project,
    environment: ctx.environment.name,
  };
  if (uid) payload.namespaceUid = uid;
  ctx.events.emit('namespaceStatus', payload);
}

/** Read-only: reports the environment as it is (`ready` or `missing`), creates nothing. */
export function observeEnvironment(ctx: PluginContext): boolean {
  const dir = environmentDir(ctx);
  const record = existsSync(dir) ? readRecord(dir) : undefined;
  emitStatus(ctx, record ? 'ready' : 'missing', 'observed', record?.uid);
  return record !== undefined;
}

/** Ensures the environment directory exists, reporting `created` or `observed` before any work in it. */
export function ensureEnvironment(ctx: PluginContext): string {
  const dir = environmentDir(ctx);
  const existing = readRecord(dir);
  if (existing) {
    emitStatus(ctx, 'ready', 'observed', existing.uid);
    return dir;
  }
  const record: EnvironmentRecord = {
    uid: newId(),
    project: ctx.environment.project,
    environment: ctx.environment.name,
    createdAt: new Date().toISOString(),
    createdBy: ctx.user,
  };
  // Emitted before the work that can fail (docs/design.md#events): the record exists even if mkdir fails.
  emitStatus(ctx, 'ready', 'created', record.uid);
  mkdirSync(dir, { recursive: true });
  writeFileAtomic(path.join(dir, 'environment.json'), JSON.stringify(record, null, 2));
  return dir;
}

export function reportEnvironmentDeleted(ctx: PluginContext, uid: string | undefined): void {
  emitStatus(ctx, 'missing', 'deleted', uid);
}

export function environmentUid(ctx: PluginContext): string | undefined {
  return readRecord(environmentDir(ctx))?.uid;
}
