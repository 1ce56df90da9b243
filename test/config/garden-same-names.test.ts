/**
 * One name used twice in a Garden project, as Garden's own test projects write it: two copies of
 * an action of which one is disabled, two entries of one provider — resolved as Garden does.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { validateCommand } from '../../src/commands/validate.js';
import { providersOf } from '../../src/config/environment.js';
import { loadProjectConfig } from '../../src/config/pipeline.js';
import type { TendError } from '../../src/errors.js';
import { builtinPlugins } from '../../src/plugins/builtin.js';
import { makeProject, removeProjects } from '../helpers/project.js';

afterEach(removeProjects);

const gardenProject = `apiVersion: garden.io/v2
kind: Project
name: twice
environments:
  - name: local
  - name: remote
`;

describe("two copies of an action, one disabled (Garden's disabled-action-with-duplicate-name)", () => {
  const hello = (on: string) => `---
kind: Run
name: hello
type: exec
disabled: "\${environment.name != '${on}'}"
spec:
  command: [echo, ${on}]
`;

  it('validates in each environment with the copy enabled there', async () => {
    const root = makeProject({ 'project.garden.yml': gardenProject + hello('local') + hello('remote') });
    for (const [env, line] of [
      ['local', 8],
      ['remote', 15],
    ] as const) {
      const result = await validateCommand({ root, var: [], env });
      expect(result.data.actions.map(({ ref, file, line }) => `${ref} ${file}:${line}`)).toEqual([
        `run.hello project.garden.yml:${line}`,
      ]);
    }
  });

  it('is an error where both copies are enabled, at the second', async () => {
    const root = makeProject({ 'project.garden.yml': gardenProject + hello('local') + hello('local') });
    const error = await validateCommand({ root, var: [], env: 'local' }).then(
      () => undefined,
      (caught: TendError) => caught,
    );
    expect(`${error?.code} ${error?.location?.file}:${error?.location?.line} ${error?.message}`).toBe(
      'TEND_CONFIG_DUPLICATE_ACTION project.garden.yml:16 duplicate action run.hello: both copies are enabled in environment local; first defined at project.garden.yml:9:7',
    );
  });
});

describe('two entries of one provider (Garden merges the entries an environment uses)', () => {
  const project = `apiVersion: garden.io/v2
kind: Project
name: twice
environments:
  - name: local
  - name: other
providers:
  - name: kubernetes
    environments: [local]
    context: kind-kind
  - name: kubernetes
    environments: [other]
    context: shared
    buildMode: kaniko
    deploymentRegistry: { hostname: registry.example.com, namespace: shop }
  - name: kubernetes
    environments: [other]
    namespace: twice-other
    buildMode: null
    deploymentRegistry: { hostname: registry.example.com, namespace: other }
`;

  it('merges them in order as a JSON merge patch; an entry of another environment is no error', async () => {
    const root = makeProject({ 'project.garden.yml': project });
    const { project: loaded } = await loadProjectConfig({ cwd: root, plugins: builtinPlugins() });
    const kubernetes = (env: string) =>
      providersOf(loaded, env)
        .filter((p) => p.name === 'kubernetes')
        .map((p) => p.config);
    expect(kubernetes('local')).toEqual([{ context: 'kind-kind' }]);
    expect(kubernetes('other')).toEqual([
      {
        context: 'shared',
        deploymentRegistry: 'registry.example.com/other',
        namespace: 'twice-other',
      },
    ]);
    const other = await validateCommand({ root, var: [], env: 'other' });
    expect(other.data.appNamespace).toBe('twice-other');
    expect((await validateCommand({ root, var: [], env: 'local' })).exitCode).toBe(0);
  });

  it("names the line of the entry a merged key's error comes from", async () => {
    const root = makeProject({
      'project.garden.yml': project.replace('namespace: twice-other', 'namespace: "${var.nope}"'),
    });
    const error = await validateCommand({ root, var: [], env: 'other' }).then(
      () => undefined,
      (caught: TendError) => caught,
    );
    expect(`${error?.location?.file}:${error?.location?.line}`).toBe('project.garden.yml:18');
  });
});
