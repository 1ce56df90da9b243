/**
 * `tend validate` says before anything runs what `tend deploy` refuses: a kubernetes Deploy's
 * object written for another namespace, at the file:line of its `metadata.namespace` (or the
 * spec's key for inline manifests and a kustomization), with the deploy's exceptions:
 * `overrideNamespace: true`, a Namespace the kustomization renders (adopted), a namespace written
 * as a template expression, and the provider's own namespace.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { validateCommand } from '../../../src/commands/validate.js';
import type { TendError } from '../../../src/errors.js';
import { makeProject, removeProjects } from '../../helpers/project.js';
import { projectYaml } from './helpers.js';

afterEach(removeProjects);

const secret = (namespace: string) =>
  `apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\n  namespace: ${namespace}\ntype: Opaque\n`;
const configMap = 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata: { a: "1" }\n';

interface Problem {
  code: string;
  message: string;
  location: { file: string; line: number; column: number };
}

/** `tend validate` in the project: its problems, none when it passes. */
async function problems(files: Record<string, string>): Promise<Problem[]> {
  const root = makeProject({
    'tend.yml': projectYaml({ registry: 'registry.test', namespace: 'ns-dev' }),
    ...files,
  });
  try {
    await validateCommand({ root, var: [] });
    return [];
  } catch (error) {
    const detail = (error as TendError).detail as { errors?: Problem[] } | undefined;
    if (!detail?.errors) throw error;
    return detail.errors;
  }
}

const deploy = (spec: string) => `kind: Deploy\ntype: kubernetes\nname: app\nspec:\n${spec}`;

describe('validate: manifests written for another namespace', () => {
  it('a manifest file: the file:line of its metadata.namespace, what deploy would do, the ways out', async () => {
    const found = await problems({
      'app/app.tend.yml': deploy('  manifestFiles: [k8s/*.yaml]\n'),
      'app/k8s/a.yaml': `${configMap}---\n${secret('prod')}`,
    });
    expect(found).toEqual([
      {
        code: 'TEND_CONFIG_INVALID',
        message:
          'deploy.app: Secret creds sets namespace "prod", but tend deploys into "ns-dev"; ' +
          'remove metadata.namespace, or set `overrideNamespace: true`',
        location: { file: 'app/k8s/a.yaml', line: 11, column: 14 },
      },
    ]);
  });

  it('every one is found, in templated files and inline manifests too', async () => {
    const found = await problems({
      'app/app.tend.yml': deploy(
        '  manifestTemplates: [t.yaml]\n  manifests:\n    - apiVersion: v1\n      kind: ConfigMap\n' +
          '      metadata: { name: inline, namespace: other }\n',
      ),
      'app/t.yaml': `${secret('staging')}---\n${secret('ns-dev').replace('creds', 'here')}`,
    });
    expect(found.map((p) => `${p.location.file}:${p.location.line} ${p.message.split(', but')[0]}`)).toEqual([
      'app/app.tend.yml:9 deploy.app: manifests[0]: ConfigMap inline sets namespace "other"',
      'app/t.yaml:5 deploy.app: Secret creds sets namespace "staging"',
    ]);
  });

  it('passes where deploy would: overrideNamespace, the environment namespace, a template expression', async () => {
    expect(
      await problems({
        'app/app.tend.yml': deploy('  manifestFiles: [a.yaml]\n  overrideNamespace: true\n'),
        'app/a.yaml': secret('prod'),
      }),
    ).toEqual([]);
    expect(
      await problems({
        'app/app.tend.yml': deploy('  manifestTemplates: [a.yaml, b.yaml]\n'),
        'app/a.yaml': secret('ns-dev'),
        'app/b.yaml': secret('${environment.namespace}').replace('creds', 'b'),
      }),
    ).toEqual([]);
  });

  it("the provider's own namespace is the one objects go to", async () => {
    const root = makeProject({
      'tend.yml': projectYaml({
        registry: 'registry.test',
        namespace: 'ns-dev',
        providerExtra: '    namespace: team-a\n',
      }),
      'app/app.tend.yml': deploy('  manifestFiles: [a.yaml, b.yaml]\n'),
      'app/a.yaml': secret('team-a'),
      'app/b.yaml': secret('ns-dev').replace('creds', 'b'),
    });
    const error = (await validateCommand({ root, var: [] }).catch((e: unknown) => e)) as TendError;
    expect(error.message).toMatch(
      /^app\/b\.yaml:5:14: |Secret b sets namespace "ns-dev", but tend deploys into "team-a"/,
    );
    const errors = (error.detail as { errors: Problem[] }).errors;
    expect(errors.map((p) => p.location.file)).toEqual(['app/b.yaml']);
  });

  it('a kustomization: its objects in another namespace are found, unless it renders that Namespace (adopted)', async () => {
    const kustomization = (extra: string) =>
      `apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: shop\nresources: [cm.yaml${extra}]\n`;
    const found = await problems({
      'app/app.tend.yml': deploy('  kustomize:\n    path: k\n'),
      'app/k/kustomization.yaml': kustomization(''),
      'app/k/cm.yaml': configMap,
    });
    expect(found.map((p) => `${p.location.file}:${p.location.line} ${p.message.split(', but')[0]}`)).toEqual([
      'app/app.tend.yml:6 deploy.app: kustomize k: ConfigMap settings sets namespace "shop"',
    ]);
    expect(
      await problems({
        'app/app.tend.yml': deploy('  kustomize:\n    path: k\n'),
        'app/k/kustomization.yaml': kustomization(', ns.yaml'),
        'app/k/cm.yaml': configMap,
        'app/k/ns.yaml': 'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: shop\n',
      }),
    ).toEqual([]);
  });

  it('a file that does not parse, or a pattern that matches nothing, is left to deploy, which reports it', async () => {
    expect(
      await problems({
        'app/app.tend.yml': deploy('  manifestFiles: [a.yaml, "none/*.yaml"]\n'),
        'app/a.yaml': 'apiVersion: v1\nkind: Secret\nmetadata: [unclosed\n',
      }),
    ).toEqual([]);
  });
});
