/**
 * `npm run sso-sandbox`: try the dashboard's sign-in on this machine. Starts a local OpenID
 * provider (scripts/oidc-provider.ts, the one the tests use) on 127.0.0.1 with two people — `admin`
 * (group platform-team: admin of every project) and `viewer` (group everyone: viewer of every
 * project), any password —, writes the client secret and a roles file, and prints the exact
 * `tend server` command that signs people in through it. Runs until Ctrl-C, then removes the files
 * it wrote in a directory of its own.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { startTestProvider, type TestAccount } from './oidc-provider.js';

const usage = `usage: npm run sso-sandbox -- [--port 7421] [--tend-port 7420] [--dir DIR]
  --port       the provider's port on 127.0.0.1 (default 7421; 0: any free port)
  --tend-port  the port the tend server will listen on: its callback URL is registered (default 7420)
  --dir        where to write the client secret, the roles file and the server's data
               (default: a new temporary directory, removed at the end)`;

/** The two people of the sandbox, by login name. */
export const sandboxAccounts: Record<string, TestAccount> = {
  admin: { email: 'admin@example.com', email_verified: true, name: 'Ada Admin', groups: ['platform-team'] },
  viewer: { email: 'viewer@example.com', email_verified: true, name: 'Victor Viewer', groups: ['everyone'] },
};

const rolesFile = `# Who has which role, by the groups (or e-mail) the provider says a person has.
roles:
  - project: "*"
    role: admin
    groups: [platform-team]
  - project: "*"
    role: viewer
    groups: [everyone]
`;

function port(flag: string, value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || n > 65_535) {
    console.error(`sso-sandbox: --${flag} must be a port number (0-65535), got ${value}\n${usage}`);
    process.exit(2);
  }
  return n;
}

/** A word of a shell command line, quoted when the shell would split or expand it. */
const shellWord = (word: string) =>
  /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;

async function main(): Promise<void> {
  let args;
  try {
    args = parseArgs({
      options: {
        port: { type: 'string', default: '7421' },
        'tend-port': { type: 'string', default: '7420' },
        dir: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    }).values;
  } catch (error) {
    console.error(`sso-sandbox: ${(error as Error).message}\n${usage}`);
    process.exit(2);
  }
  if (args.help) {
    console.log(usage);
    return;
  }
  const providerPort = port('port', args.port);
  const tendPort = port('tend-port', args['tend-port']);
  if (tendPort === 0) {
    console.error(
      `sso-sandbox: --tend-port must name a port: the callback URL is registered with the provider\n${usage}`,
    );
    process.exit(2);
  }
  const ownDir = args.dir === undefined;
  const dir = ownDir ? mkdtempSync(path.join(tmpdir(), 'tend-sso-sandbox-')) : path.resolve(args.dir!);
  mkdirSync(dir, { recursive: true });
  const secretFile = path.join(dir, 'client-secret');
  const rolesPath = path.join(dir, 'roles.yaml');
  const clientSecret = randomBytes(24).toString('base64url');
  writeFileSync(secretFile, `${clientSecret}\n`, { mode: 0o600 });
  writeFileSync(rolesPath, rolesFile);

  const publicUrl = `http://127.0.0.1:${tendPort}`;
  const provider = await startTestProvider({
    redirectUri: `${publicUrl}/auth/callback`,
    accounts: sandboxAccounts,
    port: providerPort === 0 ? undefined : providerPort,
    clientSecret,
  });
  const command = [
    'tend',
    'server',
    '--port',
    String(tendPort),
    '--public-url',
    publicUrl,
    '--data-dir',
    path.join(dir, 'data'),
    '--oidc-issuer',
    provider.issuer,
    '--oidc-client-id',
    provider.clientId,
    '--oidc-client-secret-file',
    secretFile,
    '--roles-file',
    rolesPath,
  ].map(shellWord);
  const lines = [];
  for (let i = 0; i < command.length; i += 2) lines.push(command.slice(i, i + 2).join(' '));
  process.stdout.write(
    [
      `OpenID provider (sandbox) at ${provider.issuer}, for tend at ${publicUrl}`,
      '  people (any password):',
      ...Object.entries(sandboxAccounts).map(
        ([login, a]) => `    ${login.padEnd(7)} ${a.email}, group ${a.groups!.join(', ')}`,
      ),
      `  roles file:  ${rolesPath} (platform-team: admin, everyone: viewer, of every project)`,
      `  client secret file: ${secretFile}`,
      '',
      'Start a tend server that signs people in through it (in another terminal; tend is',
      '`node bin/tend.js` in this clone after npm run build):',
      '',
      `  ${lines.join(' \\\n    ')}`,
      '',
      `Then open ${publicUrl}/login, "Sign in with your company account", and sign in as admin or viewer.`,
      'Ctrl-C stops the sandbox.',
      '',
    ].join('\n'),
  );

  const stop = () => {
    void provider.close().then(() => {
      if (ownDir) rmSync(dir, { recursive: true, force: true });
      process.exit(0);
    });
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

void main();
