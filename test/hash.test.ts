/** src/hash.ts: SHA-256 hex of text (as UTF-8) and bytes, the same as a createHash object's. */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { sha256Hex } from '../src/hash.js';

describe('sha256Hex', () => {
  it('is SHA-256 of UTF-8 text and of bytes', () => {
    expect(sha256Hex('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    for (const text of ['', 'é\u0000\u{1F600}', 'x'.repeat(100_000)]) {
      expect(sha256Hex(text)).toBe(createHash('sha256').update(text).digest('hex'));
      expect(sha256Hex(Buffer.from(text))).toBe(createHash('sha256').update(text).digest('hex'));
    }
  });
});
