/**
 * `tend validate` warns before anything runs of what `tend deploy` refuses: a kubernetes Deploy's
 * object written for another namespace, a note at the file:line of its `metadata.namespace` (or
 * the spec's key for inline manifests and a kustomization), with the deploy's exceptions:
 * `overrideNamespace: true`, a Namespace the kustomization renders (adopted), a namespace written
 * as a template expression, and the provider's own namespace.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { validateCommand } from '../../../src/commands/validate.js';
import { makeProject, removeProjects } from '../../helpers/project.js';
import { projectYaml } from './helpers.js';

afterEach(removeProjects);

const secret = (namespace: string) =>
  `apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\n  namespace: ${namespace}\ntype: Opaque\n`;
const configMap = 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata: { a: "1" }\n';

interface Warning {
  message: string;
  file: string;
  line: number;
  column: number;
}

/**
 * `tend validate` in the project, which passes: the notes that warn of another namespace, of a
 * cluster-scoped kind, or of a Namespace written by hand.
 */
async function warnings(files: Record<string, string>, providerExtra = ''): Promise<Warning[]> {
  const root = makeProject({
    'tend.yml': projectYaml({ registry: 'registry.test', namespace: 'ns-dev', providerExtra }),
    ...files,
  });
  const { data, exitCode } = await validateCommand({ root, var: [] });
  expect(exitCode).toBe(0);
  return (data.notes ?? []).filter(
    (n) =>
      n.message.includes('sets namespace') ||
      n.message.includes('cluster-scoped') ||
      n.message.includes('remove the Namespace manifest') ||
      n.message.includes('tend deploy adopts it'),
  );
}

const deploy = (spec: string) => `kind: Deploy\ntype: kubernetes\nname: app\nspec:\n${spec}`;

const refusal = (kind: string, namespace: string, target = 'ns-dev') =>
  `${kind} sets namespace "${namespace}": tend deploy refuses it (it deploys into "${target}"); ` +
  'remove metadata.namespace, or set `overrideNamespace: true`';

describe('validate: manifests written for another namespace', () => {
  it('a manifest file: a note at the file:line of its metadata.namespace, what deploy does, the ways out', async () => {
    expect(
      await warnings({
        'app/app.tend.yml': deploy('  manifestFiles: [k8s/*.yaml]\n'),
        'app/k8s/a.yaml': `${configMap}---\n${secret('prod')}`,
      }),
    ).toEqual([
      {
        message: `deploy.app: ${refusal('Secret creds', 'prod')}`,
        file: 'app/k8s/a.yaml',
        line: 11,
        column: 14,
      },
    ]);
  });

  it('every one is found, in templated files and inline manifests too', async () => {
    const found = await warnings({
      'app/app.tend.yml': deploy(
        '  manifestTemplates: [t.yaml]\n  manifests:\n    - apiVersion: v1\n      kind: ConfigMap\n' +
          '      metadata: { name: inline, namespace: other }\n',
      ),
      'app/t.yaml': `${secret('staging')}---\n${secret('ns-dev').replace('creds', 'here')}`,
    });
    expect(found.map((w) => `${w.file}:${w.line} ${w.message}`).sort()).toEqual([
      `app/app.tend.yml:9 deploy.app: manifests[0]: ${refusal('ConfigMap inline', 'other')}`,
      `app/t.yaml:5 deploy.app: ${refusal('Secret creds', 'staging')}`,
    ]);
  });

  it('none where deploy takes them: overrideNamespace, the environment namespace, a template expression', async () => {
    expect(
      await warnings({
        'app/app.tend.yml': deploy('  manifestFiles: [a.yaml]\n  overrideNamespace: true\n'),
        'app/a.yaml': secret('prod'),
      }),
    ).toEqual([]);
    expect(
      await warnings({
        'app/app.tend.yml': deploy('  manifestTemplates: [a.yaml, b.yaml]\n'),
        'app/a.yaml': secret('ns-dev'),
        'app/b.yaml': secret('${environment.namespace}').replace('creds', 'b'),
      }),
    ).toEqual([]);
  });

  it("the provider's own namespace is the one objects go to", async () => {
    const found = await warnings(
      {
        'app/app.tend.yml': deploy('  manifestFiles: [a.yaml, b.yaml]\n'),
        'app/a.yaml': secret('team-a'),
        'app/b.yaml': secret('ns-dev').replace('creds', 'b'),
      },
      '    namespace: team-a\n',
    );
    expect(found.map((w) => `${w.file}:${w.line} ${w.message}`)).toEqual([
      `app/b.yaml:5 deploy.app: ${refusal('Secret b', 'ns-dev', 'team-a')}`,
    ]);
  });

  it('a kustomization: its objects in another namespace are found, unless it renders that Namespace (adopted)', async () => {
    const kustomization = (extra: string) =>
      `apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: shop\nresources: [cm.yaml${extra}]\n`;
    const found = await warnings({
      'app/app.tend.yml': deploy('  kustomize:\n    path: k\n'),
      'app/k/kustomization.yaml': kustomization(''),
      'app/k/cm.yaml': configMap,
    });
    expect(found.map((w) => `${w.file}:${w.line} ${w.message}`)).toEqual([
      `app/app.tend.yml:6 deploy.app: kustomize k: ${refusal('ConfigMap settings', 'shop')}`,
    ]);
    expect(
      await warnings({
        'app/app.tend.yml': deploy('  kustomize:\n    path: k\n'),
        'app/k/kustomization.yaml': kustomization(', ns.yaml'),
        'app/k/cm.yaml': configMap,
        'app/k/ns.yaml': 'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: shop\n',
      }),
    ).toEqual([]);
  });

  it('a hostile namespace is quoted in the note (NUL, a lone surrogate); documents that are no objects are passed over', async () => {
    const found = await warnings({
      'app/app.tend.yml': deploy('  manifestFiles: [a.yaml]\n'),
      'app/a.yaml':
        'just a string\n---\n- a\n---\nkind: Secret\nmetadata: [x]\n---\n' +
        'kind: Secret\nmetadata:\n  name: s\n  namespace: "bad\\0ns\\ud800"\n---\n' +
        'kind: Secret\nmetadata: { name: t, namespace: 42 }\n',
    });
    expect(found.map((w) => w.message)).toEqual([
      `deploy.app: ${refusal('Secret s', 'bad\\u0000ns\\ud800')}`,
    ]);
  });

  it('a file that does not parse, or a pattern that matches nothing, is left to deploy, which reports it', async () => {
    expect(
      await warnings({
        'app/app.tend.yml': deploy('  manifestFiles: [a.yaml, "none/*.yaml"]\n'),
        'app/a.yaml': 'apiVersion: v1\nkind: Secret\nmetadata: [unclosed\n',
      }),
    ).toEqual([]);
  });
});

describe('validate: objects of a cluster-scoped kind', () => {
  it('a note at its kind (at its namespace, if written), saying tend deploy refuses it and what to do, overrideNamespace or not', async () => {
    const clusterRole =
      'apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: reader\nrules: []\n';
    const root = makeProject({
      'tend.yml': projectYaml({ registry: 'registry.test', namespace: 'ns-dev' }),
      'app/app.tend.yml': deploy(
        '  overrideNamespace: true\n  manifestFiles: [k8s/*.yaml]\n' +
          '  manifests: [{ apiVersion: v1, kind: PersistentVolume, metadata: { name: pv, namespace: other } }]\n',
      ),
      'app/k8s/a.yaml': `${configMap}---\n${clusterRole}`,
    });
    const { data, exitCode } = await validateCommand({ root, var: [] });
    expect(exitCode).toBe(0);
    const scoped = (data.notes ?? []).filter((n) => n.message.includes('cluster-scoped'));
    expect(scoped.map((n) => `${n.file}:${n.line} ${n.message.split(':')[0]}`)).toEqual([
      'app/k8s/a.yaml:8 deploy.app',
      'app/app.tend.yml:7 deploy.app',
    ]);
    expect(scoped.map((n) => n.message)).toEqual([
      expect.stringContaining(
        'ClusterRole reader is cluster-scoped: tend deploy refuses it, as it deploys only',
      ),
      expect.stringContaining('manifests[0]: PersistentVolume pv is cluster-scoped: tend deploy refuses it'),
    ]);
    for (const note of scoped) expect(note.message).toContain('apply it to the cluster once, outside tend');
    // overrideNamespace moves the rest: no note of another namespace.
    expect((data.notes ?? []).filter((n) => n.message.includes('sets namespace'))).toEqual([]);
  });
});

describe('validate: a Namespace written by hand', () => {
  const adoption = (what: string) =>
    `deploy.app: ${what}: tend deploy adopts it: it stands for the environment's namespace ("ns-dev"), ` +
    'so it is left out and the objects that name it go into "ns-dev"';

  it('a note at its kind, in a manifest file or inline, overrideNamespace or not; the objects that name it are not noted', async () => {
    const namespace = 'kind: Namespace\napiVersion: v1\nmetadata:\n  name: kube-logging\n';
    for (const override of ['', '  overrideNamespace: true\n']) {
      const found = await warnings({
        'app/app.tend.yml': deploy(
          `${override}  manifestFiles: [manifests.yml]\n  manifestTemplates: [more.yml]\n` +
            '  manifests: [{ apiVersion: v1, kind: Namespace, metadata: { name: inline } }]\n',
        ),
        // The grpc-web sample's shape: the Namespace in one file, objects in it in that file and another.
        'app/manifests.yml': `${namespace}---\n${secret('kube-logging')}`,
        'app/more.yml': `${secret('kube-logging').replace('creds', 'more')}---\n${secret('inline').replace('creds', 'in')}`,
      });
      expect(found.map((n) => `${n.file}:${n.line}:${n.column} ${n.message}`)).toEqual([
        `app/manifests.yml:1:7 ${adoption('Namespace kube-logging')}`,
        `app/app.tend.yml:${override ? 8 : 7}:39 ${adoption('manifests[0]: Namespace inline')}`,
      ]);
    }
  });

  it("one of the cluster's own namespaces is not adopted: a note that deploy refuses it, and the objects that name it", async () => {
    const found = await warnings({
      'app/app.tend.yml': deploy('  manifestFiles: [manifests.yml]\n'),
      'app/manifests.yml': `kind: Namespace\napiVersion: v1\nmetadata:\n  name: kube-system\n---\n${secret('kube-system')}`,
    });
    expect(found.map((n) => `${n.file}:${n.line}:${n.column} ${n.message}`)).toEqual([
      "app/manifests.yml:1:7 deploy.app: Namespace kube-system is one of the cluster's own namespaces: tend deploy " +
        'refuses it, as it deploys only into the environment\'s namespace ("ns-dev") and leaves the cluster\'s alone; ' +
        'remove the Namespace manifest',
      `app/manifests.yml:10:14 deploy.app: ${refusal('Secret creds', 'kube-system')}`,
    ]);
  });
});
