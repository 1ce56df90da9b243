/**
 * The archive key (`tend server --archive-key-file`): 32 bytes that seal the Secrets of every
 * archive with AES-256-GCM (node:crypto), together with the archive's body as authenticated
 * data, so that a change to either is refused when the archive is read back. The key lives only
 * in the file and the server's memory; the database keeps its SHA-256 fingerprint, which tells
 * an archive sealed with another key apart from a tampered one. The project secrets of
 * `${secrets.*}` (`--secrets-key-file`, secrets.ts) are sealed the same way, with a key of their own.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { readSecretFile } from '../secret-file.js';
import { TendError } from '../../errors.js';

export interface ArchiveKey {
  readonly key: Buffer;
  /** `sha256:<first 16 hex digits>` of the key: stored beside what it sealed, never the key. */
  readonly fingerprint: string;
}

const ivBytes = 12;
const tagBytes = 16;

/** The key from its bytes: 32 raw bytes, or 64 hex digits, or base64 of 32 bytes (trailing newline ignored). */
export function archiveKeyOf(content: Buffer, source: string, flag = '--archive-key-file'): ArchiveKey {
  const text = content.toString('utf8').trim();
  const key =
    content.length === 32
      ? content
      : /^[0-9a-fA-F]{64}$/.test(text)
        ? Buffer.from(text, 'hex')
        : /^[A-Za-z0-9+/]{43}=$/.test(text)
          ? Buffer.from(text, 'base64')
          : undefined;
  if (!key || key.length !== 32) {
    throw new TendError(
      'TEND_USAGE',
      `${flag}: ${source} must hold a 32-byte key: 64 hex digits (generate one with \`openssl rand -hex 32\`), base64 of 32 bytes, or 32 raw bytes`,
    );
  }
  const fingerprint = `sha256:${createHash('sha256').update(key).digest('hex').slice(0, 16)}`;
  return { key, fingerprint };
}

export function readArchiveKey(file: string): ArchiveKey {
  return archiveKeyOf(readSecretFile('--archive-key-file', file), file);
}

/** AES-256-GCM of `plaintext` bound to `aad`: base64 of iv, tag and ciphertext. */
export function seal(key: ArchiveKey, plaintext: Buffer, aad: Buffer): string {
  const iv = randomBytes(ivBytes);
  const cipher = createCipheriv('aes-256-gcm', key.key, iv);
  cipher.setAAD(aad);
  const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), ciphertext]).toString('base64');
}

/** The plaintext, or undefined when the ciphertext, its tag or `aad` were changed (or the key is another). */
export function openSealed(key: ArchiveKey, sealed: string, aad: Buffer): Buffer | undefined {
  const bytes = Buffer.from(sealed, 'base64');
  try {
    if (bytes.length < ivBytes + tagBytes) return undefined;
    const decipher = createDecipheriv('aes-256-gcm', key.key, bytes.subarray(0, ivBytes));
    decipher.setAuthTag(bytes.subarray(ivBytes, ivBytes + tagBytes));
    decipher.setAAD(aad);
    return Buffer.concat([decipher.update(bytes.subarray(ivBytes + tagBytes)), decipher.final()]);
  } catch {
    return undefined;
  }
}

/** The plaintext, or TEND_ARCHIVE when the ciphertext, its tag or `aad` were changed. */
export function unseal(key: ArchiveKey, sealed: string, aad: Buffer, what: string): Buffer {
  const plaintext = openSealed(key, sealed, aad);
  if (!plaintext) {
    throw new TendError(
      'TEND_ARCHIVE',
      `${what} fails authentication: it was changed after it was stored (AES-256-GCM); it is not restored`,
    );
  }
  return plaintext;
}
