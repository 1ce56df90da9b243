/**
 * The server's CLI through the real `tend` binary: one data directory per user whatever the
 * working directory (XDG, `TEND_DATA_DIR`, `--data-dir`), token commands that refuse instead of
 * creating an empty database, and `tend envs <id>` / `tend protect|unprotect` against a real
 * `tend server` that recorded a real `tend deploy` into kube-sim.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/server/db/database.js';
import { makeProject, removeProjects, runTend, tendBin, waitFor } from '../helpers/project.js';
import { startSim, type SimHandle } from '../plugins/kubernetes/helpers.js';
import { loginOverHttp } from '../server/helpers.js';

let handle: SimHandle;
let home: string;
let env: Record<string, string>;
let server: ChildProcess | undefined;

beforeAll(async () => {
  handle = await startSim();
  home = mkdtempSync(path.join(os.tmpdir(), 'tend-home-'));
  env = {
    HOME: home,
    XDG_DATA_HOME: path.join(home, 'data'),
    TEND_DATA_DIR: '',
    TEND_DATABASE_URL: '',
    TEND_CONFIG_DIR: path.join(home, 'config'),
    TEND_SERVER_URL: '',
    TEND_TOKEN: '',
    KUBECONFIG: handle.kubeconfig,
  };
});
afterAll(async () => {
  if (server && server.exitCode === null) {
    server.kill('SIGTERM');
    await new Promise((r) => server!.once('exit', r));
  }
  await handle.stop();
  removeProjects();
  rmSync(home, { recursive: true, force: true });
});

const emptyDir = () => makeProject({});

/** `tend server` from a directory of its own, with the environment's data directory. */
async function startServer(): Promise<{ url: string; log: () => string }> {
  server = spawn(process.execPath, [tendBin, 'server', '--port', '0', '--cleanup-interval', '1s'], {
    cwd: emptyDir(),
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let log = '';
  server.stderr!.on('data', (d) => (log += d));
  const url = await waitFor(() => /"url":"(http:\/\/[^"]+)"/.exec(log)?.[1], 'the server to listen', 30_000);
  return { url, log: () => log };
}
const defaultDir = () => path.join(home, 'data', 'tend');

describe('tend server token without a database', () => {
  it('refuses with exit 2, names the directory it looked in, and creates nothing', async () => {
    const cwd = emptyDir();
    const listed = await runTend(['server', 'token', 'list'], { cwd, env });
    expect(listed.code, listed.stderr).toBe(2);
    expect(listed.stderr).toContain(`no tend server database in ${defaultDir()}`);
    expect(listed.stderr).toMatch(/--data-dir/);

    const created = await runTend(['server', 'token', 'create', '--name', 'ci', '--json'], { cwd, env });
    expect(created.code).toBe(2);
    const error = JSON.parse(created.stdout).error;
    expect(error.code).toBe('TEND_DATABASE_NOT_FOUND');
    expect(error.detail.dataDir).toBe(defaultDir());

    // TEND_DATA_DIR and --data-dir (relative to the working directory) are where it looks then.
    const viaEnv = await runTend(['server', 'token', 'revoke', 'ci'], {
      cwd,
      env: { ...env, TEND_DATA_DIR: path.join(home, 'elsewhere') },
    });
    expect(viaEnv.code).toBe(2);
    expect(viaEnv.stderr).toContain(`no tend server database in ${path.join(home, 'elsewhere')}`);
    const viaFlag = await runTend(['server', 'token', 'list', '--data-dir', 'srv'], { cwd, env });
    expect(viaFlag.code).toBe(2);
    expect(viaFlag.stderr).toContain(`no tend server database in ${path.join(cwd, 'srv')}`);

    expect(existsSync(path.join(home, 'data'))).toBe(false);
    expect(existsSync(path.join(home, 'elsewhere'))).toBe(false);
    expect(readdirSync(cwd)).toEqual([]);
  });
});

describe('one data directory, and environments from the CLI', () => {
  it('migrate, token create and the server agree from any directory; envs <id>, protect, unprotect', async () => {
    const migrated = await runTend(['server', 'migrate', '--json'], { cwd: emptyDir(), env });
    expect(migrated.code, migrated.stderr).toBe(0);
    expect(JSON.parse(migrated.stdout).database).toBe(path.join(defaultDir(), 'tend.db'));

    const token = async (name: string, scope: string) => {
      const r = await runTend(['server', 'token', 'create', '--name', name, '--scope', scope, '--json'], {
        cwd: emptyDir(),
        env,
      });
      expect(r.code, r.stderr).toBe(0);
      return JSON.parse(r.stdout).token as string;
    };
    const ingest = await token('ci', 'ingest');
    const read = await token('dev', 'read');
    const admin = await token('ops', 'admin');
    const listed = await runTend(['server', 'token', 'list', '--json'], { cwd: emptyDir(), env });
    expect(
      JSON.parse(listed.stdout)
        .map((t: { name: string }) => t.name)
        .sort(),
    ).toEqual(['ci', 'dev', 'ops']);

    const { url, log } = await startServer();
    expect(log()).toContain(path.join(defaultDir(), 'tend.db'));

    const root = makeProject({
      'tend.yml': `kind: Project
name: shop
defaultEnvironment: dev
environments:
  - name: dev
    defaultNamespace: shop-cli
    cleanup: { afterInactivity: 3d, action: delete }
providers:
  - name: kubernetes
    context: kube-sim
    deploymentRegistry: ${handle.sim.registryHost}/shop
`,
    });
    const deployed = await runTend(['deploy'], {
      cwd: root,
      env: { ...env, TEND_SERVER_URL: url, TEND_TOKEN: ingest },
    });
    expect(deployed.code, deployed.stderr).toBe(0);

    const asReader = { ...env, TEND_SERVER_URL: url, TEND_TOKEN: read };
    const asAdmin = { ...env, TEND_SERVER_URL: url, TEND_TOKEN: admin };
    const envs = await runTend(['envs', '--json'], { cwd: emptyDir(), env: asReader });
    expect(envs.code, envs.stderr).toBe(0);
    const [recorded] = JSON.parse(envs.stdout) as { id: string; namespace: string }[];
    expect(recorded?.namespace).toBe('shop-cli');
    const id = recorded!.id;
    const searched = await runTend(['envs', '--search', 'CLI', '--json'], { cwd: emptyDir(), env: asReader });
    expect(JSON.parse(searched.stdout).map((e: { id: string }) => e.id)).toEqual([id]);
    const none = await runTend(['envs', '--search', 'nothing-like-it'], { cwd: emptyDir(), env: asReader });
    expect(none.stdout).toContain('match');

    // One environment: resources, sessions, and the plan once a planning pass has run.
    const detail = await waitFor(
      async () => {
        const r = await runTend(['envs', id, '--json'], { cwd: emptyDir(), env: asReader });
        expect(r.code, r.stderr).toBe(0);
        const data = JSON.parse(r.stdout);
        return data.plan.length > 0 ? data : undefined;
      },
      'a cleanup decision for the environment',
      30_000,
    );
    expect(detail.environment).toMatchObject({ id, project: 'shop', name: 'dev', protected: false });
    expect(detail.resources).toEqual([
      expect.objectContaining({ namespace: 'shop-cli', state: 'ready', ownership: 'owned' }),
    ]);
    expect(detail.sessions[0]).toMatchObject({ command: 'deploy', status: 'completed' });
    // No executor serves the cluster (the server was started without a kubeconfig): nothing
    // would clean it up, so the plan says so rather than "deleted in 3d".
    expect(detail.plan[0]).toMatchObject({
      namespace: 'shop-cli',
      kind: 'blocked',
      reason: 'no-executor',
      environmentId: id,
    });
    expect(detail.plan[0].sentence).toMatch(/^not cleaned while no live executor for its cluster; due at /);

    const human = await runTend(['environments', id], { cwd: emptyDir(), env: asReader });
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toContain('shop / dev  (namespace shop-cli)');
    expect(human.stdout).toMatch(/CLUSTER[\s\S]*kube-sim/);
    expect(human.stdout).not.toContain(detail.resources[0].target.clusterId);
    expect(human.stdout).toMatch(/blocked/);

    // Protect the current environment from its project directory; unprotect it by id elsewhere.
    const forbidden = await runTend(['protect'], { cwd: root, env: asReader });
    expect(forbidden.code).toBe(2);
    expect(forbidden.stderr).toMatch(/needs "developer"/);
    const protectedNow = await runTend(['protect', '--json'], { cwd: root, env: asAdmin });
    expect(protectedNow.code, protectedNow.stderr).toBe(0);
    expect(JSON.parse(protectedNow.stdout).environment).toMatchObject({ id, protected: true });
    const seen = JSON.parse(
      (await runTend(['envs', id, '--json'], { cwd: emptyDir(), env: asReader })).stdout,
    );
    expect(seen.environment).toMatchObject({ protected: true, protectedBy: expect.stringContaining('ops') });
    const unprotected = await runTend(['unprotect', id], { cwd: emptyDir(), env: asAdmin });
    expect(unprotected.code, unprotected.stderr).toBe(0);
    expect(unprotected.stdout).toContain('Unprotected shop/dev (shop-cli)');
    const after = JSON.parse(
      (await runTend(['envs', id, '--json'], { cwd: emptyDir(), env: asReader })).stdout,
    );
    expect(after.environment.protected).toBe(false);

    const unknown = await runTend(['envs', 'no-such-id'], { cwd: emptyDir(), env: asReader });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('no environment with id "no-such-id"');

    // Restarted, the server records today's count per state before it answers: the dashboard's
    // chart shows the environment.
    const stopped = server!;
    stopped.kill('SIGTERM');
    expect(await new Promise((r) => stopped.once('exit', r))).toBe(0);
    const restarted = await startServer();
    const cookie = await loginOverHttp(restarted.url, read);
    const dashboard = await (await fetch(`${restarted.url}/`, { headers: { cookie } })).text();
    const today = new Date().toISOString().slice(0, 10);
    expect(dashboard).toContain(`<title>${today} active: 1</title>`);
    const database = await openDatabase({ dataDir: defaultDir(), mustExist: true });
    try {
      const recorded = await database.db.selectFrom('environment_state_days').selectAll().execute();
      expect(recorded).toEqual([
        expect.objectContaining({ day: today, project: 'shop', state: 'active', count: 1 }),
      ]);
    } finally {
      await database.close();
    }
  }, 120_000);
});
