/**
 * SHA-256 as hex, the one way tend hashes (content, versions, tokens, names). `crypto.hash`
 * (Node 20.12) is one call into C++; a `createHash` object costs twice as much for the short
 * texts hashed per action, thousands of times in a large project's run. Older Node 20s use
 * `createHash`.
 */
import crypto from 'node:crypto';

const oneShot = typeof crypto.hash === 'function' ? crypto.hash : undefined;

export function sha256Hex(data: string | Buffer): string {
  return oneShot ? oneShot('sha256', data, 'hex') : crypto.createHash('sha256').update(data).digest('hex');
}
