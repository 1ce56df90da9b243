/**
 * Kustomizations' renderings kept across commands in the project's `.tend/cache/kustomize/`:
 * `kubectl kustomize` costs a command more CPU than the rest of it (a cached `tend status` of a
 * project with two kustomizations ran about twice as long with them), and most commands find
 * nothing changed since the last rendering.
 *
 * A rendering is kept under a key of everything it reads: the program (path, size, modification
 * time, inode), its arguments, and the content of every file in and below each kustomization
 * directory it visits (its own, its bases' and components') and of every file a kustomization
 * names. A kustomization that may read anything else is rendered every time: a remote base, a key
 * not listed here (generators, transformers and validators run plugins, helmCharts runs helm), an
 * extra argument not listed here, a symbolic link to a directory, more than `maxFiles` files.
 * The key is worked out again after the rendering, and the rendering kept only when it is the same:
 * a file changed meanwhile may or may not be in the output.
 *
 * A kept rendering starts with a line that has the SHA-256 of the rest: a file cut short or
 * changed by anything else than tend is not one (it is rendered again and replaced), so a
 * rendering that kustomize did not print is never deployed. It is written atomically. Beside it
 * are its YAML documents as parsed, in JSON under the same kind of checksum (`renderingDocuments`).
 *
 * Working out the key reads and parses every kustomization and reads every file it names: 3 ms
 * a kustomization on a cached `tend status` (the YAML parser's code cold), most of what a kept
 * rendering still cost. So the key is kept too (`*.inputs`), with the stamp (modification and
 * change times, size, inode) of every file read and directory listed for it, taken before each
 * was read: while every stamp is the same, nothing was changed, added, removed or renamed, and
 * the key is read back without reading them. As the digests of source files (graph/sources.ts),
 * only once every one of them is old enough (state/stamps.ts `settled`): a change within the
 * clock's coarseness of the last could leave the same stamp.
 *
 * Not in the key: what a `kubectl` or `kustomize` on PATH that is a wrapper script runs (the key
 * has the script's size, modification time and inode, not those of the program it calls).
 */
import { readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { sha256Hex } from '../../hash.js';
import { unreadDirectories, writeFileAtomic } from '../../state/files.js';
import { sameStamp, settled, stampOf, type Stamp } from '../../state/stamps.js';

/** The files kustomize reads as a kustomization, in the order it looks for them. */
const kustomizationFiles = ['kustomization.yaml', 'kustomization.yml', 'Kustomization'];

/** The keys of a kustomization whose effect is the kustomization's own text or the files below. */
const knownKeys = new Set([
  'apiVersion',
  'kind',
  'metadata',
  'resources',
  'bases',
  'components',
  'crds',
  'configurations',
  'namespace',
  'namePrefix',
  'nameSuffix',
  'commonLabels',
  'labels',
  'commonAnnotations',
  'images',
  'replicas',
  'patches',
  'patchesStrategicMerge',
  'patchesJson6902',
  'configMapGenerator',
  'secretGenerator',
  'generatorOptions',
  'vars',
  'replacements',
  'openapi',
  'buildMetadata',
  'sortOptions',
]);

/** Extra arguments (and their values) that read nothing more. */
const knownArgs = new Set([
  '--enable-alpha-plugins',
  '--enable-managedby-label',
  '--reorder',
  '--reorder=legacy',
  '--reorder=none',
  'legacy',
  'none',
  '--load-restrictor',
  '--load-restrictor=LoadRestrictionsRootOnly',
  '--load-restrictor=LoadRestrictionsNone',
  'LoadRestrictionsRootOnly',
  'LoadRestrictionsNone',
]);

/** More files than this in the directories of a kustomization: rendered every time. */
const maxFiles = 2000;

/** Renderings kept per project; past that, the oldest go. */
const maxKept = 64;

class NotKeepable extends Error {}

/** A path and its stamp (state/stamps.ts), as a key's record keeps them. */
type PathStamp = [path: string, ...stamp: Stamp];

/** The stamp of a path (symbolic links followed, as reading does); NotKeepable when it is gone. */
function pathStamp(file: string): PathStamp {
  const stat = statSync(file, { throwIfNoEntry: false });
  if (!stat) throw new NotKeepable();
  return [file, ...stampOf(stat)];
}

/** What a rendering reads, as path → content hash; NotKeepable when that cannot be known. */
class Inputs {
  readonly files = new Map<string, string>();
  /** The stamp of every file read and directory listed, each taken before it was read. */
  readonly stamps: PathStamp[] = [];
  private readonly visited = new Set<string>();

  file(file: string): void {
    if (this.files.has(file)) return;
    if (this.files.size >= maxFiles) throw new NotKeepable();
    const stamp = pathStamp(file);
    let content: Buffer;
    try {
      content = readFileSync(file);
    } catch {
      throw new NotKeepable();
    }
    this.files.set(file, sha256Hex(content));
    this.stamps.push(stamp);
  }

  tree(dir: string): void {
    const stamp = pathStamp(dir);
    let entries;
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      throw new NotKeepable();
    }
    this.stamps.push(stamp);
    for (const entry of entries) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) {
        if (!unreadDirectories.includes(entry.name)) this.tree(full);
      } else if (entry.isSymbolicLink()) {
        if (statSync(full, { throwIfNoEntry: false })?.isDirectory()) throw new NotKeepable();
        this.file(full);
      } else if (entry.isFile()) {
        this.file(full);
      }
    }
  }

  kustomization(dir: string): void {
    if (this.visited.has(dir)) return;
    this.visited.add(dir);
    const file = kustomizationFiles.map((name) => path.join(dir, name)).find((f) => isFile(f));
    if (!file) throw new NotKeepable();
    let document: unknown;
    try {
      document = parse(readFileSync(file, 'utf8')) ?? {};
    } catch {
      throw new NotKeepable();
    }
    if (typeof document !== 'object' || Array.isArray(document)) throw new NotKeepable();
    const kustomization = document as Record<string, unknown>;
    if (Object.keys(kustomization).some((key) => !knownKeys.has(key))) throw new NotKeepable();
    this.tree(dir);
    for (const key of ['resources', 'bases', 'components']) {
      for (const entry of strings(kustomization[key])) {
        const target = path.resolve(dir, entry);
        const stat = statSync(target, { throwIfNoEntry: false });
        // Neither a file nor a directory here: a remote base (a URL, github.com/…).
        if (stat?.isDirectory()) this.kustomization(target);
        else if (stat?.isFile()) this.file(target);
        else throw new NotKeepable();
      }
    }
    for (const key of ['crds', 'configurations']) {
      for (const entry of strings(kustomization[key])) this.file(path.resolve(dir, entry));
    }
    // A strategic merge patch is a file name or the patch itself (YAML: it has a colon).
    for (const entry of strings(kustomization.patchesStrategicMerge)) {
      if (!entry.includes(':')) this.file(path.resolve(dir, entry));
    }
    for (const key of ['patches', 'patchesJson6902', 'replacements']) {
      for (const item of objects(kustomization[key])) {
        if (item.path !== undefined) this.file(path.resolve(dir, String(item.path)));
      }
    }
    const openapi = kustomization.openapi;
    if (openapi && typeof openapi === 'object' && 'path' in openapi) {
      this.file(path.resolve(dir, String(openapi.path)));
    }
    for (const key of ['configMapGenerator', 'secretGenerator']) {
      for (const generator of objects(kustomization[key])) {
        // `files` entries are `path` or `key=path`.
        for (const entry of strings(generator.files))
          this.file(path.resolve(dir, entry.slice(entry.indexOf('=') + 1)));
        for (const entry of [...strings(generator.envs), ...strings(generator.env)]) {
          this.file(path.resolve(dir, entry));
        }
      }
    }
  }
}

function isFile(file: string): boolean {
  return statSync(file, { throwIfNoEntry: false })?.isFile() ?? false;
}

/** A list of strings (a single string as one): anything else is not a kustomization tend can follow. */
function strings(value: unknown): string[] {
  if (value === undefined || value === null) return [];
  const list = Array.isArray(value) ? value : [value];
  if (!list.every((item) => typeof item === 'string')) throw new NotKeepable();
  return list as string[];
}

function objects(value: unknown): Record<string, unknown>[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value) || !value.every((item) => item && typeof item === 'object'))
    throw new NotKeepable();
  return value as Record<string, unknown>[];
}

/**
 * The key of a rendering of the kustomization in `dir` by `program args`, or undefined when what
 * it reads cannot be known (it is rendered every time). With `cacheDir`, the key kept there with
 * the stamps of what it read, while they all hold; else worked out, and kept once they are old.
 */
export function renderingKey(
  program: string,
  args: string[],
  dir: string,
  extraArgs: string[],
  cacheDir?: string,
): string | undefined {
  if (!extraArgs.every((arg) => knownArgs.has(arg))) return undefined;
  const binary = statSync(program, { throwIfNoEntry: false });
  if (!binary) return undefined;
  const head = JSON.stringify([1, program, binary.size, binary.mtimeMs, binary.ino, args, dir, extraArgs]);
  const inputsFile = cacheDir === undefined ? undefined : path.join(cacheDir, `${sha256Hex(head)}.inputs`);
  const kept = inputsFile === undefined ? undefined : keptKey(inputsFile);
  if (kept !== undefined) return kept;
  const inputs = new Inputs();
  try {
    inputs.kustomization(dir);
  } catch {
    // NotKeepable, or a file that cannot be read (kustomize then says what is wrong with it)
    return undefined;
  }
  let text = head;
  for (const file of [...inputs.files.keys()].sort()) text += `\n${file}\0${inputs.files.get(file)!}`;
  const key = sha256Hex(text);
  if (inputsFile !== undefined && inputs.stamps.every(([, ...stamp]) => settled(stamp))) {
    keep(inputsFile, JSON.stringify({ key, stamps: inputs.stamps }));
  }
  return key;
}

/** The key kept in `file` while every stamp kept with it holds (a damaged file holds none). */
function keptKey(file: string): string | undefined {
  const kept = readKept(file);
  if (kept === undefined) return undefined;
  let record: unknown;
  try {
    record = JSON.parse(kept);
  } catch {
    return undefined;
  }
  if (typeof record !== 'object' || record === null) return undefined;
  const { key, stamps } = record as { key?: unknown; stamps?: unknown };
  if (typeof key !== 'string' || !/^[0-9a-f]{64}$/.test(key) || !Array.isArray(stamps)) return undefined;
  for (const stamp of stamps) {
    if (!Array.isArray(stamp) || stamp.length !== 5 || typeof stamp[0] !== 'string') return undefined;
    let now;
    try {
      now = statSync(stamp[0], { throwIfNoEntry: false });
    } catch {
      return undefined; // not a path (a NUL in it), or one that cannot be reached now
    }
    if (!now || !sameStamp(stamp.slice(1), stampOf(now))) return undefined;
  }
  return key;
}

/** The first line of a kept file (a rendering, or its documents): the SHA-256 of what follows it. */
const checksumLine = /^# tend rendering sha256:([0-9a-f]{64})\n/;

/** What follows the checksum line of a kept file, if the file is there and whole (its checksum holds). */
function readKept(file: string): string | undefined {
  let kept: string;
  try {
    kept = readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
  const checksum = checksumLine.exec(kept);
  if (!checksum) return undefined;
  const text = kept.slice(checksum[0].length);
  return sha256Hex(text) === checksum[1] ? text : undefined;
}

/** Keeps `text` in `file` under its checksum line, the oldest of its kind going past `maxKept`. A cache: a failure to write is no error. */
function keep(file: string, text: string): void {
  const dir = path.dirname(file);
  const suffix = path.extname(file);
  try {
    writeFileAtomic(file, `# tend rendering sha256:${sha256Hex(text)}\n${text}`, 0o600, { durable: false });
    const names = readdirSync(dir).filter((name) => name.endsWith(suffix));
    if (names.length <= maxKept) return;
    const byAge = names
      .map((name) => ({ name, mtimeMs: statSync(path.join(dir, name)).mtimeMs }))
      .sort((a, b) => a.mtimeMs - b.mtimeMs);
    for (const { name } of byAge.slice(0, names.length - maxKept))
      rmSync(path.join(dir, name), { force: true });
  } catch {
    // read-only or removed meanwhile: rendered (or parsed) again next time
  }
}

/** The rendering kept under `key`, if any, and only when it is whole (its checksum holds). */
export function keptRendering(cacheDir: string, key: string): string | undefined {
  return readKept(path.join(cacheDir, `${key}.yaml`));
}

/** Keeps a rendering under `key`, the oldest going past `maxKept`. A cache: a failure to write is no error. */
export function keepRendering(cacheDir: string, key: string, text: string): void {
  keep(path.join(cacheDir, `${key}.yaml`), text);
}

/**
 * The YAML documents of a rendering's text as `parse` gives them (each document's value), kept
 * as JSON beside the renderings under the SHA-256 of the text, with a checksum line like theirs:
 * parsing YAML is most of what a kept rendering still costs a command (measured on Node 24, a
 * cached `tend status` of Garden's kustomize example: 11–16 ms for its two renderings of 1 and
 * 4 KB, the parser's code being cold), and JSON.parse gives the same values in a fraction of it.
 * Documents JSON would not give back as they are (anything but plain objects, arrays, strings,
 * booleans, null and finite numbers, or an object met twice, from a YAML alias) are not kept.
 */
export function renderingDocuments(cacheDir: string, text: string, parse: () => unknown[]): unknown[] {
  const file = path.join(cacheDir, `${sha256Hex(text)}.json`);
  const kept = readKept(file);
  if (kept !== undefined) {
    try {
      const documents = JSON.parse(kept) as unknown;
      if (Array.isArray(documents)) return documents;
    } catch {
      // not tend's JSON after all: parsed again, and replaced
    }
  }
  const documents = parse();
  const seen = new Set<object>();
  // An empty document's value (null or undefined) stays null: both are no object.
  if (documents.every((value) => value === undefined || sameAsJson(value, seen))) {
    keep(file, JSON.stringify(documents));
  }
  return documents;
}

/** Whether JSON.parse(JSON.stringify(value)) is `value` again, each object in it a new one. */
function sameAsJson(value: unknown, seen: Set<object>): boolean {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return true;
  if (typeof value === 'number') return Number.isFinite(value) && !Object.is(value, -0);
  if (typeof value !== 'object' || seen.has(value)) return false;
  seen.add(value);
  if (Array.isArray(value)) {
    for (let index = 0; index < value.length; index++) {
      if (!(index in value) || !sameAsJson(value[index], seen)) return false;
    }
    return true;
  }
  if (Object.getPrototypeOf(value) !== Object.prototype) return false;
  return Object.entries(value).every(([key, item]) => key !== '__proto__' && sameAsJson(item, seen));
}
