/**
 * Garden's `--env <namespace>.<environment>`, against kube-sim: the command works in that
 * environment with the namespace as its `${environment.namespace}` (`environment.fullName` is
 * `<namespace>.<environment>`), so a Garden project's provider deploys into
 * `<project>-<namespace>`, as Garden's does. Two namespaces of one environment are two recorded
 * environments: cleaning one up leaves the other. What is no such value is a usage error before
 * anything is created.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { cleanupEnvCommand } from '../../../src/commands/cleanup.js';
import { executeCommand } from '../../../src/commands/execute.js';
import { statusCommand } from '../../../src/commands/status.js';
import { validateCommand } from '../../../src/commands/validate.js';
import type { TendError } from '../../../src/errors.js';
import { makeProject, removeProjects } from '../../helpers/project.js';
import { configMapData, plugins, projectYaml, startSim, type SimHandle } from './helpers.js';

let h: SimHandle;
beforeAll(async () => {
  h = await startSim();
});
afterAll(async () => h?.stop());
afterEach(removeProjects);

/** A Garden project whose `preview` environment sets defaultNamespace, and a ConfigMap naming where it is. */
const gardenProject = () =>
  makeProject({
    'project.garden.yml': `apiVersion: garden.io/v2
kind: Project
name: web
defaultEnvironment: preview
environments:
  - name: preview
    defaultNamespace: main
providers:
  - name: local-kubernetes
    context: kube-sim
`,
    'garden.yml': `kind: Deploy
type: kubernetes
name: where
spec:
  manifests:
    - apiVersion: v1
      kind: ConfigMap
      metadata: { name: where }
      data:
        namespace: \${environment.namespace}
        fullName: \${environment.fullName}
`,
  });

const namespaces = () => h.sim.store.list('namespaces', '').map((n) => n.metadata.name);

describe('--env <namespace>.<environment>', () => {
  it("deploys into the project's namespace of that name, reports it, and cleans it up alone", async () => {
    const root = gardenProject();
    for (const env of ['pr-1.preview', 'pr-2.preview']) {
      const deployed = await executeCommand('deploy', [], { root, env }, plugins);
      expect(deployed.exitCode).toBe(0);
    }
    expect(await configMapData(h.kubeconfig, 'web-pr-1', 'where')).toEqual({
      namespace: 'pr-1',
      fullName: 'pr-1.preview',
    });
    expect(await configMapData(h.kubeconfig, 'web-pr-2', 'where')).toEqual({
      namespace: 'pr-2',
      fullName: 'pr-2.preview',
    });
    // Without one, the environment's own: defaultNamespace.
    expect(namespaces()).not.toContain('web-main');

    const status = await statusCommand({ root, env: 'pr-1.preview' });
    expect(status.data).toMatchObject({
      environment: 'preview',
      namespace: 'pr-1',
      appNamespace: 'web-pr-1',
    });
    expect(status.data.actions.map((a) => [a.ref, a.state])).toEqual([['deploy.where', 'ready']]);
    const validated = await validateCommand({ root, env: 'pr-2.preview', var: [] });
    expect(validated.data).toMatchObject({ namespace: 'pr-2', appNamespace: 'web-pr-2' });

    const cleanup = await cleanupEnvCommand({ root, env: 'pr-1.preview' });
    expect(cleanup.data.providers.find((p) => p.name === 'kubernetes')).toMatchObject({
      deleted: true,
      message: 'deleted namespace web-pr-1',
    });
    expect(namespaces()).not.toContain('web-pr-1');
    expect(namespaces()).toContain('web-pr-2');
    expect(await configMapData(h.kubeconfig, 'web-pr-2', 'where')).toEqual({
      namespace: 'pr-2',
      fullName: 'pr-2.preview',
    });
  });

  it('a value that is no environment or no namespace name is a usage error, and nothing is created', async () => {
    const root = gardenProject();
    const before = namespaces();
    const refused = async (env: string) => {
      const error = await executeCommand('deploy', [], { root, env }, plugins).then(
        () => undefined,
        (caught: TendError) => caught,
      );
      return error && `${error.code} ${error.message.split(';')[0]}`;
    };
    expect(await refused('a.b.preview')).toBe('TEND_USAGE invalid --env "a.b.preview"');
    expect(await refused('.preview')).toBe('TEND_USAGE invalid --env ".preview"');
    expect(await refused('PR-1.preview')).toBe('TEND_USAGE invalid --env "PR-1.preview"');
    expect(await refused('pr\u0000.preview')).toBe('TEND_USAGE invalid --env "pr\\u0000.preview"');
    expect(await refused('\ud800.preview')).toBe('TEND_USAGE invalid --env "\\ud800.preview"');
    expect(await refused(`${'a'.repeat(64)}.preview`)).toBe(
      `TEND_USAGE invalid --env "${'a'.repeat(64)}.preview"`,
    );
    expect(await refused('pr-1.nope')).toBe('TEND_ENVIRONMENT_NOT_FOUND unknown environment "nope"');
    expect(await refused('pr-1.')).toBe('TEND_ENVIRONMENT_NOT_FOUND unknown environment ""');
    expect(namespaces()).toEqual(before);
  });

  it("a cluster's own namespace named with it is refused, by deploy and by cleanup, and left as it was", async () => {
    const root = makeProject({
      // A tend project: the provider deploys into the environment's namespace itself.
      'tend.yml': projectYaml({ registry: h.sim.registryHost, namespace: 'main' }),
    });
    const before = h.sim.store.get('namespaces', '', 'kube-system')!;
    for (const namespace of ['kube-system', 'default', 'kube-public']) {
      const env = `${namespace}.dev`;
      const failure = (work: Promise<unknown>) =>
        work.then(
          () => 'succeeded',
          (caught: TendError) => `${caught.code} ${caught.message.split(';')[0]}`,
        );
      const refusal = `TEND_CONFIG_INVALID the app namespace "${namespace}" of environment dev may not be a Kubernetes system namespace`;
      expect(await failure(executeCommand('deploy', [], { root, env }, plugins))).toBe(refusal);
      // The way out names the command line's --env too, where this namespace came from.
      await expect(executeCommand('deploy', [], { root, env }, plugins)).rejects.toThrow(
        'another <namespace> in `--env <namespace>.dev`',
      );
      expect(await failure(cleanupEnvCommand({ root, env }))).toBe(refusal);
    }
    const after = h.sim.store.get('namespaces', '', 'kube-system')!;
    expect(after.metadata.uid).toBe(before.metadata.uid);
    expect(after.metadata.resourceVersion).toBe(before.metadata.resourceVersion);
    expect(after.metadata.labels?.['app.kubernetes.io/managed-by']).toBeUndefined();
  });
});
