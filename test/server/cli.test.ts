/** The CLI side: token administration, `tend login` (credentials 0600, atomic) and `tend environments`. */
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { environmentsCommand } from '../../src/commands/environments.js';
import { loginCommand } from '../../src/commands/login.js';
import { migrateCommand } from '../../src/server/cli.js';
import { tokenCreateCommand, tokenListCommand, tokenRevokeCommand } from '../../src/server/admin-cli.js';
import type { TendError } from '../../src/errors.js';
import { migrations } from '../../src/server/db/database.js';
import { credentialsPath, readCredentials, resolveServer } from '../../src/remote/credentials.js';
import {
  createTestDatabase,
  createTestServer,
  dialects,
  postEvents,
  session,
  type TestServer,
} from './helpers.js';

describe.each(dialects)('tend server token on %s', (dialect) => {
  it('creates a token once, lists it without the secret, revokes it by name', async () => {
    const db = await createTestDatabase(dialect);
    const options = db.url ? { databaseUrl: db.url } : { dataDir: db.dir };
    try {
      const migrated = await migrateCommand(options);
      expect(migrated.data.applied).toEqual(Object.keys(migrations));
      expect((await migrateCommand(options)).data.applied).toEqual([]);

      const created = await tokenCreateCommand({ ...options, name: 'ci', scope: 'ingest', project: 'shop' });
      expect(created.data.token).toMatch(/^tend_[A-Za-z0-9_-]{43}$/);
      expect(created.human).toContain(created.data.token);
      await expect(tokenCreateCommand({ ...options, name: 'ci' })).rejects.toThrow(/already exists/);
      await expect(tokenCreateCommand({ ...options, name: 'x', scope: 'root' })).rejects.toThrow(
        /--scope must be one of/,
      );

      const listed = await tokenListCommand(options);
      expect(listed.data).toEqual([
        expect.objectContaining({ name: 'ci', scope: 'ingest', project: 'shop', revokedAt: null }),
      ]);
      expect(JSON.stringify(listed)).not.toContain(created.data.token);

      const revoked = await tokenRevokeCommand('ci', options);
      expect(revoked.data.revokedAt).not.toBeNull();
      const err = await tokenRevokeCommand('ci', options).catch((e: TendError) => e);
      expect((err as TendError).code).toBe('TEND_TOKEN_NOT_FOUND');
      // The name is free again.
      await tokenCreateCommand({ ...options, name: 'ci' });
    } finally {
      await db.drop();
    }
  });
});

describe('tend login and tend environments', () => {
  let s: TestServer;
  let url: string;
  let configDir: string;
  const saved = { ...process.env };
  beforeAll(async () => {
    s = await createTestServer('sqlite');
    url = await s.app.listen({ port: 0, host: '127.0.0.1' });
    const a = session({ user: 'zoe', command: 'deploy' });
    const b = session({ project: 'blog', user: 'yan' });
    await postEvents(s, [a.started(), a.ns('ready', { uid: 'z' }), b.started(), b.ns('ready', { uid: 'y' })]);
    await postEvents(s, [b.ns('missing', { uid: 'y' })]);
  });
  afterAll(async () => s.close());
  beforeEach(() => {
    configDir = mkdtempSync(join(tmpdir(), 'tend-config-'));
    process.env.TEND_CONFIG_DIR = configDir;
    delete process.env.TEND_SERVER_URL;
    delete process.env.TEND_TOKEN;
  });
  afterEach(() => {
    process.env = { ...saved };
    rmSync(configDir, { recursive: true, force: true });
  });

  it('stores verified credentials with mode 0600 and no temporary file left behind', async () => {
    const result = await loginCommand({ server: `${url}/`, token: s.tokens.read });
    expect(result.data.token).toEqual({ name: 'dev', scope: 'read', project: null });
    const file = credentialsPath();
    expect(file).toBe(join(configDir, 'credentials.json'));
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readdirSync(configDir)).toEqual(['credentials.json']);
    expect(readCredentials()).toMatchObject({ server: url, token: s.tokens.read });
    expect(result.human).not.toContain(s.tokens.read);
  });

  it('replaces existing credentials and keeps mode 0600', async () => {
    writeFileSync(join(configDir, 'credentials.json'), '{"server":"http://old","token":"old"}', {
      mode: 0o644,
    });
    await loginCommand({ server: url, token: s.tokens.admin });
    expect(statSync(credentialsPath()).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(credentialsPath(), 'utf8'))).toMatchObject({ token: s.tokens.admin });
  });

  it('refuses to store a token the server rejects', async () => {
    const err = (await loginCommand({ server: url, token: 'tend_wrong' }).catch(
      (e: unknown) => e,
    )) as TendError;
    expect(err.code).toBe('TEND_AUTH');
    expect(readCredentials()).toBeUndefined();
  });

  it('lists environments from the stored login, filtered', async () => {
    await loginCommand({ server: url, token: s.tokens.read });
    const all = await environmentsCommand({});
    expect(all.data.map((e) => e.namespace).sort()).toEqual(['blog-yan', 'shop-zoe']);
    expect(all.human).toMatch(/^PROJECT\s+ENVIRONMENT\s+NAMESPACE/);
    expect(all.human).toContain('tend deploy by zoe');
    const cleaned = await environmentsCommand({ state: 'cleaned' });
    expect(cleaned.data.map((e) => e.namespace)).toEqual(['blog-yan']);
    const shop = await environmentsCommand({ project: 'shop' });
    expect(shop.data.map((e) => e.namespace)).toEqual(['shop-zoe']);
  });

  it('prefers TEND_SERVER_URL and TEND_TOKEN over the stored login', async () => {
    await loginCommand({ server: 'http://127.0.0.1:1', token: 'tend_stale', verify: false });
    process.env.TEND_SERVER_URL = url;
    process.env.TEND_TOKEN = s.tokens.read;
    expect(resolveServer()).toEqual({ url, token: s.tokens.read, source: 'environment' });
    expect((await environmentsCommand({})).data).toHaveLength(2);
  });

  it('says what to do when no server or token is configured', async () => {
    await expect(environmentsCommand({})).rejects.toThrow(/no tend server configured/);
    process.env.TEND_SERVER_URL = url;
    await expect(environmentsCommand({})).rejects.toThrow(/no token/);
    process.env.TEND_TOKEN = s.tokens.ingest;
    const err = (await environmentsCommand({}).catch((e: unknown) => e)) as TendError;
    expect(err.code).toBe('TEND_AUTH_FORBIDDEN');
  });
});
