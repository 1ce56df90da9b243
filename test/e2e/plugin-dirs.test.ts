/**
 * A third-party plugin joins automatic cleanup without a line of tend naming it: the
 * examples/plugin-dirs project (environments are directories under a root) deployed with the real
 * CLI streaming to a real server, the policy enforced with `tend cleanup enforce`, and
 * `tend agent --plugin …/dirs.js --set dirs.root=<root>` listing the root, deleting the idle
 * environment the server planned, and refusing the one used since the plan. Then the plugin's
 * own cleanup handlers alone: what they refuse, and an inventory that cannot read a record.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { copyExample, removeProjects, waitFor } from '../helpers/project.js';
import { createTestServer, type TestServer } from '../server/helpers.js';
import { callContext, testClock } from '../cleanup/helpers.js';
import { loadPluginModule } from '../../src/plugin/load.js';
import { builtinPlugins } from '../../src/plugins/builtin.js';
import type { CleanupHandlers, QueuedCleanupJob } from '../../src/plugin/types.js';
import { agentTokenFor, enforce, pluginAgent, projectCli, recordedEnvironmentId } from './plugin-helpers.js';

const hour = 3_600_000;
let server: TestServer;
let url: string;
let clock: ReturnType<typeof testClock>;
let root: string;

beforeEach(async () => {
  clock = testClock();
  server = await createTestServer('sqlite', {
    now: clock.now,
    cleanup: { maxPerPass: 1000, intervalMs: 60_000 },
  });
  url = await server.app.listen({ port: 0, host: '127.0.0.1' });
  root = mkdtempSync(path.join(os.tmpdir(), 'tend-dirs-root-'));
});
afterEach(async () => {
  await server.close();
  rmSync(root, { recursive: true, force: true });
});
afterAll(removeProjects);

describe('the plugin-dirs example', () => {
  it('is recorded, listed, planned and cleaned by tend agent --plugin; one used since the plan is left alone', async () => {
    const project = copyExample('plugin-dirs', { dependencies: true });
    const cli = projectCli(project, url, root);
    const deploy = (env: string) =>
      cli(server.tokens.ingest, 'deploy', '--env', env, '--var', `root=${root}`, '--json');
    const agent = pluginAgent(cli, {
      url,
      token: server.tokens.agent,
      plugin: path.join(project, 'plugin', 'dirs.js'),
      settings: [`dirs.root=${root}`],
    });

    const dev = await deploy('dev');
    expect(dev.code, dev.stderr).toBe(0);
    const review = await deploy('review');
    expect(review.code, review.stderr).toBe(0);
    const devDir = path.join(root, JSON.parse(dev.stdout).namespace as string);
    const reviewDir = path.join(root, JSON.parse(review.stdout).namespace as string);
    expect(readFileSync(path.join(devDir, 'readme'), 'utf8')).toBe('notes of dev');

    // Both recorded on the server as owned resources of the plugin's own target.
    const rootId = readFileSync(path.join(root, '.tend-root'), 'utf8').trim();
    const resources = await waitFor(async () => {
      const rows = await server.database.db
        .selectFrom('resources')
        .select(['namespace_name', 'target_key', 'ownership', 'state'])
        .execute();
      return rows.length === 2 && rows;
    }, 'the two environments recorded on the server');
    expect(resources).toEqual(
      [devDir, reviewDir].map((dir) =>
        expect.objectContaining({
          namespace_name: path.basename(dir),
          target_key: `dirs/${rootId}`,
          ownership: 'owned',
          state: 'ready',
        }),
      ),
    );

    // The agent serves the root and lists both.
    const listed = await agent();
    expect(listed.targets).toEqual([expect.objectContaining({ targetKey: `dirs/${rootId}` })]);
    expect(listed.inventories).toEqual([
      expect.objectContaining({ targetKey: `dirs/${rootId}`, complete: true, items: 2 }),
    ]);
    expect(listed.inventories[0]!.response?.recorded).toBe(2);

    // Idle two hours: planned, but dry-run until enforced — a pass deletes nothing.
    clock.advance(2 * hour);
    await server.app.cleanup.pass.run();
    expect((await agent()).jobs).toEqual([]);
    expect(existsSync(devDir) && existsSync(reviewDir)).toBe(true);
    await enforce(cli, server, url, 'notes');
    await agent();
    expect((await server.app.cleanup.pass.run())?.planned).toBe(2);

    // Someone uses the review environment after the plan.
    expect((await deploy('review')).code).toBe(0);

    const acted = await agent();
    expect(acted.jobs.map((j) => j.outcome).sort()).toEqual(['cancelled', 'done']);
    expect(existsSync(devDir)).toBe(false);
    expect(existsSync(reviewDir)).toBe(true);
    expect(readFileSync(path.join(reviewDir, 'readme'), 'utf8')).toBe('notes of review');
    const cancelled = acted.jobs.find((j) => j.outcome === 'cancelled')!;
    expect(cancelled.message).toMatch(/used since|activity/);

    // The registry saw the deletion: the dev environment is cleaned, the review one active.
    const environments = await server.database.db
      .selectFrom('environments')
      .select(['name', 'state'])
      .execute();
    expect(Object.fromEntries(environments.map((e) => [e.name, e.state]))).toEqual({
      dev: 'cleaned',
      review: 'active',
    });
    const audits = await server.database.db.selectFrom('audit_log').select('action').execute();
    expect(audits.filter((a) => a.action === 'cleanup-done')).toHaveLength(1);
  });
});

/**
 * The plugin-dirs example's dev environment deployed into the root, then cleaned by
 * `tend agent --plugin` (its agent token bound to the plugin's target) with an archive taken.
 */
async function deployedAndCleaned() {
  const project = copyExample('plugin-dirs', { dependencies: true });
  const cli = projectCli(project, url, root);
  const dev = await cli(server.tokens.ingest, 'deploy', '--env', 'dev', '--var', `root=${root}`, '--json');
  expect(dev.code, dev.stderr).toBe(0);
  const namespace = JSON.parse(dev.stdout).namespace as string;
  const devDir = path.join(root, namespace);
  const rootId = readFileSync(path.join(root, '.tend-root'), 'utf8').trim();
  const targetKey = `dirs/${rootId}`;
  // The agent's token is bound to the plugin's target, as an operator binds one to a cluster.
  const agent = pluginAgent(cli, {
    url,
    token: await agentTokenFor(server, 'agent-dirs', targetKey),
    plugin: path.join(project, 'plugin', 'dirs.js'),
    settings: [`dirs.root=${root}`],
  });
  const environmentId = await recordedEnvironmentId(server, 'dev');
  await enforce(cli, server, url, 'notes');
  clock.advance(2 * hour);
  await agent();
  expect((await server.app.cleanup.pass.run())?.planned).toBe(1);
  const deleted = await agent();
  expect(deleted.jobs).toEqual([expect.objectContaining({ outcome: 'done' })]);
  expect(existsSync(devDir)).toBe(false);
  return { project, cli, agent, namespace, devDir, targetKey, environmentId };
}

describe('the plugin-dirs example restored', () => {
  it('is archived before its deletion and restored by a restore job through tend agent --plugin with a target-bound token; asked only of a plugin its executors restore', async () => {
    const { agent, namespace, devDir, targetKey, environmentId } = await deployedAndCleaned();
    const askRestore = () =>
      server.app.inject({
        method: 'POST',
        url: `/api/v1/environments/${environmentId}/restore`,
        headers: server.auth(server.tokens.admin),
        payload: {},
      });
    const restoreJobs = () =>
      server.database.db.selectFrom('cleanup_jobs').select('id').where('action', '=', 'restore').execute();

    const archive = await server.database.db
      .selectFrom('environment_archives')
      .select(['namespace_name', 'target_key', 'restored_at'])
      .execute();
    expect(archive).toEqual([{ namespace_name: namespace, target_key: targetKey, restored_at: null }]);

    // Executors of the target that do not restore this plugin (earlier versions, or a plugin
    // without a restore handler): the request is refused before any job exists.
    for (const actions of [null, JSON.stringify(['delete', 'pause', 'resume'])]) {
      await server.database.db.updateTable('cleanup_executor_targets').set({ actions }).execute();
      const refused = await askRestore();
      expect(refused.statusCode, refused.body).toBe(422);
      expect(refused.json<{ error: { code: string; message: string } }>().error).toMatchObject({
        code: 'TEND_ARCHIVE',
        message: expect.stringContaining(
          `no executor serving ${targetKey} restores environments of plugin dirs`,
        ),
      });
      expect(await restoreJobs()).toEqual([]);
    }

    // The agent's heartbeat says it restores dirs environments: the restore job is queued.
    await agent();
    const asked = await askRestore();
    expect(asked.statusCode, asked.body).toBe(202);
    expect(asked.json<{ job: object }>().job).toMatchObject({
      action: 'restore',
      pluginName: 'dirs',
      targetKey,
      namespaceName: namespace,
    });
    // Only an executor that runs restores for this plugin gets it.
    const queue = server.app.cleanup.queue;
    const claimedBy = (pluginActions: Record<string, ('delete' | 'pause' | 'resume' | 'restore')[]>) =>
      queue.claim({
        executorId: 'other',
        targetKeys: [targetKey],
        actions: ['delete', 'pause', 'resume', 'restore'],
        pluginActions,
        leaseSeconds: 60,
      });
    expect((await claimedBy({ dirs: ['delete', 'pause', 'resume'] })).jobs).toEqual([]);

    const restored = await agent();
    expect(restored.jobs).toEqual([
      expect.objectContaining({
        outcome: 'done',
        message: expect.stringContaining(`restored 1 object(s) into directory ${namespace}`),
      }),
    ]);
    expect(readFileSync(path.join(devDir, 'readme'), 'utf8')).toBe('notes of dev');
    const record = JSON.parse(readFileSync(path.join(devDir, '.tend-dir.json'), 'utf8')) as { uid: string };

    // Recorded by the restore session's `created` event: owned, the environment active again.
    const resource = await server.database.db
      .selectFrom('resources')
      .select(['ownership', 'state', 'namespace_uid', 'target_key'])
      .where('environment_id', '=', environmentId)
      .orderBy('generation', 'desc')
      .executeTakeFirstOrThrow();
    expect(resource).toEqual({
      ownership: 'owned',
      state: 'ready',
      namespace_uid: record.uid,
      target_key: targetKey,
    });
    const env = await server.database.db
      .selectFrom('environments')
      .select('state')
      .where('id', '=', environmentId)
      .executeTakeFirstOrThrow();
    expect(env.state).toBe('active');
    const after = await server.database.db.selectFrom('environment_archives').select('restored_at').execute();
    expect(after[0]?.restored_at).not.toBeNull();
  });
  it('is restored by tend restore from its archive, through the provider’s restoreEnvironment', async () => {
    const { cli, namespace, devDir, targetKey, environmentId } = await deployedAndCleaned();
    const restore = await cli(
      server.tokens.admin,
      'restore',
      environmentId,
      '--var',
      `root=${root}`,
      '--server',
      url,
      '--token',
      server.tokens.admin,
    );
    expect(restore.code, restore.stderr).toBe(0);
    expect(restore.stdout).toContain(`into namespace ${namespace}`);
    expect(restore.stdout).toContain('restored  file/readme');
    expect(readFileSync(path.join(devDir, 'readme'), 'utf8')).toBe('notes of dev');
    const record = JSON.parse(readFileSync(path.join(devDir, '.tend-dir.json'), 'utf8')) as { uid: string };
    // The restore session's `created` event, streamed: owned, on the plugin's target.
    const resource = await waitFor(async () => {
      const row = await server.database.db
        .selectFrom('resources')
        .select(['ownership', 'state', 'namespace_uid', 'target_key'])
        .where('environment_id', '=', environmentId)
        .where('namespace_uid', '=', record.uid)
        .executeTakeFirst();
      return row;
    }, 'the restored directory recorded');
    expect(resource).toEqual({
      ownership: 'owned',
      state: 'ready',
      namespace_uid: record.uid,
      target_key: targetKey,
    });
    const archive = await server.database.db
      .selectFrom('environment_archives')
      .select('restored_at')
      .execute();
    expect(archive[0]?.restored_at).not.toBeNull();
  });
});

describe('the plugin-dirs cleanup handlers', () => {
  it('list the root, refuse a job the directory does not match, delete once, and never call a partial list complete', async () => {
    const project = copyExample('plugin-dirs', { dependencies: true });
    const plugin = await loadPluginModule('./plugin/dirs.js', project, builtinPlugins());
    const cleanup = plugin.cleanup as CleanupHandlers<{ root: string }>;
    const { ctx, events } = callContext({ root }, { pluginName: 'dirs', protectNamespaces: ['notes-kept*'] });
    // No root id yet: nothing was ever created there, nothing to serve.
    expect(await cleanup.targets(ctx)).toEqual([]);

    const stamped = '2026-03-01T10:00:00.000Z';
    writeFileSync(path.join(root, '.tend-root'), 'root-1');
    for (const name of ['notes-a', 'notes-kept']) {
      mkdirSync(path.join(root, name));
      const record = { uid: `uid-${name}`, project: 'notes', environment: 'dev', lastActivityAt: stamped };
      writeFileSync(path.join(root, name, '.tend-dir.json'), JSON.stringify(record));
    }
    mkdirSync(path.join(root, 'not-tends')); // no record: not listed
    const [target] = await cleanup.targets(ctx);
    expect(target).toMatchObject({ targetKey: 'dirs/root-1', pluginName: 'dirs' });
    const inventory = await cleanup.inventory(ctx, target!);
    expect(inventory.complete).toBe(true);
    expect(inventory.items.map((i) => i.name).sort()).toEqual(['notes-a', 'notes-kept']);
    expect(inventory.items.find((i) => i.name === 'notes-a')).toMatchObject({
      uid: 'uid-notes-a',
      managedByTend: true,
      project: 'notes',
      environment: 'dev',
      lastActivityAt: stamped,
      detail: { path: path.join(root, 'notes-a') },
    });

    const job: QueuedCleanupJob = {
      id: 'j1',
      action: 'delete',
      project: 'notes',
      environment: 'dev',
      namespaceName: 'notes-a',
      namespaceUid: 'uid-notes-a',
      expectedLastActivityAt: stamped,
      target: { kind: 'plugin', targetKind: 'dirs', id: 'root-1' },
      dryRun: false,
    };
    const refused = async (changes: Partial<QueuedCleanupJob>, why: RegExp) => {
      const result = await cleanup.verifyAndClean(ctx, target!, { ...job, ...changes });
      expect(result.outcome, result.message).toBe('cancelled');
      expect(result.message).toMatch(why);
    };
    await refused({ namespaceUid: 'uid-other' }, /re-created/);
    await refused({ project: 'other' }, /belongs to project "notes"/);
    // In use: stamped after the decision the job was planned on.
    await refused({ expectedLastActivityAt: '2026-03-01T09:00:00.000Z' }, /used at .*, after the decision/);
    await refused({ namespaceName: 'notes-kept', namespaceUid: 'uid-notes-kept' }, /protected/);
    await refused({ namespaceName: '..' }, /names no directory/);
    await refused({ target: { kind: 'plugin', targetKind: 'dirs', id: 'root-2' } }, /not dirs\/root-1/);
    await refused({ dryRun: true }, /dry run/);
    // The server's last word: a session started since the executor's start keeps it.
    const stopped = await cleanup.verifyAndClean(
      { ...ctx, confirm: async () => 'a tend command started in notes/dev since the job started' },
      target!,
      job,
    );
    expect(stopped).toMatchObject({
      outcome: 'cancelled',
      message: expect.stringContaining('a tend command started'),
    });
    expect(existsSync(path.join(root, 'notes-a'))).toBe(true);

    expect(await cleanup.verifyAndClean(ctx, target!, job)).toMatchObject({ outcome: 'done' });
    expect(existsSync(path.join(root, 'notes-a'))).toBe(false);
    expect(events.at(-1)).toMatchObject({ namespaceName: 'notes-a', state: 'missing', cause: 'deleted' });
    expect(await cleanup.verifyAndClean(ctx, target!, job)).toMatchObject({
      outcome: 'done',
      message: expect.stringContaining('already gone'),
    });

    // A record it cannot read: the list says so instead of leaving the environment out.
    writeFileSync(path.join(root, 'notes-kept', '.tend-dir.json'), '{torn');
    const partial = await cleanup.inventory(ctx, target!);
    expect(partial).toMatchObject({ complete: false, error: expect.stringContaining('notes-kept') });
  });
});
