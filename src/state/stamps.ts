/**
 * What identifies a file's (or a directory's) state without reading it — its modification and
 * change times, size and inode — and when such a stamp can be trusted. A digest or a key kept
 * beside the stamps of what it was worked out from is used again while they hold: source digests
 * (graph/sources.ts), kustomize renderings' keys (plugins/kubernetes/kustomize-kept.ts).
 */
import type { Stats } from 'node:fs';

export type Stamp = [mtimeMs: number, ctimeMs: number, size: number, ino: number];

export function stampOf(stat: Stats): Stamp {
  return [stat.mtimeMs, stat.ctimeMs, stat.size, stat.ino];
}

/** Whether a kept record's first four values are `stamp` (a record from a file may hold anything). */
export function sameStamp(kept: readonly unknown[], stamp: Stamp): boolean {
  return stamp.every((value, i) => kept[i] === value);
}

/**
 * How long a file must have been unchanged before its stamp is kept: a change right after it was
 * read could leave the same times (the clock is coarse) and size.
 */
const racyMs = 2000;

/** Whether a stamp, taken now, is old enough to be kept. */
export function settled(stamp: Stamp): boolean {
  return Date.now() - Math.max(stamp[0], stamp[1]) > racyMs;
}
