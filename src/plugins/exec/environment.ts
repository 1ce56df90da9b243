/**
 * The exec plugin's environment: a directory `.tend/envs/<namespace>/` that holds the state and
 * logs of its local processes. Every handler that touches it reports it with `namespaceStatus`
 * (target `{kind: "local", hostId, path}`); read-only handlers never create it. Each environment
 * created is also listed in the host's index (`$TEND_STATE_DIR/local-environments/`, default
 * `~/.local/state/tend/`), which `tend agent --local` reads as its inventory. Removing an
 * environment (`tend cleanup env` and the executors) is `removeEnvironment`, one way for both.
 */
import { sha256Hex } from '../../hash.js';
import { existsSync, readFileSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import { newId } from '../../events/bus.js';
import type { NamespaceStatusPayload, Target } from '../../events/catalog.js';
import { removeResults } from '../../plugin/results.js';
import { writeFileAtomic } from '../../state/files.js';
import type { PluginContext, PluginPayload } from '../../plugin/types.js';
import { listDeployStates, pausePersistent, resumePersistent, stopPersistent } from './deploy.js';

export interface EnvironmentRecord {
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

/**
 * The records read by this process, each with the file's identity then: a command's many status
 * calls stat the file instead of reading it again. A file replaced (written atomically: another
 * inode) or removed since is read again, or found missing.
 */
const readRecords = new Map<string, { stamp: string; record: EnvironmentRecord }>();

export function readRecord(dir: string): EnvironmentRecord | undefined {
  const file = path.join(dir, 'environment.json');
  try {
    const st = statSync(file);
    const stamp = `${st.ino} ${st.size} ${st.mtimeMs} ${st.ctimeMs}`;
    const known = readRecords.get(file);
    if (known?.stamp === stamp) return known.record;
    const record = JSON.parse(readFileSync(file, 'utf8')) as EnvironmentRecord;
    readRecords.set(file, { stamp, record });
    return record;
  } catch {
    readRecords.delete(file);
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
  const record = readRecord(environmentDir(ctx));
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
  indexEnvironment(dir, ctx.log);
  return dir;
}

/** The host's index of local environments: one small file per environment directory. */
export function hostIndexDir(env: NodeJS.ProcessEnv = process.env): string {
  const state =
    env.TEND_STATE_DIR || path.join(env.XDG_STATE_HOME || path.join(homedir(), '.local', 'state'), 'tend');
  return path.join(state, 'local-environments');
}

function indexFile(dir: string): string {
  return path.join(hostIndexDir(), `${sha256Hex(dir).slice(0, 32)}.json`);
}

function indexEnvironment(dir: string, log: PluginContext['log']): void {
  try {
    writeFileAtomic(indexFile(dir), JSON.stringify({ path: dir }), 0o600, { durable: false });
  } catch (error) {
    // The environment works without it; only `tend agent --local` would not see it.
    log.warn(`could not list ${dir} in the host index ${hostIndexDir()}: ${(error as Error).message}`);
  }
}

/**
 * The environment directories of this host that still exist, with their records. Entries of
 * removed directories are dropped. `complete` is false when the index cannot be read.
 */
export function listHostEnvironments(): {
  complete: boolean;
  error?: string;
  environments: { dir: string; record: EnvironmentRecord }[];
} {
  const index = hostIndexDir();
  let names: string[];
  try {
    names = existsSync(index) ? readdirSync(index).filter((n) => n.endsWith('.json')) : [];
  } catch (error) {
    return { complete: false, error: `cannot read ${index}: ${(error as Error).message}`, environments: [] };
  }
  const environments: { dir: string; record: EnvironmentRecord }[] = [];
  for (const name of names) {
    const file = path.join(index, name);
    let dir: string;
    try {
      dir = (JSON.parse(readFileSync(file, 'utf8')) as { path: string }).path;
    } catch {
      continue; // being written, or torn: the next pass sees it
    }
    const record = readRecord(dir);
    if (record) environments.push({ dir, record });
    else if (!existsSync(dir)) rmSync(file, { force: true });
  }
  return { complete: true, environments };
}

/**
 * Removes an environment: stops its persistent processes, deletes its directory, its cached
 * results and its index entry. Returns how many processes it stopped.
 */
export async function removeEnvironment(dir: string): Promise<number> {
  const states = listDeployStates(dir);
  for (const state of states) await stopPersistent(dir, state);
  rmSync(dir, { recursive: true, force: true });
  const envsDir = path.dirname(dir);
  if (path.basename(envsDir) === 'envs') {
    const tendDir = path.dirname(envsDir);
    removeResults(tendDir, path.basename(dir));
  }
  rmSync(indexFile(dir), { force: true });
  return states.length;
}

export function reportEnvironmentDeleted(ctx: PluginContext, uid: string | undefined): void {
  emitStatus(ctx, 'missing', 'deleted', uid);
}

export function environmentUid(ctx: PluginContext): string | undefined {
  return readRecord(environmentDir(ctx))?.uid;
}

/** Pause: stops the environment's persistent processes, keeping their state. Returns how many it stopped. */
export async function pauseEnvironment(dir: string): Promise<number> {
  let stopped = 0;
  for (const state of listDeployStates(dir)) if (await pausePersistent(dir, state)) stopped++;
  return stopped;
}

/** Resume: starts the paused persistent processes again. Returns their names. */
export async function resumeEnvironment(dir: string, signal: AbortSignal): Promise<string[]> {
  const started: string[] = [];
  for (const state of listDeployStates(dir)) {
    if (!state.pausedAt) continue;
    await resumePersistent(dir, state, signal);
    started.push(state.name);
  }
  return started;
}
