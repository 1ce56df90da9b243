/**
 * Unique ids (ULIDs: time-ordered, 26 characters) without a system call per id: `ulidx` reads one
 * random byte from the OS per character (16 calls per id); here the bytes come from a pool of
 * 4 KiB filled from the OS's CSPRNG at once.
 */
import { randomFillSync } from 'node:crypto';
import { ulid } from 'ulidx';

const pool = new Uint8Array(4096);
let next = pool.length;

/** A random number in [0, 1) from the pool, refilled when spent. */
function pooledRandom(): number {
  if (next === pool.length) {
    randomFillSync(pool);
    next = 0;
  }
  return pool[next++]! / 256;
}

/** A new ULID. */
export function newId(): string {
  return ulid(undefined, pooledRandom);
}
