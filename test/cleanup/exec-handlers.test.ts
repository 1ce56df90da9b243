/**
 * The exec plugin's cleanup handlers with real projects and processes: the host index as
 * inventory, and verify-and-remove of a local environment (its persistent process stopped),
 * refused for another uid, project or environment.
 */
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { executeCommand } from '../../src/commands/execute.js';
import { isAlive, listDeployStates } from '../../src/plugins/exec/deploy.js';
import { hostIndexDir } from '../../src/plugins/exec/environment.js';
import { execPlugin } from '../../src/plugins/exec/index.js';
import { localIdentity } from '../../src/state/identity.js';
import { makeProject, removeProjects } from '../helpers/project.js';
import { callContext } from './helpers.js';
import { useTempStateDir } from '../helpers/state-dir.js';

const cleanup = execPlugin.cleanup!;
const hostId = localIdentity().hostId;
useTempStateDir();
afterEach(removeProjects);

function project(name: string): string {
  return makeProject({
    'tend.yml': `kind: Project
name: ${name}
defaultEnvironment: dev
environments:
  - name: dev
    defaultNamespace: ${name}-dev
providers:
  - name: exec
---
kind: Deploy
type: exec
name: web
spec:
  command: [sleep, '300']
  persistent: true
`,
  });
}

function context() {
  return callContext({}, { pluginName: 'exec', hostId });
}

async function deployed(name: string) {
  const root = project(name);
  const result = await executeCommand('deploy', [], { root });
  expect(result.exitCode).toBe(0);
  const dir = path.join(root, '.tend', 'envs', `${name}-dev`);
  const record = JSON.parse(readFileSync(path.join(dir, 'environment.json'), 'utf8')) as { uid: string };
  return { root, dir, uid: record.uid };
}

function job(env: { dir: string; uid: string }, name: string, extra: Record<string, unknown> = {}) {
  return {
    id: 'j1',
    action: 'delete' as const,
    project: name,
    environment: 'dev',
    namespaceName: `${name}-dev`,
    namespaceUid: env.uid,
    expectedLastActivityAt: '2026-01-01T00:00:00.000Z',
    target: { kind: 'local', hostId, path: env.dir },
    dryRun: false,
    ...extra,
  };
}

describe('exec cleanup', () => {
  it('serves the local environments of this host only with --local', async () => {
    const { ctx } = context();
    expect(await cleanup.targets(ctx)).toEqual([
      {
        targetKey: `local/${hostId}`,
        pluginName: 'exec',
        description: `local environments of host ${hostId}`,
      },
    ]);
    const flags = { contexts: [], clustersByDefault: true };
    expect(cleanup.settingsFromFlags!({ ...flags, local: false })).toBeUndefined();
    expect(cleanup.settingsFromFlags!({ ...flags, local: true })).toEqual({});
  });

  it('lists the environments of the host index, and removes one with its processes after the checks', async () => {
    const env = await deployed('loc1');
    const [state] = listDeployStates(env.dir);
    expect(isAlive(state!)).toBe(true);
    const { ctx, events } = context();
    const [target] = await cleanup.targets(ctx);
    const inventory = await cleanup.inventory(ctx, target!);
    expect(inventory.complete).toBe(true);
    // In tend's terms, no faked Kubernetes labels: the record's project and environment, its directory.
    expect(inventory.items).toContainEqual({
      name: 'loc1-dev',
      uid: env.uid,
      version: env.uid,
      state: 'active',
      managedByTend: true,
      project: 'loc1',
      environment: 'dev',
      role: 'app',
      adopted: false,
      detail: { path: env.dir },
    });

    for (const [changes, message] of [
      [{ namespaceUid: 'another-uid' }, /re-created/],
      [{ project: 'other' }, /belongs to project "loc1"/],
      [{ environment: 'prod' }, /belongs to environment "dev"/],
      [{ dryRun: true }, /dry run/],
      [
        { target: { kind: 'local', hostId: 'elsewhere', path: env.dir } },
        /the job's target local\/elsewhere is not local\//,
      ],
    ] as const) {
      const result = await cleanup.verifyAndClean(ctx, target!, job(env, 'loc1', changes));
      expect(result.outcome).toBe('cancelled');
      expect(result.message).toMatch(message);
      expect(existsSync(env.dir)).toBe(true);
    }

    const result = await cleanup.verifyAndClean(ctx, target!, job(env, 'loc1'));
    expect(result).toMatchObject({ outcome: 'done', message: expect.stringMatching(/stopped 1 process/) });
    expect(existsSync(env.dir)).toBe(false);
    expect(isAlive(state!)).toBe(false);
    expect(events.at(-1)).toMatchObject({ state: 'missing', cause: 'deleted', namespaceUid: env.uid });
    expect((await cleanup.inventory(ctx, target!)).items.some((i) => i.name === 'loc1-dev')).toBe(false);

    const again = await cleanup.verifyAndClean(ctx, target!, job(env, 'loc1'));
    expect(again).toMatchObject({ outcome: 'done', message: expect.stringMatching(/already gone/) });
  });

  it('archives its state record before removing it, and removes nothing when the archive cannot be sent', async () => {
    const env = await deployed('loc5');
    const { ctx } = context();
    const [target] = await cleanup.targets(ctx);
    // A job that asks for an archive, at an executor that cannot send one: failed, nothing removed.
    await expect(
      cleanup.verifyAndClean(ctx, target!, job(env, 'loc5', { archive: 'objects' })),
    ).rejects.toThrow(/cannot send one; not deleted/);
    expect(existsSync(env.dir)).toBe(true);
    // The server refuses it: the error is the job's, the environment stays.
    const refused = { ...ctx, archive: () => Promise.reject(new Error('413 too large')) };
    await expect(
      cleanup.verifyAndClean(refused, target!, job(env, 'loc5', { archive: 'objects' })),
    ).rejects.toThrow(/413 too large/);
    expect(existsSync(env.dir)).toBe(true);
    const archived: unknown[] = [];
    const archiving = { ...ctx, archive: async (a: unknown) => void archived.push(a) };
    const result = await cleanup.verifyAndClean(archiving, target!, job(env, 'loc5', { archive: 'objects' }));
    expect(result.outcome).toBe('done');
    expect(archived).toEqual([
      expect.objectContaining({
        kind: 'exec',
        path: env.dir,
        state: expect.objectContaining({ record: expect.objectContaining({ uid: env.uid }) }),
      }),
    ]);
    expect(existsSync(env.dir)).toBe(false);
  });

  it('an unreadable record or a torn index entry makes the inventory incomplete, and cleans nothing', async () => {
    const env = await deployed('loc2');
    const { ctx } = context();
    const [target] = await cleanup.targets(ctx);
    const recordFile = path.join(env.dir, 'environment.json');
    const good = readFileSync(recordFile, 'utf8');
    writeFileSync(recordFile, good.slice(0, 10)); // torn
    const inventory = await cleanup.inventory(ctx, target!);
    expect(inventory.complete).toBe(false);
    expect(inventory.error).toContain(recordFile);
    await expect(cleanup.verifyAndClean(ctx, target!, job(env, 'loc2'))).rejects.toMatchObject({
      code: 'TEND_EXEC_STATE',
    });
    expect(existsSync(env.dir)).toBe(true);
    expect(isAlive(listDeployStates(env.dir)[0]!)).toBe(true);

    writeFileSync(recordFile, good);
    const entry = path.join(
      hostIndexDir(),
      readdirSync(hostIndexDir()).find((n) => n.endsWith('.json'))!,
    );
    writeFileSync(entry, '{"pa');
    const torn = await cleanup.inventory(ctx, target!);
    expect(torn).toMatchObject({ complete: false, error: expect.stringContaining(entry) });
    // Restored, the environment is listed and cleaned as usual.
    rmSync(entry);
    await executeCommand('deploy', [], { root: env.root });
    expect((await cleanup.inventory(ctx, target!)).complete).toBe(true);
    expect((await cleanup.verifyAndClean(ctx, target!, job(env, 'loc2'))).outcome).toBe('done');
  });
});
