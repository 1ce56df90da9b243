/**
 * Attack: a plugin reaches a namespace around the one create and delete path. Through
 * ctx.kubernetes() it deletes a foreign namespace, relabels one as tend's with a Namespace apply,
 * or applies a ClusterRole. The client offered to plugins refuses Namespace and every other
 * cluster-scoped kind before any request (TEND_K8S_CLUSTER_SCOPED), and the victims stay as they
 * were.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { copyExample, removeProjects, repoRoot, runTend } from '../helpers/project.js';
import { kubectl, startSim, type SimHandle } from '../plugins/kubernetes/helpers.js';
import { writeFileSync } from 'node:fs';

let handle: SimHandle;

beforeAll(async () => {
  handle = await startSim();
});

afterAll(async () => {
  await handle.stop();
  removeProjects();
});

/** The error code of the failed deploy action in `tend deploy --json`'s result. */
const refusal = (stdout: string) =>
  (JSON.parse(stdout) as { actions: { error?: { code: string } }[] }).actions[0]?.error?.code;

const pluginPath = path.join(repoRoot, 'test/fixtures/plugins/namespace-bypass.js');

function project(attack: string, victim: string): string {
  const root = copyExample('plugin-configmap', { dependencies: true });
  writeFileSync(
    path.join(root, 'tend.yml'),
    `kind: Project
name: bypass
environments: [{ name: dev, defaultNamespace: bypass-dev }]
providers: [{ name: bypass, plugin: ${JSON.stringify(pluginPath)} }]
---
kind: Deploy
type: bypass
name: settings
spec: { data: { attack: ${attack}, victim: ${victim} } }
`,
  );
  return root;
}

describe('a plugin cannot touch a namespace around the namespace gate', () => {
  it.each([
    ['delete-namespace', 'victim-delete'],
    ['relabel-namespace', 'victim-relabel'],
    ['read-namespace', 'victim-read'],
  ])(
    '%s through ctx.kubernetes().objects is refused; the namespace stays as it was',
    async (attack, victim) => {
      await kubectl(handle.kubeconfig, 'create', 'namespace', victim);
      const before = handle.sim.store.get('namespaces', '', victim) as { metadata: Record<string, unknown> };
      const root = project(attack, victim);
      const run = await runTend(['deploy', '--json'], { cwd: root, env: { KUBECONFIG: handle.kubeconfig } });
      expect(run.code, run.stderr).toBe(2);
      expect(refusal(run.stdout)).toBe('TEND_K8S_CLUSTER_SCOPED');
      const after = handle.sim.store.get('namespaces', '', victim) as {
        metadata: Record<string, unknown>;
        status?: { phase?: string };
      };
      expect(after.metadata.labels ?? {}).toEqual(before.metadata.labels ?? {});
      expect(after.metadata.annotations ?? {}).toEqual(before.metadata.annotations ?? {});
      expect(after.metadata.deletionTimestamp).toBeUndefined();
      expect(after.status?.phase ?? 'Active').toBe('Active');
      // Not a request reached the victim.
      const touched = handle.sim.requests
        .list()
        .filter((r) => r.resource === 'namespaces' && r.namespace === victim);
      expect(touched.map((r) => r.verb)).not.toContain('delete');
      expect(touched.map((r) => r.verb)).not.toContain('patch');
    },
  );

  it('a ClusterRole apply is refused too: nothing cluster-scoped is created', async () => {
    const root = project('apply-cluster-role', 'bypass-role');
    const run = await runTend(['deploy', '--json'], { cwd: root, env: { KUBECONFIG: handle.kubeconfig } });
    expect(run.code, run.stderr).toBe(2);
    expect(refusal(run.stdout)).toBe('TEND_K8S_CLUSTER_SCOPED');
    const roleRequests = handle.sim.requests.list().filter((r) => r.path.includes('clusterroles'));
    expect(roleRequests).toEqual([]);
  });
});
