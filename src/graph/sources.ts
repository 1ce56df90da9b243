/**
 * Source files of an action (after include/exclude) and their content hashes, cached for the
 * process: many actions share a directory, and a file is read and hashed once per session.
 * Reading a file also finds the template expressions in it (`${var.replicas}` in a manifest), so
 * that a version can cover the values a plugin may substitute into the file.
 */
import { Type, type Static } from 'typebox';
import fg from 'fast-glob';
import { lstatSync, readdirSync, readFileSync, statSync, type Dirent } from 'node:fs';
import path from 'node:path';
import picomatch from 'picomatch';
import { sha256Hex } from '../hash.js';
import { unreadDirectories, writeFileAtomic } from '../state/files.js';
import { sameStamp, settled, stampOf } from '../state/stamps.js';
import { AnyKey, schemaCheck, weightOfJson } from '../schema-check.js';

/** Never part of an action's source: tend's own state, VCS data, installed dependencies. */
export const alwaysExcluded = unreadDirectories.map((dir) => `**/${dir}/**`);

/**
 * Configuration files are not sources: an action's version covers its own document (hashed as
 * configuration), not its neighbours' in the same file or folder.
 */
export const configurationFiles = ['**/*.tend.yml'];

interface FileDigest {
  mtimeMs: number;
  size: number;
  hash: string;
  expressions: string[];
}

const listings = new Map<string, string[]>();
const fileDigests = new Map<string, FileDigest>();

/**
 * The action's source files, relative to `sourceDir` (no leading `./`) and sorted.
 * @param projectFile the project's `tend.yml` (absolute), left out when it is inside `sourceDir`
 */
export function listSourceFiles(
  sourceDir: string,
  include?: string[],
  exclude?: string[],
  projectFile?: string,
): string[] {
  const key = [sourceDir, projectFile ?? '', ...(include ?? []), '\0', ...(exclude ?? [])].join('\0');
  let files = listings.get(key);
  if (!files) {
    const ignore = [...alwaysExcluded, ...configurationFiles, ...(exclude ?? [])];
    if (projectFile) {
      const relative = path.relative(sourceDir, projectFile);
      if (!relative.startsWith('..') && !path.isAbsolute(relative)) {
        ignore.push(fg.escapePath(relative.split(path.sep).join('/')));
      }
    }
    // Without the `./` a pattern such as `./lock.txt` lists with, as Garden's matcher has them: the
    // files are paths from the source directory, for the build context and the version alike.
    files = walkSources(sourceDir, include && include.length > 0 ? include : ['**/*'], ignore)
      .map(unprefixed)
      .sort();
    listings.set(key, files);
  }
  return files;
}

/**
 * The files below `sourceDir` that a pattern of `include` matches and none of `ignore` does,
 * exactly as fast-glob lists them with tend's options (dot files too, files only, symbolic links
 * not followed, a directory that an ignore pattern ending in `/**` or naming it matches is not
 * read), sorted — but with the patterns compiled once per process: many actions share them, and
 * compiling is most of a small listing's cost. fast-glob's own plan (its tasks: which directory
 * each group of patterns is read from) is followed; a pattern reaching outside `sourceDir`
 * (`../x/**`) is left to fast-glob.
 */
function walkSources(sourceDir: string, include: string[], ignore: string[]): string[] {
  const tasks = plan(include, ignore);
  if (!tasks) {
    return fg
      .sync(include, { cwd: sourceDir, dot: true, onlyFiles: true, followSymbolicLinks: false, ignore })
      .sort();
  }
  // By the path without `./`, the first found kept: `./b/x` and `b/x` are one file, as fast-glob says.
  const found = new Map<string, string>();
  const add = (file: string) => {
    if (!found.has(unprefixed(file))) found.set(unprefixed(file), file);
  };
  for (const task of tasks) {
    if (!task.dynamic) {
      // A pattern without wildcards names one file: fast-glob looks it up (lstat) instead of reading directories.
      for (const file of task.positive) {
        if (
          lstatSync(path.join(sourceDir, file), { throwIfNoEntry: false })?.isFile() &&
          !task.ignored(unprefixed(file))
        ) {
          add(file);
        }
      }
      continue;
    }
    const walk = (relative: string) => {
      let entries: Dirent[];
      try {
        entries = readdirSync(relative ? path.join(sourceDir, relative) : sourceDir, { withFileTypes: true });
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'ELOOP') return; // nothing to read there
        throw error;
      }
      for (const entry of entries) {
        const file = relative ? `${relative}/${entry.name}` : entry.name;
        if (entry.isDirectory()) {
          if (!task.skipped(unprefixed(file))) walk(file);
        } else if (entry.isFile() && task.matches(unprefixed(file)) && !task.ignored(unprefixed(file))) {
          add(file);
        }
      }
    };
    walk(task.base);
  }
  return [...found.values()].sort();
}

/** A path as fast-glob matches it: without a leading `./`. */
const unprefixed = (file: string) => (file.startsWith('./') ? file.slice(2) : file);

interface ListingTask {
  /** Where reading starts, relative to the source directory ('' for itself; `./b` stays so, as fast-glob lists it). */
  base: string;
  dynamic: boolean;
  positive: string[];
  matches: (file: string) => boolean;
  ignored: (file: string) => boolean;
  /** Directories not read at all. */
  skipped: (file: string) => boolean;
}

const plans = new Map<string, ListingTask[] | undefined>();

/** fast-glob's tasks for the patterns, with their matchers compiled; undefined when one reaches outside. */
function plan(include: string[], ignore: string[]): ListingTask[] | undefined {
  const key = [...include, '\0', ...ignore].join('\0');
  if (plans.has(key)) return plans.get(key);
  const options = { dot: true, onlyFiles: true, followSymbolicLinks: false, ignore };
  const tasks = fg.generateTasks(include, options);
  const outside = tasks.some(
    (task) => task.base === '..' || task.base.startsWith('../') || path.isAbsolute(task.base),
  );
  const planned = outside
    ? undefined
    : tasks.map((task) => ({
        base: task.base === '.' ? '' : task.base,
        dynamic: task.dynamic,
        positive: task.positive,
        matches: compiled(task.positive),
        ignored: compiled(task.negative),
        skipped: compiled(
          task.negative.filter((p) => p.endsWith('/**') || !fg.isDynamicPattern(path.posix.basename(p))),
        ),
      }));
  plans.set(key, planned);
  return planned;
}

const matchers = new Map<string, (file: string) => boolean>();

function compiled(patterns: string[]): (file: string) => boolean {
  const key = patterns.join('\0');
  let matcher = matchers.get(key);
  if (!matcher) {
    matcher = patterns.length === 0 ? () => false : picomatch(patterns, { dot: true });
    matchers.set(key, matcher);
  }
  return matcher;
}

/** `${root.key…}` with a root that a file could be resolved against; `$${` (a literal) is not one. */
const fileExpressionPattern = /(?<!\$)\$\{\s*((?:project|environment|var|local)(?:\.[A-Za-z0-9_-]+)+)\s*\}/g;

/** The template expressions (other than action outputs) that appear in a text, each once. */
export function expressionsIn(text: string): string[] {
  if (!text.includes('${')) return [];
  return [...new Set([...text.matchAll(fileExpressionPattern)].map((match) => match[1]!))];
}

function digestFile(file: string): FileDigest {
  const stat = statSync(file);
  const cached = fileDigests.get(file);
  if (cached && cached.mtimeMs === stat.mtimeMs && cached.size === stat.size) return cached;
  const kept = stored.files[file];
  const stamp = stampOf(stat);
  if (kept && sameStamp(kept, stamp)) {
    const digest = { mtimeMs: stat.mtimeMs, size: stat.size, hash: kept[4], expressions: kept[5] };
    fileDigests.set(file, digest);
    return digest;
  }
  const content = readFileSync(file);
  const hash = sha256Hex(content);
  const digest = {
    mtimeMs: stat.mtimeMs,
    size: stat.size,
    hash,
    expressions: expressionsIn(content.toString('latin1')),
  };
  fileDigests.set(file, digest);
  // Kept for later processes only when the file was last changed well before it was read.
  if (stored.dir && settled(stamp)) {
    stored.files[file] = [...stamp, hash, digest.expressions];
    stored.changed = true;
  }
  return digest;
}

/**
 * File digests kept across processes in `.tend/cache/digests.json`, so that a run over
 * unchanged files does not read and hash them again: an entry counts only while the file's
 * modification and change times, size and inode are the ones it was hashed with. A cache: a
 * damaged file is ignored and rewritten.
 */
const DigestCacheFile = Type.Object({
  format: Type.Literal(1),
  files: Type.Record(
    AnyKey(),
    Type.Tuple([
      Type.Number(),
      Type.Number(),
      Type.Number(),
      Type.Number(),
      Type.String(),
      Type.Array(Type.String()),
    ]),
  ),
});
type DigestCacheFile = Static<typeof DigestCacheFile>;
/** Entries kept at most; past that, only the files of the last run. */
const maxStoredDigests = 100_000;
let stored: { dir?: string; files: DigestCacheFile['files']; changed: boolean } = {
  files: {},
  changed: false,
};

/** Reads the digests kept in `cacheDir` (a project's `.tend/cache`), once per process and directory. */
export function loadDigestCache(cacheDir: string): void {
  if (stored.dir === cacheDir) return;
  stored = { dir: cacheDir, files: {}, changed: false };
  try {
    const text = readFileSync(path.join(cacheDir, 'digests.json'), 'utf8');
    const parsed: unknown = JSON.parse(text);
    if (schemaCheck(DigestCacheFile).Check(parsed, weightOfJson(text))) {
      stored.files = (parsed as DigestCacheFile).files;
    }
  } catch {
    // none yet, or damaged: every file is read again
  }
}

/** Writes the digests kept, when this process added some. */
export function saveDigestCache(): void {
  if (!stored.dir || !stored.changed) return;
  let files = stored.files;
  if (Object.keys(files).length > maxStoredDigests) {
    files = Object.fromEntries([...fileDigests.keys()].filter((f) => files[f]).map((f) => [f, files[f]!]));
  }
  try {
    writeFileAtomic(path.join(stored.dir, 'digests.json'), JSON.stringify({ format: 1, files }), 0o644, {
      durable: false,
    });
    stored.changed = false;
  } catch {
    // read-only: the files are read again next time
  }
}

/**
 * One hash over the relative paths and contents of the files, and the template expressions
 * (other than action outputs) that appear in them, sorted.
 */
export function digestSources(sourceDir: string, files: string[]): { hash: string; expressions: string[] } {
  let text = '';
  const expressions = new Set<string>();
  for (const file of files) {
    const digest = digestFile(path.join(sourceDir, file));
    text += `${file}\0${digest.hash}\n`;
    for (const expression of digest.expressions) expressions.add(expression);
  }
  return { hash: sha256Hex(text), expressions: [...expressions].sort() };
}

/** Forget cached listings and hashes (tests and long-running processes that watch files). */
export function clearSourceCache(): void {
  listings.clear();
  fileDigests.clear();
  stored = { files: {}, changed: false };
}
