/**
 * The exec plugin's environment: a directory `.tend/envs/<namespace>/` that holds the state and
 * logs of its local processes. Every handler that touches it reports it with `namespaceStatus`
 * (target `{kind: "local", hostId, path}`); read-only handlers never create it. Each environment
 * created is also listed in the host's index (`$TEND_STATE_DIR/local-environments/`, default
 * `~/.local/state/tend/`), which `tend agent --local` reads as its inventory. Removing an
 * environment (`tend cleanup env` and the executors) is `removeEnvironment`, one way for both.
 */
import { TendError } from '../../errors.js';
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

/**
 * The environment's record, or undefined when there is none (its directory or file does not
 * exist). A record that exists but cannot be read — permissions, a torn or foreign file — is an
 * error (TEND_EXEC_STATE), never "no environment": that would create a new record over it, or
 * report it gone.
 */
export function readRecord(dir: string): EnvironmentRecord | undefined {
  const file = path.join(dir, 'environment.json');
  let stamp: string;
  try {
    const st = statSync(file);
    stamp = `${st.ino} ${st.size} ${st.mtimeMs} ${st.ctimeMs}`;
  } catch (error) {
    readRecords.delete(file);
    if (isMissing(error)) return undefined;
    throw unreadable(file, error);
  }
  const known = readRecords.get(file);
  if (known?.stamp === stamp) return known.record;
  let record: unknown;
  try {
    record = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    readRecords.delete(file);
    if (isMissing(error)) return undefined;
    throw unreadable(file, error);
  }
  if (!isRecord(record)) throw unreadable(file, new Error('not an environment record'));
  readRecords.set(file, { stamp, record });
  return record;
}

const isMissing = (error: unknown) =>
  ['ENOENT', 'ENOTDIR'].includes((error as NodeJS.ErrnoException).code ?? '');

function isRecord(value: unknown): value is EnvironmentRecord {
  const r = value as Record<string, unknown> | null;
  return (
    typeof r === 'object' &&
    r !== null &&
    typeof r.uid === 'string' &&
    r.uid !== '' &&
    typeof r.project === 'string' &&
    typeof r.environment === 'string' &&
    typeof r.createdAt === 'string'
  );
}

function unreadable(file: string, error: unknown): TendError {
  return new TendError(
    'TEND_EXEC_STATE',
    `cannot read the environment record ${file}: ${(error as Error).message}`,
    {
      detail: { file, hint: 'restore the file, or remove the environment directory (tend cleanup env)' },
      cause: error,
    },
  );
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
  // Unknown is not idle: an entry or a record that cannot be read makes the list incomplete.
  const problems: string[] = [];
  for (const name of names) {
    const file = path.join(index, name);
    let dir: unknown;
    try {
      dir = (JSON.parse(readFileSync(file, 'utf8')) as { path?: unknown }).path;
    } catch (error) {
      if (isMissing(error)) continue; // removed since the directory was read
      problems.push(`cannot read the index entry ${file}: ${(error as Error).message}`);
      continue;
    }
    if (typeof dir !== 'string' || !path.isAbsolute(dir)) {
      problems.push(`the index entry ${file} names no environment directory`);
      continue;
    }
    let record: EnvironmentRecord | undefined;
    try {
      record = readRecord(dir);
    } catch (error) {
      problems.push((error as Error).message);
      continue;
    }
    if (record) environments.push({ dir, record });
    else if (!existsSync(dir)) rmSync(file, { force: true });
  }
  if (problems.length > 0)
    return { complete: false, error: problems.join('; ').slice(0, 4000), environments };
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
