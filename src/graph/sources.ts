/**
 * Source files of an action (after include/exclude) and their content hashes, cached for the
 * process: many actions share a directory, and a file is read and hashed once per session.
 */
import fg from 'fast-glob';
import { createHash } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';

/** Never part of an action's source: tend's own state, VCS data, installed dependencies. */
export const alwaysExcluded = ['**/.tend/**', '**/.git/**', '**/node_modules/**'];

const listings = new Map<string, string[]>();
const fileHashes = new Map<string, { mtimeMs: number; size: number; hash: string }>();

export function listSourceFiles(sourceDir: string, include?: string[], exclude?: string[]): string[] {
  const key = `${sourceDir}\0${(include ?? []).join('\0')}\0${(exclude ?? []).join('\0')}`;
  let files = listings.get(key);
  if (!files) {
    files = fg
      .sync(include && include.length > 0 ? include : ['**/*'], {
        cwd: sourceDir,
        dot: true,
        onlyFiles: true,
        followSymbolicLinks: false,
        ignore: [...alwaysExcluded, ...(exclude ?? [])],
      })
      .sort();
    listings.set(key, files);
  }
  return files;
}

export function hashFile(file: string): string {
  const stat = statSync(file);
  const cached = fileHashes.get(file);
  if (cached && cached.mtimeMs === stat.mtimeMs && cached.size === stat.size) return cached.hash;
  const hash = createHash('sha256').update(readFileSync(file)).digest('hex');
  fileHashes.set(file, { mtimeMs: stat.mtimeMs, size: stat.size, hash });
  return hash;
}

/** One hash over the relative paths and contents of the files. */
export function hashSources(sourceDir: string, files: string[]): string {
  const hash = createHash('sha256');
  for (const file of files) {
    hash
      .update(file)
      .update('\0')
      .update(hashFile(path.join(sourceDir, file)))
      .update('\n');
  }
  return hash.digest('hex');
}

/** Forget cached listings and hashes (tests and long-running processes that watch files). */
export function clearSourceCache(): void {
  listings.clear();
  fileHashes.clear();
}
