/**
 * The project secrets of `${secrets.NAME}` offline: a local YAML file instead of `tend server`
 * (docs/templates.md#secrets). `TEND_SECRETS_FILE`, else `.tend/secrets.yml` in the project
 * root when it exists. tend only reads it; it must be a regular file only its owner can read or
 * write (mode 0600), no larger than 1 MiB:
 *
 *     secrets:            # every environment's
 *       DB_PASSWORD: local-password
 *     environments:
 *       ci:               # this environment's own, over the project-wide ones
 *         DB_PASSWORD: ci-password
 *
 * Also the rules every secret follows, the server's too: the name pattern and the longest value.
 */
import { statSync } from 'node:fs';
import path from 'node:path';
import { TendError } from '../errors.js';
import { readSingleDocument } from './single-document.js';

/** A secret's name: what `${secrets.NAME}` can spell (letters, digits, `_`, `-`; not a digit first; at most 64). */
export const secretNamePattern = /^[A-Za-z_][A-Za-z0-9_-]{0,63}$/;
/** The longest value, in characters. */
export const secretValueMaxLength = 65_536;

const maxFileBytes = 1024 * 1024;

/** The local secrets file in force: TEND_SECRETS_FILE, else `.tend/secrets.yml` when it exists; undefined: none. */
export function localSecretsFile(root: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (env.TEND_SECRETS_FILE) return path.resolve(env.TEND_SECRETS_FILE);
  const file = path.join(root, '.tend', 'secrets.yml');
  try {
    statSync(file);
    return file;
  } catch {
    return undefined;
  }
}

/** The file's values for an environment: the project-wide ones, the environment's own over them. */
export function readSecretsFile(file: string, environment: string): Record<string, string> {
  let mode: number;
  let size: number;
  try {
    const stat = statSync(file);
    if (!stat.isFile()) throw new Error('not a regular file');
    ({ mode, size } = stat);
  } catch (error) {
    throw new TendError('TEND_USAGE', `cannot read the secrets file ${file}: ${(error as Error).message}`, {
      detail: { hint: 'TEND_SECRETS_FILE names it; unset it to use .tend/secrets.yml or the tend server' },
    });
  }
  if (process.platform !== 'win32' && (mode & 0o077) !== 0) {
    throw new TendError(
      'TEND_USAGE',
      `the secrets file ${file} can be read or written by others (mode ${(mode & 0o777).toString(8)}); it must be 0600`,
      { detail: { hint: `chmod 600 ${file}` } },
    );
  }
  if (size > maxFileBytes) {
    throw new TendError('TEND_USAGE', `the secrets file ${file} is over 1 MiB (${size} bytes)`);
  }
  const document = readSingleDocument(file, {
    what: `the secrets file ${file}`,
    oneDocument: 'a secrets file holds one YAML document',
  });
  if (document.empty) return {};
  const invalid = (message: string, at: (string | number)[]) =>
    new TendError('TEND_CONFIG_INVALID', message, { location: document.locate(at) });
  const root = document.value;
  if (!isMapping(root)) throw invalid('a secrets file is a mapping with secrets: and environments:', []);
  for (const key of Object.keys(root)) {
    if (key !== 'secrets' && key !== 'environments') {
      throw invalid(`unknown key "${key}" in a secrets file; expected secrets: and environments:`, [key]);
    }
  }
  const valuesOf = (value: unknown, at: (string | number)[]): Record<string, string> => {
    if (value === undefined || value === null) return {};
    if (!isMapping(value)) throw invalid('expected a mapping of secret names to values', at);
    for (const [name, secret] of Object.entries(value)) {
      if (!secretNamePattern.test(name)) {
        throw invalid(
          `"${name.slice(0, 80)}" is not a secret name: letters, digits, "_" and "-", not a digit first, at most 64`,
          [...at, name],
        );
      }
      if (typeof secret !== 'string' || secret.length > secretValueMaxLength) {
        // Never the value itself: it is a secret, even when it is written wrong.
        throw invalid(
          `secret ${name} must be a string of at most ${secretValueMaxLength} characters (quote numbers)`,
          [...at, name],
        );
      }
    }
    return value as Record<string, string>;
  };
  const environments = root.environments;
  if (environments !== undefined && environments !== null && !isMapping(environments)) {
    throw invalid('environments: is a mapping of environment names to their secrets', ['environments']);
  }
  const own = isMapping(environments) ? environments[environment] : undefined;
  return {
    ...valuesOf(root.secrets, ['secrets']),
    ...valuesOf(own, ['environments', environment]),
  };
}

function isMapping(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
