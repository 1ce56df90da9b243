/**
 * The project secrets of `${secrets.NAME}` on both databases: admins set, list and delete them;
 * a developer token of the project reads the values an environment resolves (the environment's
 * own over the project-wide one); another project's token, a read token and an ingest token are
 * refused. Values are sealed at rest, bound to their row, and never in a listing, the audit log
 * or the server's log. Hostile input is a 4xx that stores nothing, never a 500.
 */
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { logRedaction } from '../../src/server/app.js';
import { archiveKeyOf } from '../../src/server/cleanup/archive-key.js';
import { TokenRepository } from '../../src/server/db/repositories/tokens.js';
import { maxNestingDepth } from '../../src/storable.js';
import { countRows, createTestServer, dialects, type TestServer } from './helpers.js';

interface ErrorBody {
  error: { code: string; message: string };
}

const newKey = () => archiveKeyOf(Buffer.from(randomBytes(32).toString('hex')), 'test');
const secretValue = 'hunter2-Ünïcode-✓-value';

describe.each(dialects)('project secrets on %s', (dialect) => {
  let s: TestServer;
  let log = '';
  let shopDeveloper: string;
  let shopRead: string;
  const key = newKey();
  beforeAll(async () => {
    const sink = new Writable({
      write(chunk, _encoding, done) {
        log += String(chunk);
        done();
      },
    });
    s = await createTestServer(dialect, {
      secretsKey: key,
      logger: pino({ level: 'trace', redact: logRedaction }, sink),
    });
    const tokens = new TokenRepository(s.database.db);
    shopDeveloper = (await tokens.create({ name: 'shop-dev', scope: 'developer', project: 'shop' })).token;
    shopRead = (await tokens.create({ name: 'shop-read', scope: 'read', project: 'shop' })).token;
  });
  afterAll(async () => s.close());

  const call = (
    method: 'GET' | 'PUT' | 'DELETE',
    url: string,
    token: string,
    payload?: unknown,
    headers: Record<string, string> = {},
  ) =>
    s.app.inject({
      method,
      url,
      headers: { ...s.auth(token), ...headers },
      ...(payload !== undefined ? { payload: payload as string } : {}),
    });
  const put = (project: string, name: string, value: unknown, token = s.tokens.admin, env?: string) =>
    call('PUT', `/api/v1/projects/${project}/secrets/${name}${env ? `?environment=${env}` : ''}`, token, {
      value,
    });
  const values = (project: string, environment: string, token = shopDeveloper) =>
    call('GET', `/api/v1/projects/${project}/environments/${environment}/secret-values`, token);

  it('sets secrets, and an environment reads its own over the project-wide one', async () => {
    expect((await put('shop', 'DB_PASSWORD', 'project-wide')).statusCode).toBe(200);
    const own = await put('shop', 'DB_PASSWORD', secretValue, s.tokens.admin, 'ci');
    expect(own.statusCode, own.body).toBe(200);
    expect(own.json()).toMatchObject({ name: 'DB_PASSWORD', environment: 'ci', updatedBy: 'token:ops' });
    expect(own.body).not.toContain(secretValue);
    expect((await put('shop', 'API_KEY', 'k-1')).statusCode).toBe(200);

    const ci = await values('shop', 'ci');
    expect(ci.statusCode, ci.body).toBe(200);
    expect(ci.json()).toEqual({ values: { DB_PASSWORD: secretValue, API_KEY: 'k-1' } });
    expect((await values('shop', 'dev')).json()).toEqual({
      values: { DB_PASSWORD: 'project-wide', API_KEY: 'k-1' },
    });
    // Replacing a value keeps one row and the time it was created.
    expect((await put('shop', 'API_KEY', 'k-2')).statusCode).toBe(200);
    expect((await values('shop', 'dev')).json<{ values: Record<string, string> }>().values.API_KEY).toBe(
      'k-2',
    );
  });

  it('lists names, environments and times, never values', async () => {
    const res = await call('GET', '/api/v1/projects/shop/secrets', s.tokens.admin);
    expect(res.statusCode).toBe(200);
    const items = res.json<{ items: { name: string; environment: string | null }[] }>().items;
    expect(items.map((i) => [i.environment, i.name])).toEqual([
      [null, 'API_KEY'],
      [null, 'DB_PASSWORD'],
      ['ci', 'DB_PASSWORD'],
    ]);
    expect(res.body).not.toContain(secretValue);
    expect(res.body).not.toContain('project-wide');
  });

  it('keeps values sealed at rest, and a sealed value moved to another row does not open', async () => {
    const rows = await s.database.db.selectFrom('project_secrets').selectAll().execute();
    expect(rows.length).toBe(3);
    for (const row of rows) {
      expect(row.value_sealed).not.toContain('project-wide');
      expect(Buffer.from(row.value_sealed, 'base64').toString('latin1')).not.toContain('hunter2');
      expect(row.key_fingerprint).toBe(key.fingerprint);
    }
    // Someone with the database copies ci's sealed password onto another project's row.
    const ci = rows.find((r) => r.environment === 'ci')!;
    await s.database.db
      .insertInto('project_secrets')
      .values({ ...ci, project: 'web', environment: '' })
      .execute();
    const admin = s.tokens.admin;
    const stolen = await values('web', 'dev', admin);
    expect(stolen.statusCode, stolen.body).toBe(503);
    expect(stolen.json<ErrorBody>().error).toMatchObject({ code: 'TEND_SECRETS_KEY' });
    expect(stolen.body).not.toContain(secretValue);
    await s.database.db.deleteFrom('project_secrets').where('project', '=', 'web').execute();
  });

  it('refuses the values to another project, a read token and an ingest token', async () => {
    for (const [token, project] of [
      [s.tokens.otherProject, 'shop'],
      [shopDeveloper, 'web'],
      [shopRead, 'shop'],
      [s.tokens.read, 'shop'],
      [s.tokens.ingest, 'shop'],
      [s.tokens.agent, 'shop'],
    ] as const) {
      const res = await values(project, 'ci', token);
      expect(res.statusCode, `${project}: ${res.body}`).toBe(403);
      expect(res.json<ErrorBody>().error.code).toBe('TEND_AUTH_FORBIDDEN');
      expect(res.body).not.toContain(secretValue);
    }
    // The other project's admin token neither lists, sets nor deletes shop's secrets.
    const other = s.tokens.otherProject;
    expect((await call('GET', '/api/v1/projects/shop/secrets', other)).statusCode).toBe(403);
    expect((await put('shop', 'DB_PASSWORD', 'evil', other)).statusCode).toBe(403);
    expect((await call('DELETE', '/api/v1/projects/shop/secrets/DB_PASSWORD', other)).statusCode).toBe(403);
    // A developer may read values but not write them.
    expect((await put('shop', 'DB_PASSWORD', 'evil', shopDeveloper)).statusCode).toBe(403);
    expect((await values('shop', 'dev')).json<{ values: Record<string, string> }>().values.DB_PASSWORD).toBe(
      'project-wide',
    );
    // A token bound to the other project reads that project's values.
    expect((await values('other', 'dev', other)).json()).toEqual({ values: {} });
  });

  it('answers hostile input with a 4xx that stores nothing', async () => {
    const before = await countRows(s.database.db, 'project_secrets');
    const deep = JSON.stringify({ value: 'x' }).replace(
      '"x"',
      '['.repeat(maxNestingDepth * 40) + ']'.repeat(maxNestingDepth * 40),
    );
    const cases: [string, () => ReturnType<typeof call>, number][] = [
      ['NUL in the value', () => put('shop', 'NUL_VALUE', 'a\u0000b'), 400],
      ['a lone surrogate in the value', () => put('shop', 'SURROGATE', 'a\ud800b'), 400],
      ['a value over the limit', () => put('shop', 'HUGE', 'x'.repeat(65_537)), 400],
      ['a body over the limit', () => put('shop', 'HUGER', 'x'.repeat(2 * 1024 * 1024)), 413],
      [
        'deeply nested JSON',
        () =>
          call('PUT', '/api/v1/projects/shop/secrets/DEEP', s.tokens.admin, deep, {
            'content-type': 'application/json',
          }),
        400,
      ],
      ['a mapping as value', () => put('shop', 'MAP', { nested: { deeper: 'x' } }), 400],
      ['a list as value', () => put('shop', 'LIST', ['a', 'b']), 400],
      ['a name with a dot', () => put('shop', 'a.b', 'v'), 400],
      ['a name starting with a digit', () => put('shop', '1ABC', 'v'), 400],
      ['a name with NUL', () => put('shop', 'A%00B', 'v'), 400],
      ['a name with a lone surrogate', () => put('shop', 'A%ED%A0%80B', 'v'), 400],
      ['a name too long', () => put('shop', 'A'.repeat(65), 'v'), 400],
      ['a name far too long', () => put('shop', 'A'.repeat(101), 'v'), 414],
      ['a project that is no project name', () => put('Shop%20X', 'NAME', 'v'), 400],
      ['an environment that is no name', () => put('shop', 'NAME', 'v', s.tokens.admin, 'Bad_Env'), 400],
      [
        'an extra field',
        () => call('PUT', '/api/v1/projects/shop/secrets/EXTRA', s.tokens.admin, { value: 'v', x: 1 }),
        400,
      ],
      [
        'a body that is not JSON',
        () =>
          call('PUT', '/api/v1/projects/shop/secrets/JUNK', s.tokens.admin, '{"value":', {
            'content-type': 'application/json',
          }),
        400,
      ],
      ['no body', () => call('PUT', '/api/v1/projects/shop/secrets/EMPTY', s.tokens.admin), 400],
    ];
    for (const [what, send, status] of cases) {
      const res = await send();
      expect(res.statusCode, `${what}: ${res.body.slice(0, 300)}`).toBe(status);
      expect(res.json<ErrorBody>().error.code, what).toMatch(/^TEND_SERVER_/);
    }
    expect(await countRows(s.database.db, 'project_secrets')).toBe(before);
    // The project still takes a clean value afterwards.
    expect((await put('shop', 'AFTER', 'fine')).statusCode).toBe(200);
    expect((await call('DELETE', '/api/v1/projects/shop/secrets/AFTER', s.tokens.admin)).statusCode).toBe(
      200,
    );
  });

  it('deletes a secret once; a second delete is a 404 naming it', async () => {
    expect((await put('shop', 'TEMP', 'v', s.tokens.admin, 'ci')).statusCode).toBe(200);
    const url = '/api/v1/projects/shop/secrets/TEMP?environment=ci';
    const first = await call('DELETE', url, s.tokens.admin);
    expect(first.statusCode, first.body).toBe(200);
    const again = await call('DELETE', url, s.tokens.admin);
    expect(again.statusCode).toBe(404);
    expect(again.json<ErrorBody>().error).toMatchObject({
      code: 'TEND_SECRET_NOT_FOUND',
      message: expect.stringContaining('secret TEMP of project shop, environment ci'),
    });
  });

  it('audits writes without their values, and never logs a value', async () => {
    const audit = await s.database.db.selectFrom('audit_log').selectAll().execute();
    const writes = audit.filter((a) => a.action.startsWith('secret-'));
    expect(writes.length).toBeGreaterThan(3);
    for (const entry of writes) expect(JSON.parse(entry.detail!)).toHaveProperty('project');
    const text = JSON.stringify(audit);
    for (const value of [secretValue, 'project-wide', 'k-1', 'k-2']) {
      expect(text).not.toContain(value);
      expect(log).not.toContain(value);
    }
    expect(log).toContain('secret-values');
  });
});

describe.each(dialects)('secrets on a server without the key, or with another one, on %s', (dialect) => {
  let s: TestServer;
  afterAll(async () => s?.close());

  it('refuses writes with 503 naming the flag, and a value sealed with another key', async () => {
    s = await createTestServer(dialect);
    const res = await s.app.inject({
      method: 'PUT',
      url: '/api/v1/projects/shop/secrets/A',
      headers: s.auth(s.tokens.admin),
      payload: { value: 'v' },
    });
    expect(res.statusCode).toBe(503);
    expect(res.json<ErrorBody>().error).toMatchObject({
      code: 'TEND_SECRETS_KEY',
      message: expect.stringContaining('--secrets-key-file'),
    });
    expect(await countRows(s.database.db, 'project_secrets')).toBe(0);
    // Nothing stored: nothing to read, with or without a key.
    const empty = await s.app.inject({
      method: 'GET',
      url: '/api/v1/projects/shop/environments/dev/secret-values',
      headers: s.auth(s.tokens.developer),
    });
    expect(empty.json()).toEqual({ values: {} });

    // A row sealed by a server with another key.
    const other = newKey();
    const { buildServer } = await import('../../src/server/app.js');
    const first = await buildServer({ db: s.database, secretsKey: other, ownsDatabase: false });
    const set = await first.inject({
      method: 'PUT',
      url: '/api/v1/projects/shop/secrets/A',
      headers: s.auth(s.tokens.admin),
      payload: { value: 'sealed-with-other' },
    });
    expect(set.statusCode, set.body).toBe(200);
    await first.close();
    const second = await buildServer({ db: s.database, secretsKey: newKey(), ownsDatabase: false });
    const read = await second.inject({
      method: 'GET',
      url: '/api/v1/projects/shop/environments/dev/secret-values',
      headers: s.auth(s.tokens.developer),
    });
    await second.close();
    expect(read.statusCode).toBe(503);
    expect(read.json<ErrorBody>().error.message).toContain(`was sealed with key ${other.fingerprint}`);
    expect(read.body).not.toContain('sealed-with-other');
  });
});
