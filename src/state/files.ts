/**
 * The project-local state directory `.tend/`, the host's (`$TEND_STATE_DIR`), and how files in
 * them are written.
 * Every file tend rewrites is written atomically (temp file, fsync, rename) so a crash
 * leaves either the old or the new content, never a torn file.
 */
import { closeSync, fsyncSync, mkdirSync, openSync, readdirSync, renameSync, writeSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';

/** The project-local state directory's name, in the project root. */
const stateDirectory = '.tend';

/**
 * Directories never read as a project's files, at any depth — tend's state, VCS data, installed
 * packages: not hashed into versions, not searched for configuration, not read as kustomizations.
 */
export const unreadDirectories: readonly string[] = [stateDirectory, '.git', 'node_modules'];

export interface StatePaths {
  root: string;
  events: string;
  outbox: string;
  envs: string;
  cache: string;
}

export function statePaths(projectRoot: string): StatePaths {
  const root = path.join(projectRoot, stateDirectory);
  return {
    root,
    events: path.join(root, 'events'),
    outbox: path.join(root, 'outbox'),
    envs: path.join(root, 'envs'),
    cache: path.join(root, 'cache'),
  };
}

/**
 * The host's state directory, shared by every project of this user on this machine:
 * `$TEND_STATE_DIR`, else `$XDG_STATE_HOME/tend`, else `~/.local/state/tend`.
 */
export function hostStateDir(env: NodeJS.ProcessEnv = process.env): string {
  return (
    env.TEND_STATE_DIR || path.join(env.XDG_STATE_HOME || path.join(homedir(), '.local', 'state'), 'tend')
  );
}

/** Unique per process; with the pid, unique per machine (no entropy needed for a temp name). */
let tempCounter = 0;

/**
 * Writes a file atomically: a temp file renamed over the target. `durable` (the default) also
 * fsyncs it first, so it survives a machine crash; caches that can be recomputed skip that.
 */
export function writeFileAtomic(
  file: string,
  content: string | Uint8Array,
  mode = 0o644,
  { durable = true }: { durable?: boolean } = {},
): void {
  mkdirSync(path.dirname(file), { recursive: true });
  const temp = `${file}.${process.pid}.${++tempCounter}.tmp`;
  const fd = openSync(temp, 'w', mode);
  try {
    if (typeof content === 'string') writeSync(fd, content);
    else writeSync(fd, content);
    if (durable) fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(temp, file);
}

/** Parses a JSON Lines file, skipping a torn last line (a crash mid-write); reports what it skipped. */
export function parseJsonLines<T>(text: string): { records: T[]; skipped: number } {
  const records: T[] = [];
  let skipped = 0;
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (!line) continue;
    try {
      records.push(JSON.parse(line) as T);
    } catch {
      skipped++;
    }
  }
  return { records, skipped };
}

/**
 * The names (without the suffix) of the files in `dir` ending with `suffix`, sorted; none when
 * the directory does not exist. State files are named by ULID, so the order is creation order.
 */
export function listNamesWithSuffix(dir: string, suffix: string): string[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  return names
    .filter((n) => n.endsWith(suffix))
    .map((n) => n.slice(0, -suffix.length))
    .sort();
}
