/**
 * `${secrets.NAME}` through the real `tend` binary against a real `tend server` on 127.0.0.1:
 * an admin sets secrets with `tend secrets set`, a developer token's `tend run` resolves them
 * (the environment's own over the project-wide one), a missing one is an error naming it and the
 * server, project and environment, another project's token is refused, and the value is in
 * neither the output, the `--json` output, the local event log nor the server's log. The local
 * secrets file works offline (mode 0600 checked), and a configuration without `${secrets.*}`
 * asks no server.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeProject, removeProjects, runTend, tendBin, waitFor } from '../helpers/project.js';

const password = 'pw-Zq8-hunter2-ci';
const shared = 'shared-Xk3-value';

let home: string;
let env: Record<string, string>;
let server: ChildProcess | undefined;
let serverLog = '';
let url: string;
const tokens: Record<string, string> = {};

const project = (name: string, runSpec: string) => ({
  'tend.yml': `kind: Project
name: ${name}
defaultEnvironment: dev
environments:
  - name: dev
    defaultNamespace: ${name}-dev
  - name: ci
    defaultNamespace: ${name}-ci
providers:
  - name: exec
---
kind: Run
type: exec
name: show
spec:
${runSpec}
`,
});
const readsSecrets = `  command: [sh, -c, 'printf %s "$PW/$SHARED" > out.txt; echo "the password is $PW"']
  env:
    PW: \${secrets.DB_PASSWORD}
    SHARED: \${secrets.SHARED}
`;

beforeAll(async () => {
  home = mkdtempSync(path.join(os.tmpdir(), 'tend-secrets-home-'));
  const dataDir = path.join(home, 'data');
  const keyFile = path.join(home, 'secrets.key');
  writeFileSync(keyFile, 'ab'.repeat(32) + '\n', { mode: 0o600 });
  env = {
    HOME: home,
    TEND_DATA_DIR: dataDir,
    TEND_DATABASE_URL: '',
    TEND_CONFIG_DIR: path.join(home, 'config'),
    TEND_SERVER_URL: '',
    TEND_TOKEN: '',
    TEND_SECRETS_FILE: '',
  };
  const migrated = await runTend(['server', 'migrate'], { env });
  expect(migrated.code, migrated.stderr).toBe(0);
  for (const [name, scope, bound] of [
    ['ops', 'admin', undefined],
    ['dev', 'developer', 'shop'],
    ['viewer', 'read', 'shop'],
    ['other', 'developer', 'web'],
  ] as const) {
    const args = ['server', 'token', 'create', '--name', name, '--scope', scope, '--json'];
    const created = await runTend(bound ? [...args, '--project', bound] : args, { env });
    expect(created.code, created.stderr).toBe(0);
    tokens[name] = JSON.parse(created.stdout).token as string;
  }
  server = spawn(
    process.execPath,
    [tendBin, 'server', '--port', '0', '--host', '127.0.0.1', '--secrets-key-file', keyFile, '--debug'],
    { cwd: home, env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  server.stderr!.on('data', (d) => (serverLog += d));
  url = await waitFor(() => /"url":"(http:\/\/[^"]+)"/.exec(serverLog)?.[1], 'the server to listen', 30_000);
}, 120_000);

afterAll(async () => {
  if (server && server.exitCode === null) {
    server.kill('SIGTERM');
    await new Promise((r) => server!.once('exit', r));
  }
  removeProjects();
  rmSync(home, { recursive: true, force: true });
});

const as = (token: string) => ({ ...env, TEND_SERVER_URL: url, TEND_TOKEN: token });

describe('${secrets.*} from tend server', () => {
  it('sets secrets as admin, resolves them in a developer run, and never shows a value', async () => {
    const root = makeProject(project('shop', readsSecrets));
    const valueFile = path.join(home, 'value');
    const set = async (name: string, value: string, extra: string[] = []) => {
      writeFileSync(valueFile, value + '\n');
      const r = await runTend(['secrets', 'set', name, '--value-file', valueFile, ...extra], {
        cwd: root,
        env: as(tokens.ops!),
      });
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout + r.stderr).not.toContain(value);
    };
    await set('DB_PASSWORD', 'project-wide-pw');
    // A secret is the environment's, whatever namespace Garden's <namespace>.<environment> names.
    await set('DB_PASSWORD', password, ['--env', 'pr-7.ci']);
    await set('SHARED', shared);

    // A developer may not write; the admin's listing shows names, never values.
    writeFileSync(valueFile, 'evil');
    const refused = await runTend(['secrets', 'set', 'SHARED', '--value-file', valueFile], {
      cwd: root,
      env: as(tokens.dev!),
    });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/needs "admin"/);
    const listed = await runTend(['secrets', 'list', '--json'], { cwd: root, env: as(tokens.ops!) });
    expect(listed.code, listed.stderr).toBe(0);
    expect(
      JSON.parse(listed.stdout).map((s: { name: string; environment: string | null }) => [
        s.environment,
        s.name,
      ]),
    ).toEqual([
      [null, 'DB_PASSWORD'],
      [null, 'SHARED'],
      ['ci', 'DB_PASSWORD'],
    ]);
    expect(listed.stdout).not.toContain(password);

    const run = await runTend(['run', 'show', '--env', 'pr-8.ci', '--show-output'], {
      cwd: root,
      env: as(tokens.dev!),
    });
    expect(run.code, run.stderr).toBe(0);
    expect(readFileSync(path.join(root, 'out.txt'), 'utf8')).toBe(`${password}/${shared}`);
    expect(run.stdout + run.stderr).not.toContain(password);
    const json = await runTend(['run', 'show', '--env', 'ci', '--json', '--show-output'], {
      cwd: root,
      env: as(tokens.dev!),
    });
    expect(json.code, json.stderr).toBe(0);
    expect(json.stdout + json.stderr).not.toContain(password);
    const validated = await runTend(['validate', '--env', 'ci', '--json'], {
      cwd: root,
      env: as(tokens.dev!),
    });
    expect(validated.code, validated.stderr).toBe(0);
    expect(validated.stdout).not.toContain(password);

    // dev reads the project-wide value.
    const dev = await runTend(['run', 'show'], { cwd: root, env: as(tokens.dev!) });
    expect(dev.code, dev.stderr).toBe(0);
    expect(readFileSync(path.join(root, 'out.txt'), 'utf8')).toBe(`project-wide-pw/${shared}`);

    // Nothing tend wrote keeps the value: the event log, the outbox, the cache.
    const written = (dir: string): string[] =>
      readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
        e.isDirectory() ? written(path.join(dir, e.name)) : [path.join(dir, e.name)],
      );
    const files = written(path.join(root, '.tend'));
    expect(files.some((f) => f.includes(`${path.sep}events${path.sep}`))).toBe(true);
    for (const file of files) {
      const text = readFileSync(file, 'latin1');
      expect(text, file).not.toContain(password);
      expect(text, file).not.toContain('project-wide-pw');
    }
    expect(serverLog).not.toContain(password);
    expect(serverLog).not.toContain(shared);
  });

  it('names a missing secret and where it was looked for; refuses other projects and read tokens', async () => {
    const root = makeProject(project('shop', readsSecrets.replace('secrets.SHARED', 'secrets.NOT_THERE')));
    const missing = await runTend(['validate', '--env', 'ci'], { cwd: root, env: as(tokens.dev!) });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain(`secret "NOT_THERE" is not set on the tend server ${url}`);
    expect(missing.stderr).toContain('project shop, environment ci');
    expect(missing.stderr).toMatch(/tend\.yml:\d+:\d+/);

    for (const token of [tokens.other!, tokens.viewer!]) {
      const refused = await runTend(['run', 'show', '--env', 'ci'], { cwd: root, env: as(token) });
      expect(refused.code).toBe(2);
      expect(JSON.stringify(refused)).not.toContain(password);
      expect(refused.stderr).toMatch(/TEND_AUTH_FORBIDDEN|bound to project web|needs "developer"/);
    }
  });
});

describe('${secrets.*} offline, and no server call without them', () => {
  it('reads the local secrets file (0600 only), and a configuration without secrets asks no server', async () => {
    const root = makeProject(project('shop', readsSecrets));
    const file = path.join(root, '.tend', 'secrets.yml');
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(
      file,
      'secrets:\n  DB_PASSWORD: local-pw\n  SHARED: "local-shared"\nenvironments:\n  ci:\n    DB_PASSWORD: local-ci-pw\n',
      { mode: 0o644 },
    );
    chmodSync(file, 0o644);
    // A server that is not there: the file is read, the server never asked.
    const offline = { ...env, TEND_SERVER_URL: 'http://127.0.0.1:9', TEND_TOKEN: 'tend_x' };
    const open = await runTend(['run', 'show', '--env', 'ci'], { cwd: root, env: offline });
    expect(open.code).toBe(2);
    expect(open.stderr).toContain(`the secrets file ${file} can be read or written by others (mode 644)`);
    expect(open.stderr).toContain('chmod 600');

    chmodSync(file, 0o600);
    const run = await runTend(['run', 'show', '--env', 'ci'], { cwd: root, env: offline });
    expect(run.code, run.stderr).toBe(0);
    expect(readFileSync(path.join(root, 'out.txt'), 'utf8')).toBe('local-ci-pw/local-shared');

    rmSync(file);
    const none = await runTend(['validate'], { cwd: root, env: { ...env } });
    expect(none.code).toBe(2);
    expect(none.stderr).toContain(
      'secret "DB_PASSWORD" is not set for project shop: no tend server is configured',
    );

    // Without ${secrets.*}, an unreachable server with a bad token is never asked.
    const plain = makeProject(project('plain', `  command: [sh, -c, 'echo plain']\n`));
    const validated = await runTend(['validate'], { cwd: plain, env: offline });
    expect(validated.code, validated.stderr).toBe(0);
  });
});
