/**
 * Reading a secret the server is given as a file (`--oidc-client-secret-file`,
 * `--github-webhook-secret-file`, `--archive-key-file`): a file that cannot be read is a usage
 * error naming the flag and the file. What the secret must look like is each caller's check.
 */
import { readFileSync } from 'node:fs';
import { TendError } from '../errors.js';

/** The file's bytes (raw: an archive key may be 32 bytes that are not text). */
export function readSecretFile(flag: string, file: string): Buffer {
  try {
    return readFileSync(file);
  } catch (error) {
    throw new TendError('TEND_USAGE', `${flag}: cannot read ${file}: ${(error as Error).message}`);
  }
}

/** The file's text without surrounding white space (a trailing newline is not part of a secret). */
export function readSecretText(flag: string, file: string): string {
  return readSecretFile(flag, file).toString('utf8').trim();
}
