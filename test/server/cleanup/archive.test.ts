/**
 * Undo a cleanup, end to end (docs/cleanup.md#undo): the real CLI deploys into kube-sim with its
 * events streamed to a real server; the executor (the one `tend server --kubeconfig` embeds)
 * archives the namespace before it deletes it; `tend restore` brings it back, recorded and owned;
 * Secrets with and without an archive key; an object the cluster refuses; a restore racing a
 * deploy; a policy with `archive: false`.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, expect, it } from 'vitest';
import { copyExample, removeProjects, runTend, waitFor } from '../../helpers/project.js';
import { stage, type Stage } from '../../adversarial/harness.js';
import { streamEnv } from '../../stream/helpers.js';
import { kubectl } from '../../plugins/kubernetes/helpers.js';
import { archiveKeyOf } from '../../../src/server/cleanup/archive-key.js';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { secretsProject } from './archive-project.js';

const day = 86_400_000;
let s: Stage | undefined;

afterEach(async () => {
  await s?.stop();
  s = undefined;
});
afterAll(() => removeProjects());

/** The CLI as an admin (restore needs one): its events streamed to the server too. */
function admin(st: Stage, root: string, ...args: string[]) {
  return runTend(args, {
    cwd: root,
    env: { KUBECONFIG: st.sim.kubeconfig, ...streamEnv(st.url, st.server.tokens.admin) },
    timeoutMs: 120_000,
  });
}

async function environmentId(st: Stage, project: string, name: string): Promise<string> {
  return waitFor(async () => {
    const row = await st.server.database.db
      .selectFrom('environments')
      .select(['id'])
      .where('project', '=', project)
      .where('name', '=', name)
      .executeTakeFirst();
    return row?.id;
  }, `environment ${project}/${name} recorded`);
}

async function environmentState(st: Stage, id: string): Promise<string | undefined> {
  const env = await st.server.database.db
    .selectFrom('environments')
    .select(['state'])
    .where('id', '=', id)
    .executeTakeFirst();
  return env?.state;
}

/** Enforce, let the policy's wait pass, and run rounds until the namespace is gone. */
async function cleanUp(st: Stage, project: string) {
  await st.enforce(project);
  st.advance(3 * day);
  const { after } = await st.cleanupRound();
  return after;
}

function project(st: Stage, name: string, namespace: string, extra = ''): string {
  const root = st.project({ name, namespace });
  writeFileSync(path.join(root, 'tend.yml'), secretsProject(name, namespace, extra));
  return root;
}

it('examples/shop, cleaned automatically, comes back with tend restore, recorded and owned, and its test passes again', async () => {
  s = await stage('sqlite');
  const st = s;
  const root = copyExample('shop');
  const vars = ['--var', `registry=${st.sim.sim.registryHost}`, '--env', 'preview', '--var', 'pr=7'];
  const first = await admin(st, root, ...vars, 'test');
  expect(first.code, first.stderr).toBe(0);
  const id = await environmentId(st, 'shop', 'preview');

  const pass = await cleanUp(st, 'shop');
  expect(pass.jobs.map((j) => [j.namespaceName, j.outcome])).toEqual([['shop-pr-7', 'done']]);
  expect(st.namespaceExists('shop-pr-7')).toBe(false);
  expect(await environmentState(st, id)).toBe('cleaned');

  const shown = await admin(st, root, 'envs', id);
  expect(shown.code, shown.stderr).toBe(0);
  expect(shown.stdout).toMatch(/restorable until\s+\S+T\S+Z \(archive of namespace shop-pr-7: 2 object\(s\)/);

  const restore = await admin(st, root, 'restore', id);
  expect(restore.code, restore.stderr).toBe(0);
  expect(restore.stdout).toContain('restored environment shop/preview into namespace shop-pr-7');
  expect(restore.stdout).toMatch(/restored {2}Service\/api\n {2}restored {2}Deployment\/api/);
  expect(st.namespaceExists('shop-pr-7')).toBe(true);
  // Owned like any namespace a command creates: a `created` event of the restore session.
  await waitFor(async () => (await environmentState(st, id)) === 'active', 'the environment active again');
  const resource = await st.server.database.db
    .selectFrom('resources')
    .select(['ownership', 'state', 'namespace_uid'])
    .where('environment_id', '=', id)
    .where('namespace_name', '=', 'shop-pr-7')
    .orderBy('generation', 'desc')
    .executeTakeFirstOrThrow();
  const ns = st.sim.sim.store.get('namespaces', '', 'shop-pr-7') as { metadata: { uid: string } };
  expect(resource).toMatchObject({ ownership: 'owned', state: 'ready', namespace_uid: ns.metadata.uid });

  const again = await admin(st, root, ...vars, 'test');
  expect(again.code, again.stderr).toBe(0);

  // Restoring into the namespace that exists again is refused; --into names a new one.
  const refused = await admin(st, root, 'restore', id);
  expect(refused.code).toBe(1);
  expect(refused.stderr).toMatch(/namespace shop-pr-7 exists again .*--into <new-namespace>/);
}, 240_000);

it('Secrets are sealed with the archive key and come back; paused workloads come back paused; a refused object is reported', async () => {
  const key = archiveKeyOf(Buffer.from(randomBytes(32).toString('hex')), 'test');
  s = await stage('sqlite', { archive: { key } });
  const st = s;
  const root = project(st, 'vault', 'vault-dev');
  const deploy = await st.tend(root, 'deploy');
  expect(deploy.code, deploy.stderr).toBe(0);
  const id = await environmentId(st, 'vault', 'dev');
  // Paused before the deletion: the archive keeps the pause's record.
  await kubectl(
    st.sim.kubeconfig,
    '-n',
    'vault-dev',
    'patch',
    'deployment',
    'web',
    '--type=merge',
    '-p',
    JSON.stringify({ metadata: { annotations: { 'tend.dev/paused-replicas': '2' } }, spec: { replicas: 0 } }),
  );
  await cleanUp(st, 'vault');
  expect(st.namespaceExists('vault-dev')).toBe(false);
  const stored = await st.server.database.db
    .selectFrom('environment_archives')
    .selectAll()
    .executeTakeFirstOrThrow();
  // The key never reaches the database, nor does the Secret in the clear.
  expect(JSON.stringify(stored)).not.toContain(key.key.toString('hex'));
  expect(Buffer.from(stored.body, 'base64').toString('latin1')).not.toContain('hunter2');
  expect(stored.key_fingerprint).toBe(key.fingerprint);

  // The cluster refuses the Service now (a rule of kube-sim's): the rest is restored.
  st.sim.sim.faults.add({
    type: 'error',
    verb: 'patch',
    resource: 'services',
    status: 422,
    message: 'Service web is invalid',
  });
  const restore = await admin(st, root, 'restore', id);
  expect(restore.code, restore.stderr).toBe(0);
  expect(restore.stdout).toMatch(
    /not restored:\n {2}Service\/web: the cluster refused it: .*Service web is invalid/,
  );
  const secret = st.sim.sim.store.get('secrets', 'vault-dev', 'db-password') as unknown as {
    data: Record<string, string>;
  };
  expect(Buffer.from(secret.data.password!, 'base64').toString()).toBe('hunter2');
  const restored = st.sim.sim.store.get('deployments.apps', 'vault-dev', 'web') as unknown as {
    spec: { replicas: number };
    metadata: { annotations: Record<string, string> };
  };
  expect(restored.spec.replicas).toBe(0);
  expect(restored.metadata.annotations['tend.dev/paused-replicas']).toBe('2');
  const order = restore.stdout.split('\n').filter((l) => l.startsWith('  restored'));
  expect(order.indexOf('  restored  ServiceAccount/runner')).toBeLessThan(
    order.indexOf('  restored  Deployment/web'),
  );
  expect(order.indexOf('  restored  Secret/db-password')).toBeLessThan(
    order.indexOf('  restored  Deployment/web'),
  );
}, 240_000);

it('without an archive key Secrets are kept by name only, and the restore names them', async () => {
  s = await stage('sqlite');
  const st = s;
  const root = project(st, 'plain', 'plain-dev');
  expect((await st.tend(root, 'deploy')).code).toBe(0);
  const id = await environmentId(st, 'plain', 'dev');
  await cleanUp(st, 'plain');
  const stored = await st.server.database.db
    .selectFrom('environment_archives')
    .selectAll()
    .executeTakeFirstOrThrow();
  expect(stored.secrets_sealed).toBeNull();
  expect(JSON.parse(stored.secrets_not_kept)).toEqual(['db-password']);

  // Refused before any session, record or namespace exists: a protected name (the CLI's own
  // check), another project's namespace (the server's, asked before the session starts).
  const other = project(st, 'other', 'other-dev');
  expect((await st.tend(other, 'deploy')).code).toBe(0);
  const recordsBefore = await st.server.database.db.selectFrom('environments').select('namespace').execute();
  for (const into of ['kube-fresh', 'default', 'tend-system']) {
    const refused = await admin(st, root, 'restore', id, '--into', into);
    expect(refused.code, into).toBe(2);
    expect(refused.stderr).toMatch(/the namespace is protected/);
    expect(st.namespaceExists(into) && into !== 'default').toBe(false);
  }
  const foreign = await admin(st, root, 'restore', id, '--into', 'other-dev');
  expect(foreign.code, foreign.stderr).toBe(1);
  expect(foreign.stderr).toMatch(/namespace other-dev is recorded for environment other\/dev/);
  expect(st.sim.sim.store.get('configmaps', 'other-dev', 'db-password')).toBeUndefined();
  const recordsAfter = await st.server.database.db.selectFrom('environments').select('namespace').execute();
  expect(recordsAfter).toEqual(recordsBefore);
  // The API refuses the same, before a job exists.
  for (const [into, status] of [
    ['kube-fresh', 400],
    ['other-dev', 409],
  ] as const) {
    const asked = await st.server.app.inject({
      method: 'POST',
      url: `/api/v1/environments/${id}/restore`,
      headers: st.server.auth(st.server.tokens.admin),
      payload: { into },
    });
    expect(asked.statusCode, into).toBe(status);
  }
  expect(
    await st.server.database.db
      .selectFrom('cleanup_jobs')
      .select('id')
      .where('action', '=', 'restore')
      .execute(),
  ).toEqual([]);

  const restore = await admin(st, root, 'restore', id, '--into', 'plain-back');
  expect(restore.code, restore.stderr).toBe(0);
  expect(restore.stdout).toContain('into namespace plain-back');
  expect(restore.stdout).toMatch(
    /Secret\/db-password: its content was not archived \(the server had no --archive-key-file\)/,
  );
  expect(st.sim.sim.store.get('secrets', 'plain-back', 'db-password')).toBeUndefined();
  expect(st.sim.sim.store.get('configmaps', 'plain-back', 'settings')).toBeDefined();
}, 240_000);

it('a restore racing a deploy that re-created the namespace is refused, nothing written into it', async () => {
  s = await stage('sqlite');
  const st = s;
  const root = project(st, 'race', 'race-dev');
  expect((await st.tend(root, 'deploy')).code).toBe(0);
  const id = await environmentId(st, 'race', 'dev');
  await cleanUp(st, 'race');
  // A new deploy came first: the namespace is someone's work again.
  expect((await st.tend(root, 'deploy')).code).toBe(0);
  await kubectl(st.sim.kubeconfig, '-n', 'race-dev', 'delete', 'configmap', 'settings');
  const restore = await admin(st, root, 'restore', id);
  expect(restore.code).toBe(1);
  expect(restore.stderr).toMatch(/namespace race-dev exists again/);
  expect(st.sim.sim.store.get('configmaps', 'race-dev', 'settings')).toBeUndefined();
}, 240_000);

it('archive: false deletes without an archive; tend restore then says there is none', async () => {
  s = await stage('sqlite');
  const st = s;
  const root = project(st, 'scratch', 'scratch-dev', ', archive: false');
  expect((await st.tend(root, 'deploy')).code).toBe(0);
  const id = await environmentId(st, 'scratch', 'dev');
  const pass = await cleanUp(st, 'scratch');
  expect(pass.jobs.map((j) => j.outcome)).toEqual(['done']);
  const restore = await admin(st, root, 'restore', id);
  expect(restore.code).toBe(2);
  expect(restore.stderr).toMatch(/has no archive that can be restored/);
}, 240_000);
