/**
 * Results of completed actions by version, so that a Build, Test or Run already done for its
 * version is not done again. A cache: after a crash a missing or torn result only means the
 * action runs again.
 *
 * Each scope (an environment namespace, or `_builds`) is a directory `.tend/cache/results/<scope>/`
 * of append-only journals, JSON Lines, one per process that wrote to it (`<ulid>-<pid>.jsonl`):
 * a result is one line handed to the OS as it is recorded (a process killed right after keeps
 * it), instead of a file per result. A record carries an id (`at`, a ULID, ordered across
 * processes by time); the latest record of a ref wins, a `deleted` one removes it. A process reads
 * a scope's journals once, then keeps them up to date with its own records. When a scope holds
 * many journals, the reader merges them into one (`<ulid>.merged.jsonl`, written atomically)
 * and removes the journals whose process is gone. A torn or damaged line is skipped. Results
 * that tend before the journals wrote (`<ref>.json`) are still read.
 */
import { Type } from 'typebox';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { newId } from '../events/bus.js';
import { redactSecretsIn } from '../redact.js';
import { AnyKey, schemaCheck } from '../schema-check.js';
import { AppendFile } from '../state/append-file.js';
import { parseJsonLines, writeFileAtomic } from '../state/files.js';
import type { Outputs } from './types.js';

export interface StoredResult {
  version: string;
  outputs: Outputs;
  completedAt: string;
  exitCode?: number;
}

/** One line of a journal. */
interface ResultRecord {
  at: string;
  ref: string;
  result?: StoredResult;
  deleted?: true;
}

/** Journals a scope may have before a reader merges them. */
const mergeAbove = 16;

interface Scope {
  records: Map<string, ResultRecord>;
  /** The refs with a result from before the journals (`<ref>.json`), as listed when the scope was read. */
  legacy: Set<string>;
  journal?: AppendFile;
}

const scopes = new Map<string, Scope>();

function scopeDir(tendDir: string, scope: string): string {
  return path.join(tendDir, 'cache', 'results', scope);
}

const ResultRecordSchema = Type.Union([
  Type.Object({ at: Type.String(), ref: Type.String(), deleted: Type.Literal(true) }),
  Type.Object({
    at: Type.String(),
    ref: Type.String(),
    result: Type.Object({
      version: Type.String(),
      outputs: Type.Record(AnyKey(), Type.String()),
      completedAt: Type.String(),
      exitCode: Type.Optional(Type.Number()),
    }),
  }),
]);

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function load(dir: string): Scope {
  const records = new Map<string, ResultRecord>();
  const legacy = new Set<string>();
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return { records, legacy };
  }
  for (const name of names) if (name.endsWith('.json')) legacy.add(name.slice(0, -'.json'.length));
  names = names.filter((name) => name.endsWith('.jsonl'));
  for (const name of names) {
    let text: string;
    try {
      text = readFileSync(path.join(dir, name), 'utf8');
    } catch {
      continue; // merged and removed meanwhile: its records are in the merged journal
    }
    for (const record of parseJsonLines<unknown>(text).records) {
      if (!schemaCheck(ResultRecordSchema).Check(record)) continue; // damaged: as if it were not there
      const known = records.get(record.ref);
      if (!known || known.at < record.at) records.set(record.ref, record);
    }
  }
  if (names.length > mergeAbove) merge(dir, names, records);
  return { records, legacy };
}

/** One journal for many: the merged one is written first, then the journals of gone processes go. */
function merge(dir: string, names: string[], records: Map<string, ResultRecord>): void {
  const lines = [...records.values()].map((record) => `${JSON.stringify(record)}\n`).join('');
  try {
    writeFileAtomic(path.join(dir, `${newId()}.merged.jsonl`), lines, 0o644, { durable: false });
  } catch {
    return; // read-only: the journals stay as they are
  }
  for (const name of names) {
    const writer = /^[0-9A-Z]+-(\d+)\.jsonl$/.exec(name);
    // A live process may still append to its journal; merged journals are never appended to.
    if (writer && (Number(writer[1]) === process.pid || processAlive(Number(writer[1])))) continue;
    rmSync(path.join(dir, name), { force: true });
  }
}

function scopeOf(tendDir: string, scope: string): Scope {
  const dir = scopeDir(tendDir, scope);
  let loaded = scopes.get(dir);
  if (!loaded) {
    loaded = load(dir);
    scopes.set(dir, loaded);
  }
  return loaded;
}

/** The result tend wrote for a ref before the journals (one file per result). */
function legacyResult(tendDir: string, scope: string, ref: string): StoredResult | undefined {
  if (!scopeOf(tendDir, scope).legacy.has(ref)) return undefined;
  try {
    return JSON.parse(
      readFileSync(path.join(scopeDir(tendDir, scope), `${ref}.json`), 'utf8'),
    ) as StoredResult;
  } catch {
    return undefined;
  }
}

export function readResult(tendDir: string, scope: string, ref: string): StoredResult | undefined {
  const record = scopeOf(tendDir, scope).records.get(ref);
  if (record) return record.result;
  return legacyResult(tendDir, scope, ref);
}

/** Records one line in this process's journal of the scope, handed to the OS before it returns. */
function append(tendDir: string, scope: string, record: ResultRecord): void {
  const loaded = scopeOf(tendDir, scope);
  loaded.records.set(record.ref, record);
  // A cache: its lines reach the OS as they are written, and the disk when the run ends.
  loaded.journal ??= new AppendFile(
    path.join(scopeDir(tendDir, scope), `${newId()}-${process.pid}.jsonl`),
    'on-close',
  );
  loaded.journal.append(`${JSON.stringify(record)}\n`);
  loaded.journal.flush();
}

/**
 * A secret's value never rests in the cache: outputs that carry a command's text (an exec
 * command's `log`, `stdout`, `stderr`) have every registered secret masked, as in events and output.
 */
export function writeResult(tendDir: string, scope: string, ref: string, result: StoredResult): void {
  append(tendDir, scope, { at: newId(), ref, result: { ...result, outputs: masked(result.outputs) } });
}

/** Every string in `value` with the registered secrets masked. */
function masked<T>(value: T): T {
  if (typeof value === 'string') return redactSecretsIn(value) as T;
  if (Array.isArray(value)) return value.map(masked) as T;
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, masked(item)])) as T;
  }
  return value;
}

/** Forgets the result of one ref (a deploy removed); the scope's others stay. */
export function deleteResult(tendDir: string, scope: string, ref: string): void {
  append(tendDir, scope, { at: newId(), ref, deleted: true });
  if (scopeOf(tendDir, scope).legacy.delete(ref)) {
    rmSync(path.join(scopeDir(tendDir, scope), `${ref}.json`), { force: true });
  }
}

/** Removes every result of a scope (its environment was cleaned up). */
export function removeResults(tendDir: string, scope: string): void {
  const dir = scopeDir(tendDir, scope);
  scopes.get(dir)?.journal?.close();
  scopes.delete(dir);
  rmSync(dir, { recursive: true, force: true });
}

/**
 * Forgets what this process read: the next read sees every journal as it is now (another
 * process's results, a scope removed by a cleanup). Each run of the graph starts with it.
 */
export function forgetResults(): void {
  for (const loaded of scopes.values()) loaded.journal?.close();
  scopes.clear();
}
