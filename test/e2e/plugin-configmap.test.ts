/**
 * The plugin-configmap example through the real CLI: `tend deploy` loads the third-party plugin
 * named by `providers[].plugin`, writes the ConfigMap through ctx.kubernetes(), and records the
 * namespace in the session's events; `tend status` sees it deployed; `tend cleanup env` removes it.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { copyExample, removeProjects, runTend } from '../helpers/project.js';
import { startSim, type SimHandle } from '../plugins/kubernetes/helpers.js';

let handle: SimHandle;

beforeAll(async () => {
  handle = await startSim();
});

afterAll(async () => {
  await handle.stop();
  removeProjects();
});

describe('the plugin-configmap example', () => {
  it('deploys a ConfigMap with its third-party plugin and records the namespace', async () => {
    const root = copyExample('plugin-configmap', { dependencies: true });
    const tend = (...args: string[]) => runTend(args, { cwd: root, env: { KUBECONFIG: handle.kubeconfig } });

    const deployed = await tend('deploy', '--json');
    expect(deployed.code, deployed.stderr).toBe(0);
    const namespace = JSON.parse(deployed.stdout).namespace as string;
    const configMap = handle.sim.store.get('configmaps', namespace, 'settings') as unknown as {
      data: Record<string, string>;
    };
    expect(configMap.data).toEqual({ greeting: 'hello from greeter', environment: 'dev' });

    const logs = readdirSync(path.join(root, '.tend', 'events'));
    const events = logs.flatMap((f) =>
      readFileSync(path.join(root, '.tend', 'events', f), 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as { type: string; payload: Record<string, unknown> }),
    );
    const reported = events.filter((e) => e.type === 'namespaceStatus').map((e) => e.payload);
    expect(reported).toContainEqual(
      expect.objectContaining({
        pluginName: 'configmap',
        namespaceName: namespace,
        state: 'ready',
        cause: 'created',
        role: 'app',
      }),
    );

    const status = await tend('status', '--json');
    expect(status.code, status.stderr).toBe(0);
    expect(JSON.parse(status.stdout).actions).toEqual([
      expect.objectContaining({ ref: 'deploy.settings', state: 'ready' }),
    ]);

    const cleaned = await tend('cleanup', 'env', '--json');
    expect(cleaned.code, cleaned.stderr).toBe(0);
    expect(handle.sim.store.get('namespaces', '', namespace)).toBeUndefined();
  });
});
