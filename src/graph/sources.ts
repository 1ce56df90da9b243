/**
 * Source files of an action (after include/exclude) and their content hashes, cached for the
 * process: many actions share a directory, and a file is read and hashed once per session.
 * Reading a file also finds the template expressions in it (`${var.replicas}` in a manifest), so
 * that a version can cover the values a plugin may substitute into the file.
 */
import fg from 'fast-glob';
import { createHash } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';

/** Never part of an action's source: tend's own state, VCS data, installed dependencies. */
export const alwaysExcluded = ['**/.tend/**', '**/.git/**', '**/node_modules/**'];

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
 * The action's source files, relative to `sourceDir` and sorted.
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
    files = fg
      .sync(include && include.length > 0 ? include : ['**/*'], {
        cwd: sourceDir,
        dot: true,
        onlyFiles: true,
        followSymbolicLinks: false,
        ignore,
      })
      .sort();
    listings.set(key, files);
  }
  return files;
}

/** `${root.key…}` with a root that a file could be resolved against; `$${` (a literal) is not one. */
const fileExpressionPattern = /(?<!\$)\$\{\s*((?:project|environment|var|local)(?:\.[A-Za-z0-9_-]+)+)\s*\}/g;

function digestFile(file: string): FileDigest {
  const stat = statSync(file);
  const cached = fileDigests.get(file);
  if (cached && cached.mtimeMs === stat.mtimeMs && cached.size === stat.size) return cached;
  const content = readFileSync(file);
  const hash = createHash('sha256').update(content).digest('hex');
  const expressions = new Set<string>();
  const text = content.toString('latin1');
  if (text.includes('${')) {
    for (const match of text.matchAll(fileExpressionPattern)) expressions.add(match[1]!);
  }
  const digest = { mtimeMs: stat.mtimeMs, size: stat.size, hash, expressions: [...expressions] };
  fileDigests.set(file, digest);
  return digest;
}

/**
 * One hash over the relative paths and contents of the files, and the template expressions
 * (other than action outputs) that appear in them, sorted.
 */
export function digestSources(sourceDir: string, files: string[]): { hash: string; expressions: string[] } {
  const hash = createHash('sha256');
  const expressions = new Set<string>();
  for (const file of files) {
    const digest = digestFile(path.join(sourceDir, file));
    hash.update(file).update('\0').update(digest.hash).update('\n');
    for (const expression of digest.expressions) expressions.add(expression);
  }
  return { hash: hash.digest('hex'), expressions: [...expressions].sort() };
}

/** Forget cached listings and hashes (tests and long-running processes that watch files). */
export function clearSourceCache(): void {
  listings.clear();
  fileDigests.clear();
}
