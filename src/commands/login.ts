/** `tend login --server URL --token T`: checks the token with the server and stores both (0600). */
import type { CommandResult, GlobalOptions } from '../cli/output.js';
import { TendError } from '../errors.js';
import { normaliseServerUrl, writeCredentials } from '../remote/credentials.js';
import { apiRequest } from '../remote/client.js';

export interface LoginOptions extends GlobalOptions {
  server: string;
  token: string;
  /** false with --no-verify: store without asking the server. */
  verify?: boolean;
}

export interface LoginResult {
  server: string;
  file: string;
  token?: { name: string; scope: string; project: string | null };
}

export async function loginCommand(options: LoginOptions): Promise<CommandResult<LoginResult>> {
  const server = normaliseServerUrl(options.server);
  const token = options.token.trim();
  if (!token) throw new TendError('TEND_USAGE', '--token must not be empty');
  let who: LoginResult['token'];
  if (options.verify !== false) {
    who = await apiRequest<{ name: string; scope: string; project: string | null }>(
      { url: server, token },
      '/api/v1/auth/whoami',
    );
  }
  const file = writeCredentials({ server, token });
  const human = who
    ? `Logged in to ${server} as token "${who.name}" (scope ${who.scope}${who.project ? `, project ${who.project}` : ''}).\nCredentials saved to ${file}.`
    : `Credentials for ${server} saved to ${file} (not verified).`;
  return { data: { server, file, ...(who ? { token: who } : {}) }, human, exitCode: 0 };
}
