/**
 * Listing an action's source files (src/graph/sources.ts) walks the directory with patterns
 * compiled once per process; it must list exactly what fast-glob lists with tend's options, for
 * any tree (dot files, ignored directories, symbolic links) and any include/exclude.
 */
import fc from 'fast-check';
import fg from 'fast-glob';
import { mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  alwaysExcluded,
  clearSourceCache,
  configurationFiles,
  listSourceFiles,
} from '../../src/graph/sources.js';

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
  it('lists what fast-glob lists, for any tree and patterns', () => {
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
        expect(listed).toEqual(fg.sync(include ?? ['**/*'], options).sort());
      }),
      { numRuns: 300 },
    );
  });

  it('reads a source directory that does not exist as no files', () => {
    clearSourceCache();
    expect(listSourceFiles(path.join(os.tmpdir(), 'tend-no-such-directory-here'))).toEqual([]);
  });
});
