/**
 * Starts the CLI bundle (`dist/cli/tend.cjs`) with V8's code cache, so that a command does not
 * compile tend's code again each time it starts: compiling the bundle is most of what starting
 * a command costs once the process is up. Node 20 has no module compile cache and runs an ES
 * module without one, so the bundle is CommonJS and is compiled here, through `vm.Script` with
 * the bytes V8 produced the last time. Node 22 and 24 have one (`module.enableCompileCache`), but
 * it keeps the code compiled right after the compile, where this cache is made when the command
 * exits and holds the functions it ran too: measured (CPU time, median of 15 rounds on 2 cores),
 * `tend --version` took 180 ms with this cache and 230 ms with Node's on Node 22 (190 and 200 on
 * 24), a re-run of 100 cached Builds 330 and 410 ms (360 and 400 on 24). So every line keeps it.
 *
 * The cache is one file per bundle build, Node version and command (`build`, `status`, …: each
 * runs other code), in `$XDG_CACHE_HOME/tend/compile` or `~/.cache/tend/compile`. It is written
 * when the process exits, when there was none or V8 rejected it, so it holds the code the
 * command ran, not only its top level. The code a command runs depends on the project too (a
 * Garden project's configuration, a kustomization, a container Build): the file names the working
 * directories whose runs it holds, and a run in another one writes it again at exit, with what
 * that run compiled besides (up to 16 directories; measured, `tend status` of a kustomize project
 * ran 5 ms sooner from the cache of both projects than from the cache another project's run
 * wrote). Compiled code is code: a cache file is used only when it
 * is a regular file of the user running tend that nobody else can write; otherwise, and when
 * anything about it fails, the bundle is compiled from source and the file replaced. Other
 * builds' files are removed once a day old (or beyond the newest eight).
 * `TEND_COMPILE_CACHE=0` turns it off.
 *
 * It also makes TurboFan wait longer before it optimizes a function. A command is short, and
 * TurboFan compiling the YAML parser's large functions costs more than it gives back: measured on
 * Node 20 (2 cores), parsing a 20 KB configuration took twice as long as with TurboFan off, and
 * 200 exec actions (`tend build`) ran 5–10 % slower than with V8's interrupt budget at 1,000,000,
 * which left a 3,000-action run as it was (off, TurboFan made that one 12 % slower). V8 12 (Node
 * 22) dropped that flag for invocation counts: there the count for TurboFan goes from 3,000 to
 * 30,000 (CPU time, median of 15 rounds: parsing 1,000 actions' configuration 890 → 670 ms on
 * Node 22 and 840 → 770 ms on Node 24, 200 exec actions 790 → 690 ms on 22 and the same on 24).
 * The flag is set only on the V8 lines measured (`turbofanDelay`): an unknown flag makes V8 print
 * an error on every command. Not for `tend server` and `tend agent`: they run until stopped,
 * where the reason does not hold (measured, the streaming benchmark's server gave the same
 * figures under either budget).
 *
 * For the same reason it turns Maglev off, V8's mid-tier optimizing compiler, on the V8 line that
 * has it on (V8 13, Node 24; V8 12 ships it off, so Node 22 runs tend without it already): its
 * compiles cost a command more CPU than they give back. Measured on Node 24 (2 cores, CPU time,
 * median of 9 rounds, under load): an unchanged re-run of 500 exec Builds + 500 exec Tests 706 →
 * 582 ms, parsing 1,000 actions' configuration 696 → 668 ms, `tend status` of a Kubernetes
 * project 0–40 ms less (430–470 ms; the noise of a loaded machine). Delaying it instead (10,000
 * calls) gave the same.
 *
 * A V8 flag set at run time has a price: V8 takes a code cache only when it was made under the
 * same flags, so every Node module loaded after it (node:https and the 60 modules under it) is
 * compiled from its source instead of from the code cache Node ships: 24 ms instead of 10 for
 * node:https and node:crypto (Node 24), 19 ms of a `tend status` against kube-sim. So the cache
 * file also names, for each working directory, which of node:crypto, node:http, node:https and
 * node:tls its last run loaded (`preloadable`: most of the Node modules a command loads are under
 * them), and they are loaded before the flags are set (what that run did later, it does at once).
 */
import {
  closeSync,
  fstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readSync,
  statSync,
  unlinkSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { homedir } from 'node:os';
import path from 'node:path';
import v8 from 'node:v8';
import vm from 'node:vm';
import { importKey } from '../import-module.js';
import { writeFileAtomic } from '../state/files.js';

/** The bundle ends with this comment, the SHA-256 of its content (scripts/bundle.ts writes it). */
export const buildIdPattern = /\n\/\/ tend-build ([0-9a-f]{64})\n$/;
/** Caches per build are capped: an unknown word as a command gets the shared `default` entry beyond this. */
const maxCachesPerBuild = 16;
const maxCacheBytes = 64 * 1024 * 1024;
/** Other builds' caches kept (younger than a day): another install of tend used in turn. */
const maxOtherCaches = 8;
/** The working directories a cache file names: beyond these, a new one no longer writes it again. */
export const maxCacheDirs = 16;
/**
 * A cache file is V8's bytes, then the JSON of the working directories whose runs they hold
 * (`CacheDirs`), its length (4 bytes, little-endian) and this mark. A file without it is compiled
 * from source.
 */
export const cacheTrailerMark = 'tend-dirs-2';

/** The working directories a cache file holds the runs of, each with the Node modules its run loaded. */
export type CacheDirs = Record<string, readonly string[]>;
/**
 * The flag that makes TurboFan wait, by V8 major version: V8 11 (Node 20) counts bytecode run
 * (the default budget is 66 KB); V8 12 and 13 (Node 22, 24) count calls (default 3,000). Other
 * lines get none until measured: V8 refuses a flag it does not know, on stderr.
 */
export const turbofanDelay: Readonly<Record<number, { flag: string; value: number }>> = {
  11: { flag: '--interrupt-budget', value: 1_000_000 },
  12: { flag: '--invocation-count-for-turbofan', value: 30_000 },
  13: { flag: '--invocation-count-for-turbofan', value: 30_000 },
};
/** The flag that turns Maglev off, by V8 major version: only where it is on by default. */
export const maglevOff: Readonly<Record<number, string>> = { 13: '--no-maglev' };
/** The commands that serve (they run until stopped): V8's default for them. */
const servingCommands = new Set(['server', 'agent']);

export interface LaunchOptions {
  bundle: string;
  argv: readonly string[];
  env: NodeJS.ProcessEnv;
}

/** The directory of the compile caches, or undefined when there is no absolute home for one. */
export function compileCacheDir(env: NodeJS.ProcessEnv): string | undefined {
  // The XDG spec ignores a relative XDG_CACHE_HOME.
  const xdg = env.XDG_CACHE_HOME && path.isAbsolute(env.XDG_CACHE_HOME) ? env.XDG_CACHE_HOME : undefined;
  let home: string;
  try {
    home = homedir();
  } catch {
    return xdg && path.join(xdg, 'tend', 'compile');
  }
  const base = xdg ?? (path.isAbsolute(home) ? path.join(home, '.cache') : undefined);
  return base && path.join(base, 'tend', 'compile');
}

/** tend's global options that take a value (`src/main.ts`; a test holds the two together). */
export const globalValueOptions: readonly string[] = [
  '--root',
  '--env',
  '--var',
  '--var-file',
  '--kubeconfig',
  '--context',
];

/**
 * Which cache a command line uses: its command word, found past the global options
 * (`tend --var registry=… status` is `status`), when it looks like one; else `default`. The
 * first run of a cache's name writes it, so a name shared by two commands keeps the first's code.
 */
export function cacheName(argv: readonly string[]): string {
  for (let i = 2; i < argv.length; i++) {
    const arg = argv[i]!;
    if (globalValueOptions.includes(arg)) i++;
    else if (!arg.startsWith('-')) return /^[a-z][a-z-]{0,31}$/.test(arg) ? arg : 'default';
  }
  return 'default';
}

/**
 * The V8 flag a command line gets (`--invocation-count-for-turbofan=30000`): none for a serving
 * command, on a V8 line not measured, or when Node was given that flag itself.
 */
export function v8FlagFor(
  argv: readonly string[],
  execArgv: readonly string[],
  v8Version: string = process.versions.v8,
): string | undefined {
  const delay = turbofanDelay[Number(v8Version.split('.')[0])];
  if (!delay || servingCommands.has(argv[2] ?? '')) return undefined;
  if (execArgv.some((arg) => arg === delay.flag || arg.startsWith(`${delay.flag}=`))) return undefined;
  return `${delay.flag}=${delay.value}`;
}

/**
 * `--no-maglev` for a command line on a V8 line that has Maglev on: not for a serving command, nor
 * when Node was given `--maglev` or `--no-maglev` itself.
 */
export function maglevFlagFor(
  argv: readonly string[],
  execArgv: readonly string[],
  v8Version: string = process.versions.v8,
): string | undefined {
  const flag = maglevOff[Number(v8Version.split('.')[0])];
  if (!flag || servingCommands.has(argv[2] ?? '')) return undefined;
  if (execArgv.some((arg) => arg === '--maglev' || arg === '--no-maglev')) return undefined;
  return flag;
}

/** Runs the bundle: from its code cache when there is a usable one, else compiled from source. */
export function launch({ bundle, argv, env }: LaunchOptions): void {
  exitWithoutTeardown();
  // The bundle's import() of what it does not contain (src/import-module.ts) is this module's.
  (globalThis as { [importKey]?: (specifier: string) => Promise<unknown> })[importKey] = (specifier) =>
    import(specifier);
  const dir = env.TEND_COMPILE_CACHE === '0' ? undefined : compileCacheDir(env);
  const prefixOf = (buildId: string) => `${buildId.slice(0, 16)}-${process.version}-${process.arch}-`;
  const { source, buildId, cacheFile, cachedData, cacheDirs } = readBundle(bundle, (buildId) =>
    dir === undefined ? undefined : path.join(dir, `${prefixOf(buildId)}${cacheName(argv)}.bin`),
  );
  const here = workingDirectory();
  const flags = [v8FlagFor(argv, process.execArgv), maglevFlagFor(argv, process.execArgv)].filter(
    (flag) => flag !== undefined,
  );
  // Under V8's flags as Node started: Node's code cache of its modules is valid only under those.
  if (flags.length > 0) preloadBuiltins(cacheDirs[here] ?? []);
  // Before the bundle compiles: a code cache is valid only under the flags it was made with.
  for (const flag of flags) v8.setFlagsFromString(flag);
  if (dir === undefined || buildId === undefined || cacheFile === undefined) {
    run(new vm.Script(source, { filename: bundle }), bundle);
    return;
  }
  const prefix = prefixOf(buildId);
  const script = new vm.Script(source, { filename: bundle, cachedData });
  const used = cachedData !== undefined && !script.cachedDataRejected;
  const known = Object.keys(cacheDirs);
  if (!used || (!known.includes(here) && known.length < maxCacheDirs)) {
    process.once('exit', () => {
      try {
        const names = removeOtherBuilds(dir, prefix);
        let file = cacheFile;
        if (!names.includes(path.basename(file)) && names.length >= maxCachesPerBuild) {
          file = path.join(dir, `${prefix}default.bin`);
        }
        const dirs = { ...(used ? cacheDirs : {}), [here]: preloadableLoaded() };
        writeFileAtomic(file, withTrailer(script.createCachedData(), dirs), 0o600, { durable: false });
      } catch {
        // A cache that cannot be written is compiled from source next time.
      }
    });
  }
  run(script, bundle);
}

/**
 * The Node modules worth loading ahead: the ones under which most of Node's modules a command
 * loads are (every command hashes with node:crypto; a cluster or the server is reached through
 * node:https), where one that others load too is preloaded only when a run needs it: node:net,
 * node:dgram and node:child_process come with a started process, which most runs of a command
 * that once started one do not start (a cached build: scripts/bundle-plugins.ts loads
 * node:child_process on its first use for that reason).
 */
const preloadable: ReadonlySet<string> = new Set(['crypto', 'http', 'https', 'tls']);

/**
 * Which of the modules loaded ahead (`preloadable`) this run has loaded: Node lists what it loaded
 * in `process.moduleLoadList` (`NativeModule https`, …), without documenting it; none where it is
 * gone.
 */
function preloadableLoaded(): string[] {
  const list = (process as { moduleLoadList?: unknown }).moduleLoadList;
  const loaded = new Set(Array.isArray(list) ? list : []);
  return [...preloadable].filter((name) => loaded.has(`NativeModule ${name}`));
}

/** Loads the Node modules named that are `preloadable` (a cache file names them; it may be damaged). */
function preloadBuiltins(names: readonly string[]): void {
  for (const name of names) {
    if (!preloadable.has(name)) continue;
    try {
      process.getBuiltinModule(`node:${name}`);
    } catch {
      // A Node built without OpenSSL: the command says what it lacks when it needs it.
    }
  }
}

/** The bundle's last bytes, where its build id is. */
const buildIdTailBytes = 96;

interface BundleFiles {
  /** The bundle, as a one-byte string (it is ASCII: scripts/bundle.ts). */
  source: string;
  buildId: string | undefined;
  /** Where the code cache of this build and command is (read, or to be written). */
  cacheFile: string | undefined;
  cachedData: Buffer | undefined;
  /** The working directories whose runs the cache holds (none without one). */
  cacheDirs: CacheDirs;
}

/**
 * The bundle's source and, when there is a usable one, its code cache, read in turn into one
 * buffer. Touching fresh memory is what costs on the 2-core machines measured: a buffer for each
 * file took some 400 more page faults than one for both, 5 to 7 ms of every command (Node 24).
 * `cacheFileFor` names the cache of a build id, read from the bundle's tail first.
 */
function readBundle(bundle: string, cacheFileFor: (buildId: string) => string | undefined): BundleFiles {
  const fd = openSync(bundle, 'r');
  try {
    const size = fstatSync(fd).size;
    const tail = Buffer.allocUnsafe(Math.min(size, buildIdTailBytes));
    const tailLength = readSync(fd, tail, 0, tail.length, size - tail.length);
    const buildId = buildIdPattern.exec(tail.toString('latin1', 0, tailLength))?.[1];
    const cacheFile = buildId === undefined ? undefined : cacheFileFor(buildId);
    const cache = cacheFile === undefined ? undefined : openCache(cacheFile);
    try {
      const buffer = Buffer.allocUnsafe(Math.max(size, cache?.size ?? 0));
      // Latin-1: Node makes a one-byte string of it without decoding UTF-8, 10 ms sooner for
      // 2.5 MB than as UTF-8 (measured on Node 20).
      const source = buffer.toString('latin1', 0, readFully(fd, buffer, size));
      let cached: Pick<BundleFiles, 'cachedData' | 'cacheDirs'> = { cachedData: undefined, cacheDirs: {} };
      if (cache) {
        try {
          if (readFully(cache.fd, buffer, cache.size) === cache.size)
            cached = withoutTrailer(buffer.subarray(0, cache.size));
        } catch {
          // An unreadable cache is compiled from source and replaced.
        }
      }
      return { source, buildId, cacheFile, ...cached };
    } finally {
      if (cache) closeSync(cache.fd);
    }
  } finally {
    closeSync(fd);
  }
}

/** The working directory, as a cache file names it ('' when it is gone). */
function workingDirectory(): string {
  try {
    return process.cwd();
  } catch {
    return '';
  }
}

/** V8's bytes and the trailer naming `dirs` (cacheTrailerMark). */
export function withTrailer(cachedData: Buffer, dirs: CacheDirs): Buffer {
  const list = Buffer.from(JSON.stringify(dirs), 'utf8');
  const length = Buffer.alloc(4);
  length.writeUInt32LE(list.length);
  return Buffer.concat([cachedData, list, length, Buffer.from(cacheTrailerMark, 'latin1')]);
}

/** A cache file's V8 bytes and directories; none of either when its trailer is not whole. */
export function withoutTrailer(file: Buffer): Pick<BundleFiles, 'cachedData' | 'cacheDirs'> {
  const none = { cachedData: undefined, cacheDirs: {} };
  const mark = file.length - cacheTrailerMark.length;
  if (mark < 4 || file.toString('latin1', mark) !== cacheTrailerMark) return none;
  const start = mark - 4 - file.readUInt32LE(mark - 4);
  if (start < 0) return none;
  try {
    const dirs: unknown = JSON.parse(file.toString('utf8', start, mark - 4));
    const valid =
      typeof dirs === 'object' &&
      dirs !== null &&
      !Array.isArray(dirs) &&
      Object.values(dirs).every(
        (names) =>
          Array.isArray(names) &&
          names.length <= preloadable.size &&
          names.every((name) => typeof name === 'string'),
      );
    if (!valid) return none;
    return { cachedData: file.subarray(0, start), cacheDirs: dirs as CacheDirs };
  } catch {
    return none;
  }
}

/** Reads up to `length` bytes from the start of a file; returns how many there were. */
function readFully(fd: number, buffer: Buffer, length: number): number {
  let read = 0;
  while (read < length) {
    const n = readSync(fd, buffer, read, length - read, read);
    if (n === 0) break;
    read += n;
  }
  return read;
}

/**
 * Once the command is done (nothing left in the event loop), exits as `process.exit()` does: the
 * `exit` listeners run and the exit code is `process.exitCode`, as on Node's own way out, which
 * then also tears the heap down page by page, some 20 ms of CPU for a Kubernetes command
 * (measured on Node 24, 2 cores). `beforeExit` comes only when the loop is empty, and none of
 * tend's code listens to it to start more work.
 */
function exitWithoutTeardown(): void {
  process.once('beforeExit', () => process.exit());
}

/**
 * The head of the function CommonJS wraps a module in (what `require` compiles), with which
 * scripts/bundle.ts writes the bundle (and `\n});` after it): compiled as it is read, it takes no
 * second copy of the bundle to wrap (8 ms of every command, measured on Node 20). A line of its
 * own, so that the bundle's source map only moves down a line.
 */
export const moduleFunctionHead = '(function (exports, require, module, __filename, __dirname) {\n';

/** Runs the bundle's function as CommonJS runs a module. */
function run(script: vm.Script, bundle: string): void {
  const body = script.runInThisContext() as (
    exports: object,
    require: NodeJS.Require,
    module: { exports: object },
    filename: string,
    dirname: string,
  ) => void;
  const module = { exports: {} };
  body(module.exports, createRequire(bundle), module, bundle, path.dirname(bundle));
}

/**
 * The cache file opened, with its size, when it is a regular file of this user that nobody else
 * can write; else (and when it cannot be opened) undefined.
 */
function openCache(file: string): { fd: number; size: number } | undefined {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch {
    return undefined;
  }
  try {
    const stat = fstatSync(fd);
    const uid = process.getuid?.();
    const usable =
      stat.isFile() &&
      (uid === undefined || stat.uid === uid) &&
      (stat.mode & 0o022) === 0 &&
      stat.size <= maxCacheBytes;
    if (usable) return { fd, size: stat.size };
  } catch {
    // unusable, as below
  }
  closeSync(fd);
  return undefined;
}

/**
 * Deletes other builds' caches (and other Node versions') once they are a day old or beyond the
 * newest few: two installs of tend used in turn keep theirs, rebuilds do not pile up. Returns the
 * names of this build's.
 */
function removeOtherBuilds(dir: string, prefix: string): string[] {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const kept: string[] = [];
  const others: { name: string; mtimeMs: number }[] = [];
  for (const name of readdirSync(dir)) {
    if (!name.endsWith('.bin')) continue; // a temp file being written by another process
    if (name.startsWith(prefix)) {
      kept.push(name);
      continue;
    }
    try {
      others.push({ name, mtimeMs: statSync(path.join(dir, name)).mtimeMs });
    } catch {
      // another process removed it first
    }
  }
  others.sort((a, b) => b.mtimeMs - a.mtimeMs);
  const dayAgo = Date.now() - 24 * 3_600_000;
  others.forEach(({ name, mtimeMs }, i) => {
    if (i < maxOtherCaches && mtimeMs > dayAgo) return;
    try {
      unlinkSync(path.join(dir, name));
    } catch {
      // another process removed it first
    }
  });
  return kept;
}
