/**
 * `files:` of the kubernetes Deploy as projects write them — paths, glob patterns, `!pattern` —
 * and a podinfo-like app (fixtures/webapp: two tiers, each a Deployment, a Service and an
 * autoscaling/v2 HorizontalPodAutoscaler) deployed through a glob, against kube-sim.
 */
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { makeProject, removeProjects } from '../../helpers/project.js';
import {
  deploymentYaml,
  execute,
  fixtureFiles,
  kubectlJson,
  logMessages,
  projectYaml,
  startSim,
  type SimHandle,
} from './helpers.js';

let h: SimHandle;
beforeAll(async () => {
  h = await startSim();
});
afterAll(async () => h?.stop());
afterEach(removeProjects);

const configMap = (name: string, data = 'v: "1"') =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\ndata:\n  ${data}\n`;

/** A project whose Deploy `api` (in api/) has the given `files:`. */
function filesProject(namespace: string, files: string[], extra: Record<string, string>, spec = '') {
  return makeProject({
    'tend.yml': projectYaml({ registry: h.sim.registryHost, namespace }),
    'api/api.tend.yml': `kind: Deploy
type: kubernetes
name: api
spec:
  files: ${JSON.stringify(files)}
  image: alpine
  timeout: 20
${spec}`,
    ...extra,
  });
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

const applied = (root: string, sessionId: string) =>
  logMessages(root, sessionId).filter((m) => m.startsWith('applied '));

describe('files: paths and glob patterns', () => {
  it('a glob deploys every file it matches, in path order; the version covers each of them', async () => {
    const root = filesProject('glob-ok', ['k8s/*.yaml'], {
      'api/k8s/b-api.yaml': deploymentYaml,
      'api/k8s/a-settings.yaml': configMap('settings'),
      'api/k8s/README.txt': 'not a manifest\n',
    });
    const first = await execute('deploy', root);
    expect(first.data.actions.map((a) => [a.state, a.error?.message])).toEqual([['ready', undefined]]);
    expect(applied(root, first.data.sessionId)).toEqual([
      'applied ConfigMap settings',
      'applied Deployment api',
    ]);
    expect((await execute('deploy', root)).data.actions[0]!.state).toBe('cached');

    // A new file the pattern matches is a new version, and is applied.
    writeFileSync(path.join(root, 'api', 'k8s', 'c-extra.yaml'), configMap('extra'));
    const added = await execute('deploy', root);
    expect(added.data.actions[0]!.state).toBe('ready');
    await kubectlJson(h.kubeconfig, '-n', 'glob-ok', 'get', 'configmap', 'extra');
    // One it does not match changes nothing.
    writeFileSync(path.join(root, 'api', 'k8s', 'notes.txt'), 'later\n');
    expect((await execute('deploy', root)).data.actions[0]!.state).toBe('cached');
  });

  it("patterns reach outside the action's source, `**` descends, `!pattern` leaves out; the version covers those files", async () => {
    const root = filesProject('glob-outside', ['../deploy/**/*.yml', '!**/local-*.yml'], {
      'deploy/base/settings.yml': configMap('settings', 'level: "${var.level}"'),
      'deploy/base/api/api.yml': deploymentYaml,
      // Would fail to apply: left out.
      'deploy/local-only.yml': 'kind: nothing\n',
    });
    writeFileSync(
      path.join(root, 'tend.yml'),
      projectYaml({
        registry: h.sim.registryHost,
        namespace: 'glob-outside',
        projectExtra: 'variables: { level: info }',
      }),
    );
    const first = await execute('deploy', root);
    expect(first.data.actions.map((a) => [a.state, a.error?.message])).toEqual([['ready', undefined]]);
    // In install order: the ConfigMap before the Deployment.
    expect(applied(root, first.data.sessionId)).toEqual([
      'applied ConfigMap settings',
      'applied Deployment api',
    ]);
    expect((await execute('deploy', root)).data.actions[0]!.state).toBe('cached');
    // A value of an expression in such a file is in the version too.
    const debug = await execute('deploy', root, [], { var: ['level=debug'] });
    expect(debug.data.actions[0]!.state).toBe('ready');
    const settings = await kubectlJson<{ data: Record<string, string> }>(
      h.kubeconfig,
      '-n',
      'glob-outside',
      'get',
      'configmap',
      'settings',
    );
    expect(settings.data).toEqual({ level: 'debug' });
    writeFileSync(path.join(root, 'deploy', 'base', 'settings.yml'), configMap('settings', 'level: warn'));
    expect((await execute('deploy', root)).data.actions[0]!.state).toBe('ready');
  });

  it('a pattern that matches nothing, or a path that does not exist, is a configuration error naming it', async () => {
    const noMatch = filesProject('glob-none', ['k8s/*.yml'], { 'api/k8s/api.yaml': deploymentYaml });
    const result = await execute('deploy', noMatch);
    expect(result.exitCode).toBe(2);
    expect(result.data.actions[0]!.error).toEqual({
      code: 'TEND_K8S_MANIFEST_INVALID',
      message: `deploy.api: files: k8s/*.yml matches no file (looked in ${path.join(noMatch, 'api')})`,
    });
    const allLeftOut = filesProject('glob-none', ['k8s/*.yaml', '!k8s/api.yaml'], {
      'api/k8s/api.yaml': deploymentYaml,
    });
    expect((await execute('deploy', allLeftOut)).data.actions[0]!.error!.message).toBe(
      `deploy.api: files: k8s/*.yaml matches no file (after leaving out k8s/api.yaml) (looked in ${path.join(allLeftOut, 'api')})`,
    );
    const missing = filesProject('glob-none', ['k8s/*.yaml', 'k8s/gone.yaml'], {
      'api/k8s/api.yaml': deploymentYaml,
    });
    const gone = await execute('deploy', missing);
    expect(gone.exitCode).toBe(2);
    expect(gone.data.actions[0]!.error!.message).toBe(
      `deploy.api: manifest file k8s/gone.yaml not found (looked in ${path.join(missing, 'api')})`,
    );
  });

  it('an object defined twice (a file and an inline manifest) is refused, naming both', async () => {
    const root = filesProject(
      'glob-twice',
      ['k8s/*.yaml'],
      { 'api/k8s/settings.yaml': configMap('settings') },
      '  manifests:\n    - { apiVersion: v1, kind: ConfigMap, metadata: { name: settings }, data: { v: "2" } }\n',
    );
    const result = await execute('deploy', root);
    expect(result.exitCode).toBe(2);
    expect(result.data.actions[0]!.error!.message).toBe(
      'deploy.api: manifests[0]: ConfigMap settings is already defined by k8s/settings.yaml#1',
    );
  });
});

describe('a Namespace written by hand (adopted, as one a kustomization renders)', () => {
  const namespace = (name: string) => `kind: Namespace\napiVersion: v1\nmetadata:\n  name: ${name}\n`;
  const inNamespace = (manifest: string, name: string) =>
    manifest.replace(/^( {2}name: .*)$/m, `$1\n  namespace: ${name}`);

  it("the grpc-web sample's shape: the Namespace left out with a note, the objects naming it in the environment's namespace", async () => {
    const root = filesProject(
      'ns-adopt',
      ['logging/elasticsearch.yml', 'logging/kibana.yml'],
      {
        'api/logging/elasticsearch.yml': `${namespace('kube-logging')}---\n${inNamespace(configMap('es'), 'kube-logging')}`,
        'api/logging/kibana.yml': inNamespace(deploymentYaml, 'kube-logging'),
        'api/plain.yml': inNamespace(configMap('plain'), 'inline'),
      },
      '  manifestFiles: [plain.yml]\n  manifests: [{ apiVersion: v1, kind: Namespace, metadata: { name: inline } }]\n',
    );
    const result = await execute('deploy', root);
    expect(result.data.actions.map((a) => [a.state, a.error?.message])).toEqual([['ready', undefined]]);
    const logs = logMessages(root, result.data.sessionId);
    expect(logs.filter((m) => m.includes('left out'))).toEqual([
      'logging/elasticsearch.yml#1: Namespace kube-logging left out: its objects go into the environment\'s namespace "ns-adopt"',
      'manifests[0]: Namespace inline left out: its objects go into the environment\'s namespace "ns-adopt"',
    ]);
    expect(applied(root, result.data.sessionId)).toEqual([
      'applied ConfigMap plain',
      'applied ConfigMap es',
      'applied Deployment api',
    ]);
    for (const name of ['es', 'plain'])
      await kubectlJson(h.kubeconfig, '-n', 'ns-adopt', 'get', 'configmap', name);
    await kubectlJson(h.kubeconfig, '-n', 'ns-adopt', 'get', 'deployment', 'api');
    expect(h.sim.store.get('namespaces', '', 'kube-logging')).toBeUndefined();
    expect(h.sim.store.get('namespaces', '', 'inline')).toBeUndefined();
    expect((await execute('deploy', root)).data.actions[0]!.state).toBe('cached');
  });

  it("what it does not cover is refused as before: an object naming another namespace, one of the cluster's own, the same Namespace twice", async () => {
    const errorOf = async (files: Record<string, string>, spec = '') => {
      const result = await execute('deploy', filesProject('ns-adopt-bad', ['k8s/*.yml'], files, spec));
      expect(result.exitCode).toBe(2);
      return result.data.actions[0]!.error;
    };
    expect(
      await errorOf({
        'api/k8s/a.yml': `${namespace('logging')}---\n${inNamespace(configMap('cm'), 'other')}`,
      }),
    ).toEqual({
      code: 'TEND_K8S_MANIFEST_INVALID',
      message:
        'deploy.api: k8s/a.yml#2: ConfigMap cm sets namespace "other", but tend deploys into "ns-adopt-bad"; ' +
        'remove metadata.namespace, or set `overrideNamespace: true`',
    });
    expect(
      await errorOf({
        'api/k8s/a.yml': `${namespace('kube-system')}---\n${inNamespace(configMap('cm'), 'kube-system')}`,
      }),
    ).toEqual({
      code: 'TEND_K8S_MANIFEST_INVALID',
      message:
        "deploy.api: k8s/a.yml#1: Namespace kube-system is one of the cluster's own namespaces: tend deploy refuses it, " +
        'as it deploys only into the environment\'s namespace ("ns-adopt-bad") and leaves the cluster\'s alone; ' +
        'remove the Namespace manifest',
    });
    expect(
      await errorOf(
        { 'api/k8s/a.yml': namespace('logging') },
        '  manifests: [{ apiVersion: v1, kind: Namespace, metadata: { name: logging } }]\n',
      ),
    ).toEqual({
      code: 'TEND_K8S_MANIFEST_INVALID',
      message: 'deploy.api: manifests[0]: Namespace logging is already defined by k8s/a.yml#1',
    });
  });
});

describe('install order', () => {
  it('a Deployment written before the Secret its pods read: the Secret is applied first, and the pods start', async () => {
    // As demokratie-live/democracy-development's manifests: applied as written, the pods failed
    // (CreateContainerConfigError: secret not found) about one deploy in two.
    const root = filesProject('mf-order', ['app.yaml'], {
      'api/app.yaml': `${deploymentYaml.replace(
        '          ports: [{ containerPort: 8080 }]',
        '          ports: [{ containerPort: 8080 }]\n          env: [{ name: TOKEN, valueFrom: { secretKeyRef: { name: api-token, key: token } } }]',
      )}---
apiVersion: v1
kind: Secret
metadata: { name: api-token }
stringData: { token: s3cret }
`,
    });
    const deployed = await execute('deploy', root);
    expect(deployed.data.actions.map((a) => [a.state, a.error?.message])).toEqual([['ready', undefined]]);
    expect(applied(root, deployed.data.sessionId)).toEqual([
      'applied Secret api-token',
      'applied Deployment api',
    ]);
  });
});

describe('a podinfo-like app (fixtures/webapp) through a glob', () => {
  interface List<T> {
    items: T[];
  }
  interface Hpa {
    apiVersion: string;
    metadata: { name: string; namespace: string };
    spec: { scaleTargetRef: { kind: string; name: string }; minReplicas: number; maxReplicas: number };
  }

  it('two Deployments, their Services and autoscaling/v2 HPAs, moved from namespace webapp by overrideNamespace', async () => {
    const files = ['webapp/**/*.yaml', '!**/kustomization.yaml', '!webapp/common/namespace.yaml'];
    const root = makeProject({
      'tend.yml': projectYaml({ registry: h.sim.registryHost, namespace: 'podinfo-dev' }),
      'podinfo.tend.yml': `kind: Deploy
type: kubernetes
name: webapp
spec:
  files: ${JSON.stringify(files)}
  overrideNamespace: true
  timeout: 30
`,
      ...fixtureFiles('webapp', 'webapp'),
    });
    const result = await execute('deploy', root);
    expect(result.data.actions.map((a) => [a.state, a.error?.message])).toEqual([['ready', undefined]]);
    // In Helm's install order, each kind as the files list it.
    expect(applied(root, result.data.sessionId)).toEqual([
      'applied ServiceAccount webapp',
      'applied Service backend',
      'applied Service frontend',
      'applied Deployment backend',
      'applied Deployment frontend',
      'applied HorizontalPodAutoscaler backend',
      'applied HorizontalPodAutoscaler frontend',
    ]);
    const get = <T>(what: string) =>
      kubectlJson<List<T>>(
        h.kubeconfig,
        '-n',
        'podinfo-dev',
        'get',
        what,
        '-l',
        'tend.dev/action=deploy.webapp',
      );
    const deployments = await get<{ metadata: { name: string }; status: { availableReplicas?: number } }>(
      'deployments',
    );
    expect(deployments.items.map((d) => [d.metadata.name, d.status.availableReplicas])).toEqual([
      ['backend', 1],
      ['frontend', 1],
    ]);
    const services = await get<{ metadata: { name: string }; spec: { ports: { port: number }[] } }>(
      'services',
    );
    expect(services.items.map((s) => [s.metadata.name, s.spec.ports[0]!.port])).toEqual([
      ['backend', 9898],
      ['frontend', 80],
    ]);
    const hpas = await get<Hpa>('horizontalpodautoscalers.v2.autoscaling');
    expect(
      hpas.items.map((a) => [
        a.apiVersion,
        a.metadata.namespace,
        a.spec.scaleTargetRef.name,
        a.spec.maxReplicas,
      ]),
    ).toEqual([
      ['autoscaling/v2', 'podinfo-dev', 'backend', 2],
      ['autoscaling/v2', 'podinfo-dev', 'frontend', 4],
    ]);
    expect(h.sim.store.get('namespaces', '', 'webapp')).toBeUndefined();
    expect((await execute('deploy', root)).data.actions[0]!.state).toBe('cached');
  });
});

describe('a manifest file parsed once', () => {
  it("keeps a file's documents parsed: a later deploy of the same text reads them back, a changed text is parsed", async () => {
    const text = configMap('settings', 'level: "one"');
    const root = filesProject('kept-documents', ['k8s/settings.yaml'], { 'api/k8s/settings.yaml': text });
    expect((await execute('deploy', root)).data.actions[0]!.state).toBe('ready');
    const level = async () =>
      (
        await kubectlJson<{ data: { level: string } }>(
          h.kubeconfig,
          '-n',
          'kept-documents',
          'get',
          'configmap',
          'settings',
        )
      ).data.level;
    expect(await level()).toBe('one');

    // Kept under the hash of the text, as a rendering's documents are; made up here, with a checksum that holds…
    const kept = path.join(root, '.tend', 'cache', 'kustomize', `${sha256(text)}.json`);
    const madeUp = JSON.stringify([{ ...(parse(text) as object), data: { level: 'kept' } }]);
    writeFileSync(kept, `# tend rendering sha256:${sha256(madeUp)}\n${madeUp}`);
    // …they are what the next deploy of that text applies, without parsing it again…
    expect((await execute('deploy', root, [], { force: true })).data.actions[0]!.state).toBe('ready');
    expect(await level()).toBe('kept');
    // …until the file changes.
    writeFileSync(path.join(root, 'api', 'k8s', 'settings.yaml'), configMap('settings', 'level: "two"'));
    expect((await execute('deploy', root)).data.actions[0]!.state).toBe('ready');
    expect(await level()).toBe('two');
  });
});
