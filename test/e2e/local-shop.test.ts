/**
 * The local-shop example through the real CLI: deploy → status → test → run → cleanup env
 * leaves no process and no state behind.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { isAlive } from '../../src/plugins/exec/deploy.js';
import { copyExample, freePort, removeProjects, runTend } from '../helpers/project.js';

/** Alive and not a zombie (orphans are reaped late, or never, by some init processes). */
const alive = (pid: number) => isAlive({ pid });

afterEach(removeProjects);

describe('the local-shop example', () => {
  it('deploys, reports status, tests, seeds, and cleans up to nothing', async () => {
    const root = copyExample('local-shop');
    const port = String(await freePort());
    const tend = (...args: string[]) => runTend(['--var', `port=${port}`, ...args], { cwd: root });

    const deployed = await tend('deploy', '--json');
    expect(deployed.code, deployed.stderr).toBe(0);
    const deployData = JSON.parse(deployed.stdout);
    expect(deployData.actions.map((a: { ref: string; state: string }) => [a.ref, a.state])).toEqual([
      ['build.service', 'ready'],
      ['deploy.service', 'ready'],
    ]);
    const namespace = deployData.namespace as string;
    const stateFile = path.join(root, '.tend', 'envs', namespace, 'deploys', 'service.json');
    const { pid } = JSON.parse(readFileSync(stateFile, 'utf8')) as { pid: number };
    expect(alive(pid)).toBe(true);
    const health = (await fetch(`http://127.0.0.1:${port}/healthz`).then((r) => r.json())) as { ok: boolean };
    expect(health.ok).toBe(true);

    const status = await tend('status', '--json');
    expect(status.code, status.stderr).toBe(0);
    const states = Object.fromEntries(
      JSON.parse(status.stdout).actions.map((a: { ref: string; state: string }) => [a.ref, a.state]),
    );
    expect(states).toEqual({
      'build.service': 'ready',
      'deploy.service': 'ready',
      'test.smoke': 'not-ready',
      'run.seed': 'not-ready',
    });

    const tested = await tend('test', '--json');
    expect(tested.code, tested.stderr).toBe(0);
    expect(
      JSON.parse(tested.stdout).actions.map((a: { ref: string; state: string }) => [a.ref, a.state]),
    ).toEqual([
      ['build.service', 'cached'],
      ['deploy.service', 'cached'],
      ['test.smoke', 'ready'],
    ]);

    const seeded = await tend('run', 'seed');
    expect(seeded.code, seeded.stderr).toBe(0);
    const items = (await fetch(`http://127.0.0.1:${port}/items`).then((r) => r.json())) as { name: string }[];
    expect(items.map((i: { name: string }) => i.name)).toEqual(
      expect.arrayContaining(['kettle', 'mug', 'saucer']),
    );

    const cleaned = await tend('cleanup', 'env');
    expect(cleaned.code, cleaned.stderr).toBe(0);
    expect(alive(pid)).toBe(false);
    expect(existsSync(path.join(root, '.tend', 'envs', namespace))).toBe(false);
    await expect(fetch(`http://127.0.0.1:${port}/healthz`)).rejects.toThrow();

    const after = await tend('status', '--json');
    expect(JSON.parse(after.stdout).providers).toEqual([{ name: 'exec', ready: false }]);
  });

  it('stops the deploy of an older version before starting the new one', async () => {
    const root = copyExample('local-shop');
    const port = String(await freePort());
    const tend = (...args: string[]) => runTend(['--var', `port=${port}`, ...args], { cwd: root });
    expect((await tend('deploy')).code).toBe(0);
    const namespace = JSON.parse((await tend('status', '--json')).stdout).namespace;
    const stateFile = path.join(root, '.tend', 'envs', namespace, 'deploys', 'service.json');
    const first = JSON.parse(readFileSync(stateFile, 'utf8'));
    const again = await tend('deploy', '--force', '--json');
    expect(again.code, again.stderr).toBe(0);
    const second = JSON.parse(readFileSync(stateFile, 'utf8'));
    expect(second.pid).not.toBe(first.pid);
    expect(alive(first.pid)).toBe(false);
    expect(alive(second.pid)).toBe(true);
    // The deploy's spec refers to the build's outputs, which this session never computed.
    const deleted = await tend('cleanup', 'deploy', 'service');
    expect(deleted.code, deleted.stderr).toBe(0);
    expect(alive(second.pid)).toBe(false);
    expect(existsSync(stateFile)).toBe(false);
    expect((await tend('cleanup', 'env')).code).toBe(0);
  });
});
