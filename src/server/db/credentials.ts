/**
 * The secrets the server hands out and keeps only as hashes: API tokens (`tend_` followed by 32
 * random bytes in base64url, shown once when created) and the opaque values of session cookies
 * and CSRF tokens. The repositories store each one's sha256 and look it up by that.
 */
import { randomBytes } from 'node:crypto';
import { sha256Hex } from '../../hash.js';

export const tokenPrefix = 'tend_';

export function generateToken(): string {
  return tokenPrefix + randomBytes(32).toString('base64url');
}

/** Random opaque value for cookies and CSRF tokens. */
export function generateSecret(): string {
  return randomBytes(32).toString('base64url');
}

export function hashToken(token: string): string {
  return sha256Hex(token);
}

/** The visible start of a token, for lists: `tend_AbCd`. */
export function displayPrefix(token: string): string {
  return token.slice(0, tokenPrefix.length + 4);
}
