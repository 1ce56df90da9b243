/**
 * Listing an action's source files (src/graph/sources.ts) walks the directory with patterns
 * compiled once per process; it must list exactly what fast-glob lists with tend's options, for
 * any tree (dot files, ignored directories, symbolic links) and any include/exclude.
 */
import fc from 'fast-check';
import fg from 'fast-glob';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  alwaysExcluded,
  clearSourceCache,
  configurationFiles,
  digestSources,
  listSourceFiles,
  loadDigestCache,
  saveDigestCache,
} from '../../src/graph/sources.js';
import { waitFor } from '../helpers/project.js';

const roots: string[] = [];
afterAll(() => {
  for (const root of roots) rmSync(root, { recursive: true, force: true });
});

const segment = fc.constantFrom(
  'a',
  'b',
  '.h',
  'dist',
  'node_modules',
  'x.md',
  'y.js',
  'c.tend.yml',
  'tend.yml',
);
const entry = fc.record({
  path: fc.array(segment, { minLength: 1, maxLength: 4 }),
  link: fc.constantFrom(undefined, undefined, undefined, 'a', 'x.md', 'missing'),
});
const includes = fc.option(
  fc.subarray(
    [
      '**/*',
      '*.md',
      '**/*.js',
      'a/**',
      'a/*',
      'dist',
      'b/**/*.md',
      '{a,b}/**',
      '.h/**',
      'x.md',
      '!a/**',
      './b/**',
      'a/b/*.js',
    ],
    {
      minLength: 1,
      maxLength: 3,
    },
  ),
  { nil: undefined },
);
const excludes = fc.option(
  fc.subarray(['dist/**', 'dist', '**/*.md', 'a', '*.js', 'b/*', '.h', 'a/b/**', '**/b'], { maxLength: 3 }),
  { nil: undefined },
);

/** Writes the tree: files (or symbolic links) at the given paths, a path that is a directory wins. */
function writeTree(entries: { path: string[]; link: string | undefined }[]): string {
  const root = mkdtempSync(path.join(os.tmpdir(), 'tend-sources-'));
  roots.push(root);
  const directories = new Set(
    entries.flatMap((e) => e.path.slice(0, -1).map((_, i) => e.path.slice(0, i + 1).join('/'))),
  );
  for (const { path: parts, link } of entries) {
    const file = parts.join('/');
    if (directories.has(file)) continue;
    try {
      mkdirSync(path.join(root, ...parts.slice(0, -1)), { recursive: true });
      if (link) symlinkSync(path.join(root, link), path.join(root, file));
      else writeFileSync(path.join(root, file), file, { flag: 'wx' });
    } catch {
      // the same path twice, or below what is already a file
    }
  }
  return root;
}

/** A directory, or nothing at all: what fast-glob can read a pattern's files from. */
function readable(dir: string): boolean {
  try {
    return statSync(dir).isDirectory();
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ENOENT';
  }
}

describe('listSourceFiles', () => {
  it('lists what fast-glob lists (without a leading ./), for any tree and patterns', () => {
    fc.assert(
      fc.property(fc.array(entry, { maxLength: 12 }), includes, excludes, (tree, include, exclude) => {
        const root = writeTree(tree);
        const projectFile = path.join(root, 'tend.yml');
        clearSourceCache();
        const listed = listSourceFiles(root, include, exclude, projectFile);
        const options = {
          cwd: root,
          dot: true,
          onlyFiles: true,
          followSymbolicLinks: false,
          ignore: [...alwaysExcluded, ...configurationFiles, ...(exclude ?? []), 'tend.yml'],
        };
        // fast-glob fails when the directory a pattern is read from is not one (`a/b/*.js` or
        // `{a,b}/**` with a file `a`): it throws ENOTDIR or lists nothing at all. Not compared.
        fc.pre(
          fg
            .generateTasks(include ?? ['**/*'], options)
            .every((task) => !task.dynamic || task.base === '.' || readable(path.join(root, task.base))),
        );
        const globbed = fg.sync(include ?? ['**/*'], options).map((f) => f.replace(/^\.\//, ''));
        expect(listed).toEqual([...new Set(globbed)].sort());
      }),
      { numRuns: 300 },
    );
  });

  it('reads a source directory that does not exist as no files', () => {
    clearSourceCache();
    expect(listSourceFiles(path.join(os.tmpdir(), 'tend-no-such-directory-here'))).toEqual([]);
  });
});

describe('file digests kept across processes', () => {
  function project(): { root: string; cache: string; file: string } {
    const root = mkdtempSync(path.join(os.tmpdir(), 'tend-digests-'));
    roots.push(root);
    writeFileSync(path.join(root, 'a.txt'), 'first');
    return { root, cache: path.join(root, '.tend', 'cache'), file: path.join(root, 'a.txt') };
  }
  /** What a new process computes: nothing in memory, the kept digests read again. */
  function digestAsNewProcess(root: string, cache: string): string {
    clearSourceCache();
    loadDigestCache(cache);
    const { hash } = digestSources(root, ['a.txt']);
    saveDigestCache();
    return hash;
  }
  const digests = (cache: string) =>
    JSON.parse(readFileSync(path.join(cache, 'digests.json'), 'utf8')) as {
      files: Record<string, [number, number, number, number, string, string[]]>;
    };

  it('uses a kept digest while the file is unchanged, and reads a changed file again', async () => {
    const { root, cache, file } = project();
    // Kept only once the file is older than its clock's coarseness could hide.
    await waitFor(() => Date.now() - statSync(file).ctimeMs > 2100, 'the file to be 2 s old', 5000);
    const first = digestAsNewProcess(root, cache);
    const kept = digests(cache);
    expect(Object.keys(kept.files)).toEqual([file]);

    // The kept digest is what a later process uses (here: one made up)…
    kept.files[file]![4] = '0'.repeat(64);
    writeFileSync(path.join(cache, 'digests.json'), JSON.stringify(kept));
    expect(digestAsNewProcess(root, cache)).not.toBe(first);
    // …until the file changes, even to content of the same size.
    writeFileSync(file, 'again');
    const changed = digestAsNewProcess(root, cache);
    writeFileSync(file, 'first');
    expect(changed).not.toBe(first);
    expect(digestAsNewProcess(root, cache)).toBe(first);
  });

  it('does not keep the digest of a file changed a moment ago', () => {
    const { root, cache } = project();
    digestAsNewProcess(root, cache);
    expect(existsSync(path.join(cache, 'digests.json'))).toBe(false);
  });

  it('ignores a damaged digests file', async () => {
    const { root, cache, file } = project();
    const first = digestAsNewProcess(root, cache);
    mkdirSync(cache, { recursive: true });
    for (const damaged of ['{"format":1,"files":{"x":[1]}}', 'nope', '{"format":1', '\u0000']) {
      writeFileSync(path.join(cache, 'digests.json'), damaged);
      expect(digestAsNewProcess(root, cache)).toBe(first);
    }
    expect(readFileSync(file, 'utf8')).toBe('first');
  });
});
