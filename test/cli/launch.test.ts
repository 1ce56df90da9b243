/**
 * The launcher (src/cli/launch.ts): `bin/tend.js` runs the CLI bundle from V8's code cache, one
 * file per build, Node version and command under $XDG_CACHE_HOME/tend/compile. Through real
 * `bin/tend.js` processes: the cache is written once and then used (a plugin module is still
 * imported from cached code), a damaged or foreign-writable file is replaced, an old build's file
 * removed (a recent one kept), a run in another working directory writes it again with its code
 * (up to a limit), and TEND_COMPILE_CACHE=0 writes nothing (and still imports it);
 * and which command lines make TurboFan wait, with a flag this Node's V8 knows (`npm run
 * test:lines` runs this file on every Node line: an unknown flag is an error on every command).
 */
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { isBuiltin } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  cacheName,
  cacheTrailerMark,
  type CacheDirs,
  compileCacheDir,
  globalValueOptions,
  maglevFlagFor,
  maglevOff,
  maxCacheDirs,
  turbofanDelay,
  v8FlagFor,
  withoutTrailer,
  withTrailer,
} from '../../src/cli/launch.js';
import { makeProject, removeProjects, runTend } from '../helpers/project.js';

afterAll(() => removeProjects());

const project = {
  'package.json': '{ "type": "module" }',
  'tend.yml':
    'kind: Project\nname: p\ndefaultEnvironment: dev\nenvironments: [{ name: dev, defaultNamespace: p-dev }]\n' +
    'providers: [{ name: exec }, { name: named, plugin: ./plugin.js }]\n---\n' +
    'kind: Build\ntype: exec\nname: one\nspec: { command: [echo, one] }\n',
  // A provider module that only needs to be imported: its definition is refused by name.
  'plugin.js': 'export default { name: "Not A Name" };\n',
};

/** A project and an empty cache home; runs `tend build --json` there. */
function setup() {
  const root = makeProject(project);
  const cacheHome = path.join(root, 'cache-home');
  const dir = path.join(cacheHome, 'tend', 'compile');
  const build = (env: Record<string, string> = {}) =>
    runTend(['build', '--json'], { cwd: root, env: { XDG_CACHE_HOME: cacheHome, ...env } });
  const files = () => (existsSync(dir) ? readdirSync(dir).filter((name) => name.endsWith('.bin')) : []);
  return { root, cacheHome, dir, build, files };
}

/** The plugin module was imported: its definition's name is what the error names. */
function expectPluginImported(run: { code: number | null; stdout: string }): void {
  expect(run.code).toBe(2);
  const error = (JSON.parse(run.stdout) as { error: { code: string; message: string } }).error;
  expect(error.code).toBe('TEND_PLUGIN_INVALID');
  expect(error.message).toContain('"name" must be a lowercase name');
}

describe('the code cache of the CLI bundle', () => {
  it('is written by the first run of a command and used, not rewritten, by the next', async () => {
    const { root, cacheHome, dir, build, files } = setup();
    expectPluginImported(await build());
    expect(files()).toHaveLength(1);
    const [name] = files();
    expect(name).toMatch(/^[0-9a-f]{16}-v\d+\.\d+\.\d+-[a-z0-9]+-build\.bin$/);
    const file = path.join(dir, name!);
    const first = statSync(file);
    expect(first.mode & 0o777).toBe(0o600);
    expect(first.size).toBeGreaterThan(0);

    // From cached code, import() still works: the plugin module is imported again.
    const second = await build();
    expectPluginImported(second);
    expect(second.stderr).not.toMatch(/Warning/);
    const after = statSync(file);
    expect([after.ino, after.mtimeMs]).toEqual([first.ino, first.mtimeMs]);

    // Another command gets a file of its own.
    const version = await runTend(['--version'], { cwd: root, env: { XDG_CACHE_HOME: cacheHome } });
    expect(version.code).toBe(0);
    expect(files().sort()).toEqual([name, name!.replace(/-build\.bin$/, '-default.bin')].sort());
  });

  it('replaces a damaged file and one that others can write, and removes old builds', async () => {
    const { dir, build, files } = setup();
    await build();
    const [name] = files();
    const file = path.join(dir, name!);

    writeFileSync(file, 'not a code cache');
    expectPluginImported(await build());
    expect(readFileSync(file, 'utf8')).not.toBe('not a code cache');

    // Compiled code is code: a file that someone else could have written is not run.
    chmodSync(file, 0o666);
    const planted = statSync(file);
    expectPluginImported(await build());
    const replaced = statSync(file);
    expect(replaced.mode & 0o777).toBe(0o600);
    expect(replaced.ino).not.toBe(planted.ino);

    // Another install's cache, used a moment ago, stays; one of a build not used for two days goes.
    const other = path.join(dir, `0123456789abcdef-${process.version}-${process.arch}-build.bin`);
    const stale = path.join(dir, `fedcba9876543210-${process.version}-${process.arch}-build.bin`);
    writeFileSync(other, 'another install', { mode: 0o600 });
    writeFileSync(stale, 'an older build', { mode: 0o600 });
    const twoDaysAgo = new Date(Date.now() - 48 * 3_600_000);
    utimesSync(stale, twoDaysAgo, twoDaysAgo);
    expectPluginImported(await build());
    expect(existsSync(stale)).toBe(true); // the file in use was valid: nothing written, nothing removed
    writeFileSync(file, 'damaged');
    expectPluginImported(await build());
    expect(existsSync(stale)).toBe(false);
    expect(files().sort()).toEqual([path.basename(other), name].sort());
  });

  it('holds the runs of each working directory: a run in another one writes it again, naming both', async () => {
    const { root, cacheHome, dir, build, files } = setup();
    await build();
    const file = path.join(dir, files()[0]!);
    const dirsOf = () => Object.keys(withoutTrailer(readFileSync(file)).cacheDirs);
    const home = realpathSync(root);
    expect(dirsOf()).toEqual([home]);
    const sub = path.join(home, 'sub');
    mkdirSync(sub);
    const buildIn = (cwd: string) =>
      runTend(['--root', root, 'build', '--json'], { cwd, env: { XDG_CACHE_HOME: cacheHome } });
    const before = statSync(file);
    expectPluginImported(await buildIn(sub));
    const after = statSync(file);
    // Written again, naming both. Not its size: V8 may flush the bytecode of the first run's
    // functions before the second writes the cache (CI once saw it 1 byte smaller).
    expect(after.ino).not.toBe(before.ino);
    expect(dirsOf()).toEqual([home, sub]);

    // Both named: runs in either use it as it is.
    expectPluginImported(await build());
    expectPluginImported(await buildIn(sub));
    expect(statSync(file).ino).toBe(after.ino);
    expect(files()).toHaveLength(1);
  });

  it(`names at most ${maxCacheDirs} working directories: beyond them a run uses it as it is`, async () => {
    const { root, cacheHome, dir, build, files } = setup();
    await build();
    const file = path.join(dir, files()[0]!);
    const { cachedData } = withoutTrailer(readFileSync(file));
    const full = Object.fromEntries(Array.from({ length: maxCacheDirs }, (_, i) => [`/elsewhere/${i}`, []]));
    writeFileSync(file, withTrailer(cachedData!, full), { mode: 0o600 });
    const written = statSync(file);
    const other = path.join(root, 'other');
    mkdirSync(other);
    const run = await runTend(['--root', root, 'build', '--json'], {
      cwd: other,
      env: { XDG_CACHE_HOME: cacheHome },
    });
    expectPluginImported(run);
    expect(statSync(file).ino).toBe(written.ino);
    expect(withoutTrailer(readFileSync(file)).cacheDirs).toEqual(full);
  });

  it("loads the Node modules under which most are (crypto, https…) that a directory's last run loaded before it sets V8's flags, which would refuse Node's code cache of them", async () => {
    const { root, cacheHome, dir, files } = setup();
    // Where the first V8 flag is set, what Node has loaded by then.
    const hook = path.join(root, 'hook.cjs');
    const seen = path.join(root, 'seen.json');
    writeFileSync(
      hook,
      `const v8 = require('node:v8'); const set = v8.setFlagsFromString;
v8.setFlagsFromString = (flag) => {
  if (!require('node:fs').existsSync(${JSON.stringify(seen)}))
    require('node:fs').writeFileSync(${JSON.stringify(seen)}, JSON.stringify(process.moduleLoadList));
  return set(flag);
};`,
    );
    const build = async () => {
      rmSync(seen, { force: true });
      const run = await runTend(['build', '--json'], {
        cwd: root,
        env: { XDG_CACHE_HOME: cacheHome, NODE_OPTIONS: `--require ${hook}` },
      });
      expectPluginImported(run);
      return JSON.parse(readFileSync(seen, 'utf8')) as string[];
    };
    const first = await build();
    const named = withoutTrailer(readFileSync(path.join(dir, files()[0]!))).cacheDirs[realpathSync(root)]!;
    expect(named).toContain('crypto');
    expect(named.every((name) => isBuiltin(name) && !name.startsWith('internal/'))).toBe(true);
    expect(first).not.toContain('NativeModule crypto');
    const second = await build();
    for (const name of named) expect(second).toContain(`NativeModule ${name}`);
  });

  it('a cache file naming anything else (a path, an internal or experimental module) loads none of it', async () => {
    const { root, cacheHome, dir, build, files } = setup();
    await build();
    const file = path.join(dir, files()[0]!);
    const { cachedData } = withoutTrailer(readFileSync(file));
    const hostile = [
      '../../plugin.js',
      './plugin.js',
      'internal/fs/utils',
      'wasi',
      'sqlite',
      'no-such-module',
      'os',
    ];
    writeFileSync(file, withTrailer(cachedData!, { [realpathSync(root)]: hostile }), { mode: 0o600 });
    const run = await runTend(['build', '--json'], {
      cwd: root,
      env: { XDG_CACHE_HOME: cacheHome, NODE_OPTIONS: '--trace-warnings' },
    });
    expectPluginImported(run);
    expect(run.stderr).not.toMatch(/ExperimentalWarning|WASI|SQLite/);
  });

  it('is neither read nor written with TEND_COMPILE_CACHE=0', async () => {
    const { dir, build } = setup();
    expectPluginImported(await build({ TEND_COMPILE_CACHE: '0' }));
    expect(existsSync(dir)).toBe(false);
  });

  it('does not fail a command when the cache directory cannot be written', async () => {
    const { dir, build } = setup();
    // A file where the directory should be: nothing can be written under it.
    mkdirSync(path.dirname(dir), { recursive: true });
    writeFileSync(dir, '');
    const run = await build();
    expectPluginImported(run);
    expect(run.stderr).toBe('');
    expect(statSync(dir).isFile()).toBe(true);
  });
});

describe("a cache file's trailer", () => {
  const bytes = Buffer.from('V8 bytes');
  it('gives back the bytes and directories it was written with, names with any characters too', () => {
    const dirs = {
      '/a': ['https', 'crypto'],
      '/b c/ü\u{1F600}': [],
      '': ['net'],
      '/nul\0here': [],
      '/lone\uD800': [],
    };
    expect(withoutTrailer(withTrailer(bytes, dirs))).toEqual({ cachedData: bytes, cacheDirs: dirs });
  });

  it('a file cut short, one without the mark, one whose length lies or whose directories are not named lists: none', () => {
    const whole = withTrailer(bytes, { '/a': ['https'] });
    const none = { cachedData: undefined, cacheDirs: {} };
    expect(withoutTrailer(whole.subarray(0, whole.length - 1))).toEqual(none);
    expect(withoutTrailer(bytes)).toEqual(none);
    expect(withoutTrailer(Buffer.from(cacheTrailerMark))).toEqual(none);
    const lying = Buffer.from(whole);
    lying.writeUInt32LE(whole.length, whole.length - cacheTrailerMark.length - 4);
    expect(withoutTrailer(lying)).toEqual(none);
    for (const bad of [['/a'], null, 7, { '/a': 'https' }, { '/a': [1] }, { '/a': Array(33).fill('os') }]) {
      expect(withoutTrailer(withTrailer(bytes, bad as unknown as CacheDirs))).toEqual(none);
    }
    // A list 10,000 deep: written by hand (JSON.stringify would run out of stack first).
    const deep = Buffer.from(`${'['.repeat(10_000)}${']'.repeat(10_000)}`);
    const length = Buffer.alloc(4);
    length.writeUInt32LE(deep.length);
    expect(withoutTrailer(Buffer.concat([bytes, deep, length, Buffer.from(cacheTrailerMark)]))).toEqual(none);
  });
});

describe('where the cache lives and which file a command line uses', () => {
  it('takes $XDG_CACHE_HOME when absolute, else ~/.cache', () => {
    expect(compileCacheDir({ XDG_CACHE_HOME: '/srv/cache' })).toBe('/srv/cache/tend/compile');
    expect(compileCacheDir({ XDG_CACHE_HOME: 'relative' })).toMatch(/\/\.cache\/tend\/compile$/);
    expect(compileCacheDir({})).toMatch(/\/\.cache\/tend\/compile$/);
  });

  it('names the file after the command word past the global options, else `default`', () => {
    expect(cacheName(['node', 'tend', 'build', 'api'])).toBe('build');
    expect(cacheName(['node', 'tend', 'cleanup-now'])).toBe('cleanup-now');
    expect(cacheName(['node', 'tend', '--root', 'x', 'build'])).toBe('build');
    expect(cacheName(['node', 'tend', '--var', 'registry=r:5000', '--json', 'status'])).toBe('status');
    expect(cacheName(['node', 'tend', '--env=dev', '--context', 'kind', 'deploy', 'api'])).toBe('deploy');
    expect(cacheName(['node', 'tend', '--version'])).toBe('default');
    expect(cacheName(['node', 'tend', '--root'])).toBe('default');
    expect(cacheName(['node', 'tend'])).toBe('default');
    expect(cacheName(['node', 'tend', '../../etc/passwd'])).toBe('default');
    expect(cacheName(['node', 'tend', 'a'.repeat(40)])).toBe('default');
  });

  it("knows every global option of tend's that takes a value", async () => {
    const help = await runTend(['--help'], { cwd: os.tmpdir() });
    expect(help.code, help.stderr).toBe(0);
    const options = help.stdout.slice(help.stdout.indexOf('Options:'), help.stdout.indexOf('Commands:'));
    const taking = [...options.matchAll(/^ {2}(?:-\w, )?(--[a-z-]+) [<[]/gm)].map((m) => m[1]);
    expect(taking.length).toBeGreaterThan(3);
    expect([...globalValueOptions].sort()).toEqual(taking.sort());
  });
});

describe('what the launcher tells V8', () => {
  const line = (...words: string[]) => ['node', '/x/bin/tend.js', ...words];

  it('makes TurboFan wait for a command, not for one that serves, nor over a flag Node was given', () => {
    const node20 = '11.3.244.8-node.38';
    expect(v8FlagFor(line('build'), [], node20)).toBe('--interrupt-budget=1000000');
    expect(v8FlagFor(line('--version'), [], node20)).toBe('--interrupt-budget=1000000');
    expect(v8FlagFor(line(), [], node20)).toBe('--interrupt-budget=1000000');
    expect(v8FlagFor(line('server', '--port', '0'), [], node20)).toBeUndefined();
    expect(v8FlagFor(line('agent'), [], node20)).toBeUndefined();
    expect(v8FlagFor(line('build'), ['--interrupt-budget=5000'], node20)).toBeUndefined();
    for (const v8 of ['12.4.254.21-node.57', '13.6.233.17-node.63']) {
      expect(v8FlagFor(line('build'), [], v8)).toBe('--invocation-count-for-turbofan=30000');
      expect(v8FlagFor(line('agent'), [], v8)).toBeUndefined();
      expect(v8FlagFor(line('build'), ['--invocation-count-for-turbofan=3000'], v8)).toBeUndefined();
      // Another flag's name that starts the same is not this one.
      expect(v8FlagFor(line('build'), ['--invocation-count-for-turbofan-x'], v8)).toBeDefined();
    }
  });

  it('turns Maglev off for a command on V8 13, not for one that serves, nor over a flag Node was given', () => {
    const v8 = '13.6.233.17-node.63';
    expect(maglevFlagFor(line('status'), [], v8)).toBe('--no-maglev');
    expect(maglevFlagFor(line('--version'), [], v8)).toBe('--no-maglev');
    expect(maglevFlagFor(line('server', '--port', '0'), [], v8)).toBeUndefined();
    expect(maglevFlagFor(line('agent'), [], v8)).toBeUndefined();
    expect(maglevFlagFor(line('build'), ['--maglev'], v8)).toBeUndefined();
    expect(maglevFlagFor(line('build'), ['--no-maglev'], v8)).toBeUndefined();
    // V8 12 (Node 22) has Maglev off already; a line not measured gets nothing.
    expect(maglevFlagFor(line('build'), [], '12.4.254.21-node.57')).toBeUndefined();
    expect(maglevFlagFor(line('build'), [], '14.1.146.11-node.20')).toBeUndefined();
  });

  it(`turns Maglev off only where this Node's V8 has it on (${process.version})`, () => {
    const known = spawnSync(process.execPath, ['--v8-options'], { encoding: 'utf8' }).stdout;
    const flag = maglevOff[Number(process.versions.v8.split('.')[0])];
    expect(maglevFlagFor(line('build'), [])).toBe(flag);
    expect(known).toMatch(
      flag
        ? /^\s+--maglev\s.*\n\s+type: bool\s+default: --maglev$/m
        : /^\s+--maglev\s.*\n\s+type: bool\s+default: --no-maglev$/m,
    );
  });

  it('sets no flag on a V8 line it was not measured on', () => {
    expect(v8FlagFor(line('build'), [], '14.1.146.11-node.20')).toBeUndefined();
    expect(v8FlagFor(line('build'), [], '10.2.154.26-node.26')).toBeUndefined();
  });

  it(`sets only a flag that this Node's V8 knows (${process.version}, V8 ${process.versions.v8})`, () => {
    const known = spawnSync(process.execPath, ['--v8-options'], { encoding: 'utf8' }).stdout;
    const delay = turbofanDelay[Number(process.versions.v8.split('.')[0])];
    const flag = v8FlagFor(line('build'), []);
    expect(flag).toBe(delay && `${delay.flag}=${delay.value}`);
    if (delay) expect(known).toMatch(new RegExp(`^\\s+${delay.flag}\\s`, 'm'));
  });

  it('prints nothing on stderr on this Node line, for a short command and one that serves', async () => {
    const root = makeProject(project);
    const version = await runTend(['--version'], { cwd: root });
    expect(version.code).toBe(0);
    expect(version.stderr).toBe('');
    const help = await runTend(['server', '--help'], { cwd: root });
    expect(help.code).toBe(0);
    expect(help.stderr).toBe('');
  });
});
