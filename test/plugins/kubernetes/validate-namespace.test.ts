/**
 * `tend validate` refuses what the kubernetes provider's `init` refuses in every command: an app
 * namespace that is one of the cluster's own (`default`, `kube-system`, …) or the provider's
 * `systemNamespace`. It exits 2 at the file:line where that namespace is set — the environment's
 * `defaultNamespace`, the provider's `namespace` or `systemNamespace` — with the way out, and
 * `tend deploy` refuses with the same words before it contacts a cluster.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { validateCommand } from '../../../src/commands/validate.js';
import { TendError } from '../../../src/errors.js';
import { makeProject, removeProjects, runTend } from '../../helpers/project.js';
import { projectYaml } from './helpers.js';

afterEach(removeProjects);

const deploy = 'kind: Deploy\ntype: kubernetes\nname: app\nspec:\n  manifests: []\n';

/** The error `tend validate` throws in the project, as file:line:column and message. */
async function refusal(files: Record<string, string>): Promise<{ at: string; message: string }> {
  const root = makeProject(files);
  const error = await validateCommand({ root, var: [] }).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(TendError);
  const { code, message, location } = error as TendError;
  expect(code).toBe('TEND_CONFIG_INVALID');
  return { at: `${location?.file}:${location?.line}:${location?.column}`, message };
}

/** The ways out the refusal names, for an environment. */
const ways = (environment = 'dev') =>
  `choose another defaultNamespace for the environment, another <namespace> in \`--env <namespace>.${environment}\`, or another namespace for the provider`;

describe('validate: an app namespace the kubernetes provider refuses', () => {
  it.each(['default', 'kube-system', 'kube-public', 'kube-node-lease'])(
    "the environment's defaultNamespace %s: exit 2 at its line",
    async (namespace) => {
      expect(
        await refusal({ 'tend.yml': projectYaml({ registry: 'r.test', namespace }), 'app.tend.yml': deploy }),
      ).toEqual({
        at: 'tend.yml:6:23',
        message:
          `provider kubernetes: the app namespace "${namespace}" of environment dev may not be a ` +
          `Kubernetes system namespace; ${ways()}`,
      });
    },
  );

  it("the provider's namespace, or its systemNamespace when the two are one: at that key", async () => {
    expect(
      await refusal({
        'tend.yml': projectYaml({ registry: 'r.test', providerExtra: '    namespace: default\n' }),
        'app.tend.yml': deploy,
      }),
    ).toMatchObject({ at: 'tend.yml:15:16', message: expect.stringContaining('"default"') });
    expect(
      await refusal({
        'tend.yml': projectYaml({ registry: 'r.test', providerExtra: '    systemNamespace: shop-dev\n' }),
        'app.tend.yml': deploy,
      }),
    ).toEqual({
      at: 'tend.yml:15:22',
      message: `provider kubernetes: the app namespace "shop-dev" of environment dev may not be the provider's systemNamespace; ${ways()}`,
    });
  });

  it('a namespace tend may use passes, and an exec-only project is not asked', async () => {
    const root = makeProject({ 'tend.yml': projectYaml({ registry: 'r.test' }), 'app.tend.yml': deploy });
    expect((await validateCommand({ root, var: [] })).exitCode).toBe(0);
    const exec = makeProject({
      'tend.yml':
        'kind: Project\nname: local\ndefaultEnvironment: dev\n' +
        'environments:\n  - name: dev\n    defaultNamespace: default\nproviders: [{ name: exec }]\n',
      'app.tend.yml': 'kind: Build\ntype: exec\nname: app\nspec:\n  command: ["true"]\n',
    });
    expect((await validateCommand({ root: exec, var: [] })).exitCode).toBe(0);
  });

  it('a Garden project unmodified: validate and deploy both exit 2 with the file:line and the same words', async () => {
    // Its provider deploys into the environment's namespace itself (Garden's default would be shop-default).
    const root = makeProject({
      'project.garden.yml':
        'apiVersion: garden.io/v2\nkind: Project\nname: shop\n' +
        'environments:\n  - name: local\n    defaultNamespace: default\n' +
        'providers:\n  - name: local-kubernetes\n    namespace: ${environment.namespace}\n',
      'app/garden.yml': 'kind: Deploy\ntype: kubernetes\nname: app\nspec:\n  manifests: []\n',
    });
    const validated = await runTend(['validate'], { cwd: root });
    expect(validated.code, validated.stderr).toBe(2);
    const words = `the app namespace "default" of environment local may not be a Kubernetes system namespace; ${ways('local')}`;
    expect(validated.stderr).toContain(`project.garden.yml:9:16`);
    expect(validated.stderr).toContain(words);
    const deployed = await runTend(['deploy'], { cwd: root, env: { KUBECONFIG: '/nonexistent' } });
    expect(deployed.code, deployed.stderr).toBe(2);
    expect(deployed.stderr).toContain(words);
  });
});
