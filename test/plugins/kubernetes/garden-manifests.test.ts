/**
 * Manifests as projects ship them, with Garden's semantics, against kube-sim: a shell script in a
 * ConfigMap (`echo "${HOME}"`, `${BACKUP_EXIT:-0}`) deploys as written from `manifestFiles` and
 * from a kustomization; `manifestTemplates` and `files` resolve their template expressions; and
 * kustomize runs once per command.
 */
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { makeProject, removeProjects } from '../../helpers/project.js';
import { configMapData, execute, projectYaml, startSim, type SimHandle } from './helpers.js';

let h: SimHandle;
beforeAll(async () => {
  h = await startSim();
});
afterAll(async () => h?.stop());
afterEach(removeProjects);

const script = `#!/bin/sh
echo "backing up ${'$'}{HOME}"
exit ${'$'}{BACKUP_EXIT:-0}
`;

/** A ConfigMap holding the script, indented as a YAML block in a manifest. */
const configMap = (name: string) => `apiVersion: v1
kind: ConfigMap
metadata:
  name: ${name}
data:
  backup.sh: |
${script
  .split('\n')
  .filter(Boolean)
  .map((line) => `    ${line}`)
  .join('\n')}
`;

describe('kubernetes Deploy manifests with Garden semantics', () => {
  it('manifestFiles and kustomize output deploy as written; manifestTemplates and files are templated', async () => {
    const namespace = 'gm-as-written';
    const root = makeProject({
      'tend.yml': projectYaml({ registry: h.sim.registryHost, namespace }),
      'jobs/jobs.tend.yml': `kind: Deploy
type: kubernetes
name: jobs
spec:
  manifestFiles: [k8s/plain.yaml]
  manifestTemplates: [k8s/templated.yaml]
  files: [k8s/older-name.yaml]
  kustomize: { path: k8s/kustomized }
  timeout: 20
`,
      'jobs/k8s/plain.yaml': configMap('plain'),
      'jobs/k8s/templated.yaml': configMap('templated')
        .replace(/\$\{/g, '$$${')
        .replace('\ndata:\n', '\ndata:\n  namespace: ${environment.namespace}\n'),
      'jobs/k8s/older-name.yaml': `apiVersion: v1
kind: ConfigMap
metadata: { name: older-name }
data: { project: "\${project.name}" }
`,
      'jobs/k8s/kustomized/kustomization.yaml': 'resources: [configmap.yaml]\n',
      'jobs/k8s/kustomized/configmap.yaml': configMap('kustomized'),
    });
    const result = await execute('deploy', root);
    expect(result.data.actions.map((a) => [a.ref, a.state, a.error?.message])).toEqual([
      ['deploy.jobs', 'ready', undefined],
    ]);
    expect((await configMapData(h.kubeconfig, namespace, 'plain'))['backup.sh']).toBe(script);
    expect((await configMapData(h.kubeconfig, namespace, 'kustomized'))['backup.sh']).toBe(script);
    // Templated: `$${` is a literal `${`, the namespace resolved.
    expect(await configMapData(h.kubeconfig, namespace, 'templated')).toEqual({
      namespace,
      'backup.sh': script,
    });
    expect(await configMapData(h.kubeconfig, namespace, 'older-name')).toEqual({ project: 'shop' });
  });

  describe('kustomize runs once per command', () => {
    const originalPath = process.env.PATH;
    const dirs: string[] = [];
    afterEach(() => {
      process.env.PATH = originalPath;
      for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
    });

    it('the version, the status and the deploy share one rendering; the next command reuses it until an input changes', async () => {
      // A `kustomize` that records each call and renders with kubectl's built-in kustomize.
      const bin = mkdtempSync(path.join(os.tmpdir(), 'tend-path-'));
      dirs.push(bin);
      writeFileSync(
        path.join(bin, 'kustomize'),
        `#!/bin/sh\necho "$@" >> "${bin}/calls"\nshift\nexec /usr/bin/kubectl kustomize "$@"\n`,
      );
      chmodSync(path.join(bin, 'kustomize'), 0o755);
      process.env.PATH = `${bin}${path.delimiter}${originalPath}`;
      const root = makeProject({
        'tend.yml': projectYaml({ registry: h.sim.registryHost, namespace: 'gm-once' }),
        'jobs/jobs.tend.yml':
          'kind: Deploy\ntype: kubernetes\nname: jobs\nspec:\n  kustomize: { path: k8s }\n  timeout: 20\n',
        'jobs/k8s/kustomization.yaml': 'resources: [configmap.yaml]\n',
        'jobs/k8s/configmap.yaml': configMap('once'),
      });
      const calls = () => readFileSync(path.join(bin, 'calls'), 'utf8').trim().split('\n').length;
      expect((await execute('deploy', root)).data.actions[0]!.state).toBe('ready');
      expect(calls()).toBe(1);
      // Nothing it reads changed: the rendering kept in .tend/cache/kustomize.
      expect((await execute('deploy', root)).data.actions[0]!.state).toBe('cached');
      expect(calls()).toBe(1);
      writeFileSync(path.join(root, 'jobs/k8s/configmap.yaml'), configMap('changed'));
      expect((await execute('deploy', root)).data.actions[0]!.state).toBe('ready');
      expect(calls()).toBe(2);
      expect((await configMapData(h.kubeconfig, 'gm-once', 'changed'))['backup.sh']).toBe(script);
    });
  });
});
