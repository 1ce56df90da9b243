/**
 * Where the CLI finds the server and its token: `TEND_SERVER_URL` / `TEND_TOKEN`, else the
 * credentials `tend login` stored in `$TEND_CONFIG_DIR/credentials.json` (default
 * `~/.config/tend/credentials.json`), written atomically with mode 0600. Used by
 * `tend environments`, `tend agent` and the event stream. And a token kept in a file of its own
 * (`--token-file`: a mounted Secret), so that it is not on a command line.
 */
import { chmodSync, mkdirSync, readFileSync, renameSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { TendError } from '../errors.js';
import { redactUrl } from '../redact.js';

export interface StoredCredentials {
  server: string;
  token: string;
  savedAt: string;
}

export function configDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.TEND_CONFIG_DIR || join(env.XDG_CONFIG_HOME || join(homedir(), '.config'), 'tend');
}

export function credentialsPath(env: NodeJS.ProcessEnv = process.env): string {
  return join(configDir(env), 'credentials.json');
}

/** The server URL without a trailing slash; an error when it is not http(s). */
export function normaliseServerUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new TendError(
      'TEND_USAGE',
      `"${redactUrl(value)}" is not a URL; expected e.g. http://localhost:7420`,
    );
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new TendError(
      'TEND_USAGE',
      `the server URL must be http:// or https://, got "${redactUrl(value)}"`,
    );
  }
  return url.toString().replace(/\/+$/, '');
}

export function readCredentials(env: NodeJS.ProcessEnv = process.env): StoredCredentials | undefined {
  const file = credentialsPath(env);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new TendError('TEND_AUTH', `cannot read ${file}: ${(error as Error).message}`, { cause: error });
  }
  try {
    const parsed = JSON.parse(text) as Partial<StoredCredentials>;
    if (typeof parsed.server === 'string' && typeof parsed.token === 'string') {
      return { server: parsed.server, token: parsed.token, savedAt: String(parsed.savedAt ?? '') };
    }
  } catch {
    // reported below
  }
  throw new TendError('TEND_AUTH', `${file} is not valid credentials; run tend login again`);
}

/** Writes the credentials with mode 0600: a temporary file in the same directory, then rename. */
export function writeCredentials(
  credentials: { server: string; token: string },
  env: NodeJS.ProcessEnv = process.env,
): string {
  const file = credentialsPath(env);
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  const temp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  const body: StoredCredentials = { ...credentials, savedAt: new Date().toISOString() };
  try {
    writeFileSync(temp, JSON.stringify(body, null, 2) + '\n', { mode: 0o600, flag: 'wx' });
    chmodSync(temp, 0o600);
    renameSync(temp, file);
  } catch (error) {
    try {
      unlinkSync(temp);
    } catch {
      // nothing to clean
    }
    throw new TendError('TEND_AUTH', `cannot write ${file}: ${(error as Error).message}`, { cause: error });
  }
  return file;
}

/** Longest token file read: a token is 48 characters; anything much longer is not one. */
const maxTokenFileBytes = 4096;

/** The token in a file (`--token-file`), without surrounding white space. */
export function readTokenFile(file: string): string {
  let text: string;
  try {
    const stat = statSync(file);
    if (!stat.isFile()) throw new Error('not a regular file');
    if (stat.size > maxTokenFileBytes) throw new Error(`larger than ${maxTokenFileBytes} bytes: not a token`);
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new TendError('TEND_USAGE', `--token-file: cannot read ${file}: ${(error as Error).message}`, {
      cause: error,
    });
  }
  const token = text.trim();
  if (!token || /\s/.test(token)) {
    throw new TendError(
      'TEND_USAGE',
      `--token-file: ${file} must hold one token (it is ${token ? 'several words' : 'empty'})`,
    );
  }
  return token;
}

export interface ServerConnection {
  url: string;
  token?: string;
  /** Where the settings came from, for messages. */
  source: 'environment' | 'credentials' | 'option';
}

/** The server to talk to: explicit values, then TEND_SERVER_URL/TEND_TOKEN, then the stored login. */
export function resolveServer(
  explicit: { server?: string; token?: string } = {},
  env: NodeJS.ProcessEnv = process.env,
): ServerConnection | undefined {
  const stored = () => readCredentials(env);
  // An empty variable is an unset one (`TEND_TOKEN= tend …`).
  const envToken = env.TEND_TOKEN || undefined;
  if (explicit.server) {
    const url = normaliseServerUrl(explicit.server);
    const s = stored();
    return {
      url,
      token: explicit.token ?? envToken ?? (s && normaliseServerUrl(s.server) === url ? s.token : undefined),
      source: 'option',
    };
  }
  if (env.TEND_SERVER_URL) {
    const url = normaliseServerUrl(env.TEND_SERVER_URL);
    const s = stored();
    return {
      url,
      token: explicit.token ?? envToken ?? (s && normaliseServerUrl(s.server) === url ? s.token : undefined),
      source: 'environment',
    };
  }
  const s = stored();
  if (!s) return undefined;
  return {
    url: normaliseServerUrl(s.server),
    token: explicit.token ?? envToken ?? s.token,
    source: 'credentials',
  };
}

/** The configured server with its token, or a clear error saying how to configure one. */
export function requireServer(options: { server?: string; token?: string }): ServerConnection & {
  token: string;
} {
  const connection = resolveServer({ server: options.server, token: options.token });
  if (!connection) {
    throw new TendError('TEND_SERVER_NOT_CONFIGURED', 'no tend server configured', {
      detail: { hint: 'run tend login --server URL --token T, or set TEND_SERVER_URL and TEND_TOKEN' },
    });
  }
  if (!connection.token) {
    throw new TendError('TEND_AUTH', `no token for ${redactUrl(connection.url)}`, {
      detail: { hint: 'run tend login --server URL --token T, or set TEND_TOKEN' },
    });
  }
  return { ...connection, token: connection.token };
}
