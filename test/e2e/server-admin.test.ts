/**
 * A server's first start and its administration, through the real `tend` binary: on an empty
 * data directory `tend server` says once, on stderr, where it listens, its database, who cleans
 * up and the exact command for the first admin token (never a token); that command works; with
 * the admin token, tokens and webhooks are managed through the API (`--server`); `tend server
 * backup` copies the database while the server writes to it; a second start says nothing more.
 */
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openSqlite } from '../../src/server/db/sqlite.js';
import { freePort, runTend, startTend, type RunningTend } from '../helpers/project.js';

const home = mkdtempSync(path.join(os.tmpdir(), 'tend-first-start-'));
const dataDir = path.join(home, 'data');
const env = {
  HOME: home,
  XDG_DATA_HOME: path.join(home, 'xdg'),
  TEND_DATA_DIR: '',
  TEND_DATABASE_URL: '',
  TEND_CONFIG_DIR: path.join(home, 'config'),
  TEND_SERVER_URL: '',
  TEND_TOKEN: '',
};
const servers: RunningTend[] = [];

afterAll(async () => {
  for (const server of servers) {
    server.signal('SIGTERM');
    await server.exited;
  }
  rmSync(home, { recursive: true, force: true });
});

async function startServer(port: number): Promise<RunningTend> {
  // It lives as long as the test (its limit below), not the minute a one-off command gets.
  const server = startTend(['server', '--data-dir', dataDir, '--port', String(port)], {
    env,
    cwd: home,
    timeoutMs: 180_000,
  });
  servers.push(server);
  await server.waitForOutput(/tend server listening/, 'the server to listen');
  return server;
}

async function stop(server: RunningTend): Promise<string> {
  server.signal('SIGTERM');
  const run = await server.exited;
  expect(run.code, run.stderr).toBe(0);
  return run.stderr;
}

/** Every `tend_…` secret in a text. */
const secretsIn = (text: string) => text.match(/tend_[A-Za-z0-9_-]{20,}/g) ?? [];

describe('tend server on an empty data directory', () => {
  it('says what to do once; the command it names, the API and the backup work', async () => {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const first = await startServer(port);
    const summary = await first.waitForOutput(/tend server token create --name admin[^\n]*\n/, 'the summary');
    expect(summary).toContain('tend server started on a new database.');
    expect(summary).toContain(`URL        ${url}`);
    expect(summary).toContain(`database   ${path.join(dataDir, 'tend.db')} (SQLite)`);
    expect(summary).toMatch(/cleanup {4}none in this process: run `tend agent`/);
    expect(secretsIn(summary)).toEqual([]);

    // The exact command it printed makes the first admin token.
    const command = /^ {2}(tend server token create --name admin [^\n]+)$/m.exec(summary)![1]!;
    expect(command).toBe(`tend server token create --name admin --scope admin --data-dir ${dataDir}`);
    const created = await runTend([...command.split(' ').slice(1), '--json'], { env, cwd: home });
    expect(created.code, created.stderr).toBe(0);
    const admin = (JSON.parse(created.stdout) as { token: string; scope: string }).token;

    // Through the API with that token (from TEND_TOKEN: nothing on the command line).
    const api = { ...env, TEND_TOKEN: admin };
    const ci = await runTend(['server', 'token', 'create', '--server', url, '--name', 'ci', '--json'], {
      env: api,
    });
    expect(ci.code, ci.stderr).toBe(0);
    const ciToken = (JSON.parse(ci.stdout) as { token: string; scope: string }).token;
    const listed = await runTend(['server', 'token', 'list', '--server', url], { env: api });
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toMatch(/\bci\b.*\bingest\b/);
    expect(listed.stdout).toMatch(/\badmin\b.*\badmin\b/);
    expect(secretsIn(listed.stdout)).toEqual([]);
    // The ingest token cannot administer.
    const refused = await runTend(['server', 'token', 'list', '--server', url], {
      env: { ...env, TEND_TOKEN: ciToken },
    });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/scope "ingest"; this route needs "admin"/);
    const hook = await runTend(
      [
        'server',
        'webhook',
        'add',
        '--server',
        url,
        '--url',
        'https://hooks.example.com/t',
        '--event',
        'cleanup.done',
      ],
      { env: api },
    );
    expect(hook.code, hook.stderr).toBe(0);
    const hookId = /Added webhook (wh_\w+)/.exec(hook.stdout)![1]!;
    const hooks = await runTend(['server', 'webhook', 'list', '--server', url, '--json'], { env: api });
    expect(JSON.parse(hooks.stdout)).toEqual([expect.objectContaining({ id: hookId })]);
    const removed = await runTend(['server', 'webhook', 'remove', hookId, '--server', url], { env: api });
    expect(removed.code, removed.stderr).toBe(0);
    const revoked = await runTend(['server', 'token', 'revoke', 'ci', '--server', url], { env: api });
    expect(revoked.code, revoked.stderr).toBe(0);
    const both = await runTend(['server', 'token', 'list', '--server', url, '--data-dir', dataDir], {
      env: api,
    });
    expect(both.code).toBe(2);
    expect(both.stderr).toMatch(/leave out --data-dir/);

    // A consistent copy while the server runs; never over an existing file; SQLite only.
    const copy = path.join(home, 'backup', 'tend-copy.db');
    const backup = await runTend(['server', 'backup', copy, '--data-dir', dataDir], { env, cwd: home });
    expect(backup.code, backup.stderr).toBe(0);
    // Not a word on stderr, also on Node 22, which warns that node:sqlite is experimental.
    expect(backup.stderr).toBe('');
    expect(statSync(copy).mode & 0o777).toBe(0o600);
    const restored = openSqlite(copy, { readOnly: true });
    const names = restored.prepare('select name, revoked_at from api_tokens order by name').all();
    restored.close();
    expect(names).toEqual([
      { name: 'admin', revoked_at: null },
      { name: 'ci', revoked_at: expect.any(String) },
    ]);
    writeFileSync(path.join(home, 'taken.db'), 'mine');
    const over = await runTend(['server', 'backup', path.join(home, 'taken.db'), '--data-dir', dataDir], {
      env,
    });
    expect(over.code).toBe(2);
    expect(over.stderr).toMatch(/exists/);
    expect(readFileSync(path.join(home, 'taken.db'), 'utf8')).toBe('mine');
    const postgres = await runTend(
      ['server', 'backup', path.join(home, 'pg.db'), '--database-url', 'postgres://u:p@127.0.0.1:1/x'],
      { env },
    );
    expect(postgres.code).toBe(2);
    expect(postgres.stderr).toMatch(/pg_dump/);

    const firstLog = await stop(first);
    expect(secretsIn(firstLog)).toEqual([]);

    // The second start on the same database says nothing more.
    const second = await startServer(port);
    const secondLog = await stop(second);
    expect(secondLog).not.toContain('new database');
    expect(secondLog).not.toContain('token create');
    // A dozen tend processes one after the other: a minute is not enough on a loaded machine.
  }, 180_000);
});
