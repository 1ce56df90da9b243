/**
 * The first start of `tend server` (the CLI bundle) on an empty data directory says whether people
 * sign in through an OpenID provider and, when they do, the redirect URI to register there: the
 * very one the server sends the provider (what `/auth/login` puts in `redirect_uri`), with the
 * port it got for `--port 0`, or under `--public-url`. Without the sign-in flags it says sign-in
 * is off. (The rest of the summary: test/e2e/server-admin.test.ts.)
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTend } from '../helpers/project.js';
import { startTestProvider, type TestProvider } from '../../scripts/oidc-provider.js';

const listening = /tend server listening on (http:\/\/127\.0\.0\.1:\d+)/;
const summaryEnd = /tend server token create --name admin[^\n]*\n/;

describe('the first start of tend server', () => {
  let dir: string;
  let provider: TestProvider;
  let signInFlags: string[];
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tend-first-start-'));
    provider = await startTestProvider({
      redirectUri: 'https://tend.example.com/auth/callback',
      accounts: {},
    });
    const secretFile = join(dir, 'client-secret');
    writeFileSync(secretFile, `${provider.clientSecret}\n`);
    const rolesFile = join(dir, 'roles.yaml');
    writeFileSync(rolesFile, 'roles:\n  - project: "*"\n    role: viewer\n    groups: [everyone]\n');
    signInFlags = [
      '--oidc-issuer',
      provider.issuer,
      '--oidc-client-id',
      provider.clientId,
      '--oidc-client-secret-file',
      secretFile,
      '--roles-file',
      rolesFile,
    ];
  });
  afterAll(async () => {
    await provider?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /**
   * Starts a server on a new data directory with `args`; answers its first-start summary, where it
   * listens and the redirect URI its `/auth/login` sends the browser to the provider with.
   */
  async function firstStart(name: string, args: string[]) {
    const env = { TEND_DATABASE_URL: '', TEND_DATA_DIR: '' };
    const server = startTend(['server', '--port', '0', '--data-dir', join(dir, name), ...args], { env });
    try {
      await server.waitForOutput(summaryEnd, 'the first-start summary');
      // The log line is written apart from the summary (pino's own stream): either may come first.
      const output = await server.waitForOutput(listening, 'the server to listen');
      const url = listening.exec(output)![1]!;
      const login = await fetch(`${url}/auth/login`, { redirect: 'manual' });
      const location = login.headers.get('location');
      const sent = location === null ? undefined : new URL(location).searchParams.get('redirect_uri');
      const summary = output.slice(output.indexOf('tend server started on a new database.'));
      return { summary, url, sent, login: login.status };
    } finally {
      server.signal('SIGTERM');
      await server.exited;
    }
  }

  it('with sign-in and --port 0: the redirect URI at the port it got, the one the server uses', async () => {
    const { summary, url, sent } = await firstStart('port-0', signInFlags);
    expect(url).not.toBe('http://127.0.0.1:0');
    expect(sent).toBe(`${url}/auth/callback`);
    expect(summary).toContain(`  sign-in    on, through the OpenID provider ${provider.issuer}\n`);
    expect(summary).toContain(`register this redirect URI with it: ${sent}\n`);
    expect(summary).not.toContain(provider.clientSecret);
  });

  it('with sign-in and --public-url: the redirect URI under the public URL', async () => {
    const { summary, sent } = await firstStart('public-url', [
      ...signInFlags,
      '--public-url',
      'https://tend.example.com',
    ]);
    expect(sent).toBe('https://tend.example.com/auth/callback');
    expect(summary).toContain(`register this redirect URI with it: ${sent}\n`);
  });

  it('without the sign-in flags: says sign-in is off, token login only', async () => {
    const { summary, login } = await firstStart('no-sign-in', []);
    expect(login).toBe(404);
    expect(summary).toMatch(/^ {2}sign-in {4}off: token login only/m);
    expect(summary).not.toContain('redirect URI');
  });
});
