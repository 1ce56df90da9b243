/**
 * Garden's `namespace` key, against kube-sim: on a kubernetes or helm Deploy (and a configmap
 * Deploy, which is a kubernetes Deploy of one ConfigMap), a kubernetes-pod,
 * helm-pod or kubernetes-exec Test or Run, and a 0.12 kubernetes module (its Deploy, tasks and
 * tests inherit it). Naming the environment's namespace, the action deploys or runs there; naming
 * another, `tend validate` notes it at its line and the deploy or run refuses it — nothing is
 * created in that namespace, which tend would not record.
 */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { validateCommand } from '../../../src/commands/validate.js';
import type { TendError } from '../../../src/errors.js';
import { makeProject, removeProjects } from '../../helpers/project.js';
import { configMapData, execute, kubectlJson, projectYaml, startSim, type SimHandle } from './helpers.js';

let h: SimHandle;
beforeAll(async () => {
  h = await startSim();
});
afterAll(async () => h?.stop());

const originalPath = process.env.PATH;
const dirs: string[] = [];
afterEach(() => {
  process.env.PATH = originalPath;
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  removeProjects();
});

const refusal = (named: string, target: string) =>
  `namespace "${named}": tend deploys and runs in the environment's namespace ("${target}"), which it ` +
  'records and cleans up; remove the key (without it, the action goes there)';

/** The notes of `tend validate` about the key, as action, file and line. */
async function namespaceNotes(root: string): Promise<{ message: string; file?: string; line?: number }[]> {
  const notes = (await validateCommand({ root, var: [] })).data.notes ?? [];
  return notes
    .filter((n) => n.message.includes(': namespace "'))
    .map((n) => ({ message: n.message, file: n.file, line: n.line }));
}

/**
 * Validate's errors for keys that are no namespace name (a NUL, a lone surrogate, 64 characters),
 * each as `file:line` and its message up to "expected".
 */
async function hostileKeyErrors(project: (namespace: string) => string): Promise<string[][]> {
  const found: string[][] = [];
  for (const hostile of ['"bad\\u0000ns"', '"x\\ud800"', 'a'.repeat(64)]) {
    const error = await validateCommand({ root: project(hostile), var: [] }).then(
      () => undefined,
      (caught: TendError) => caught,
    );
    const errors = (error?.detail?.errors ?? []) as {
      message: string;
      location: { file: string; line: number };
    }[];
    found.push(
      errors.map((e) => `${e.location.file}:${e.location.line} ${e.message.split(' expected')[0]} expected`),
    );
  }
  return found;
}

/** The namespaces the cluster has. */
async function clusterNamespaces(): Promise<string[]> {
  const list = await kubectlJson<{ items: { metadata: { name: string } }[] }>(
    h.kubeconfig,
    'get',
    'namespaces',
  );
  return list.items.map((n) => n.metadata.name);
}

const webDeployment = `apiVersion: apps/v1
kind: Deployment
metadata: { name: web }
spec:
  replicas: 1
  selector: { matchLabels: { app: web } }
  template:
    metadata: { labels: { app: web } }
    spec: { containers: [{ name: web, image: alpine }] }`;

describe("Garden's namespace key", () => {
  it("a kubernetes Deploy's deploys when it is the environment's, and is refused at its line otherwise", async () => {
    const project = (namespace: string) =>
      makeProject({
        'tend.yml': projectYaml({ registry: h.sim.registryHost, namespace: 'nk-deploy' }),
        'app/garden.yml': `kind: Deploy
type: kubernetes
name: app
spec:
  namespace: ${namespace}
  manifests:
    - apiVersion: v1
      kind: ConfigMap
      metadata: { name: here }
      data: { a: "1" }
`,
      });

    const same = project('${environment.namespace}');
    expect(await namespaceNotes(same)).toEqual([]);
    expect((await execute('deploy', same)).data.actions.map((a) => [a.ref, a.state])).toEqual([
      ['deploy.app', 'ready'],
    ]);
    expect(await configMapData(h.kubeconfig, 'nk-deploy', 'here')).toEqual({ a: '1' });

    const other = project('nk-elsewhere');
    expect(await namespaceNotes(other)).toEqual([
      { message: `deploy.app: ${refusal('nk-elsewhere', 'nk-deploy')}`, file: 'app/garden.yml', line: 5 },
    ]);
    const refused = await execute('deploy', other);
    expect(refused.exitCode).not.toBe(0);
    expect(refused.data.actions[0]!.error?.message).toContain(refusal('nk-elsewhere', 'nk-deploy'));
    expect(await clusterNamespaces()).not.toContain('nk-elsewhere');

    // Not a namespace name at all (a NUL, a lone surrogate, too long): an error at its line.
    for (const errors of await hostileKeyErrors(project)) {
      expect(errors).toEqual(['app/garden.yml:5 invalid value for spec.namespace: expected']);
    }
  });

  it("a configmap Deploy's (Garden 0.13) is its kubernetes Deploy's", async () => {
    const project = (namespace: string) =>
      makeProject({
        'tend.yml': projectYaml({ registry: h.sim.registryHost, namespace: 'nk-volume' }),
        'app/garden.yml': `kind: Deploy
type: configmap
name: settings
spec:
  namespace: ${namespace}
  data: { a: "1" }
`,
      });
    const same = project('${environment.namespace}');
    expect(await namespaceNotes(same)).toEqual([]);
    expect((await execute('deploy', same)).data.actions.map((a) => [a.ref, a.state])).toEqual([
      ['deploy.settings', 'ready'],
    ]);
    expect(await configMapData(h.kubeconfig, 'nk-volume', 'settings')).toEqual({ a: '1' });

    const other = project('nk-volume-elsewhere');
    expect(await namespaceNotes(other)).toEqual([
      {
        message: `deploy.settings: ${refusal('nk-volume-elsewhere', 'nk-volume')}`,
        file: 'app/garden.yml',
        line: 5,
      },
    ]);
    expect((await execute('deploy', other)).data.actions[0]!.error?.message).toContain(
      refusal('nk-volume-elsewhere', 'nk-volume'),
    );
    expect(await clusterNamespaces()).not.toContain('nk-volume-elsewhere');
  });

  it("a kubernetes-pod's and a kubernetes-exec's run when it is the environment's, and are refused otherwise", async () => {
    const project = (namespace: string) =>
      makeProject({
        'tend.yml': projectYaml({ registry: h.sim.registryHost, namespace: 'nk-pods' }),
        'web/garden.yml': `kind: Deploy
type: kubernetes
name: web
spec:
  manifests:
    - ${webDeployment.split('\n').join('\n      ')}
---
kind: Run
type: kubernetes-pod
name: pod
dependencies: [deploy.web]
spec:
  namespace: ${namespace}
  resource: { kind: Deployment, name: web }
  command: [sh, -c, "echo pod says hello"]
  timeout: 20
---
kind: Test
type: kubernetes-exec
name: exec
dependencies: [deploy.web]
spec:
  namespace: ${namespace}
  resource: { kind: Deployment, name: web }
  command: [sh, -c, "echo exec says hello"]
`,
      });

    const same = project('${environment.namespace}');
    expect(await namespaceNotes(same)).toEqual([]);
    expect((await execute('run', same, ['pod'])).data.actions.find((a) => a.ref === 'run.pod')?.state).toBe(
      'ready',
    );
    expect((await execute('test', same)).data.actions.find((a) => a.ref === 'test.exec')?.state).toBe(
      'ready',
    );

    const other = project('nk-pods-elsewhere');
    expect(await namespaceNotes(other)).toEqual([
      { message: `run.pod: ${refusal('nk-pods-elsewhere', 'nk-pods')}`, file: 'web/garden.yml', line: 21 },
      { message: `test.exec: ${refusal('nk-pods-elsewhere', 'nk-pods')}`, file: 'web/garden.yml', line: 31 },
    ]);
    const ran = await execute('run', other, ['pod']);
    expect(ran.exitCode).not.toBe(0);
    expect(ran.data.actions.find((a) => a.ref === 'run.pod')?.error?.message).toContain(
      refusal('nk-pods-elsewhere', 'nk-pods'),
    );
    const tested = await execute('test', other);
    expect(tested.exitCode).not.toBe(0);
    expect(tested.data.actions.find((a) => a.ref === 'test.exec')?.error?.message).toContain(
      refusal('nk-pods-elsewhere', 'nk-pods'),
    );
    expect(await clusterNamespaces()).not.toContain('nk-pods-elsewhere');

    // Not a namespace name (a NUL, a lone surrogate, too long): each key an error at its line.
    for (const errors of await hostileKeyErrors(project)) {
      expect(errors).toEqual([
        'web/garden.yml:21 invalid value for spec.namespace: expected',
        'web/garden.yml:31 invalid value for spec.namespace: expected',
      ]);
    }
  });

  it("a 0.12 kubernetes module's applies to its Deploy and its tasks, at the module's line", async () => {
    const project = (namespace: string) =>
      makeProject({
        'tend.yml': projectYaml({ registry: h.sim.registryHost, namespace: 'nk-module' }),
        'app/garden.yml': `kind: Module
type: kubernetes
name: app
namespace: ${namespace}
manifests:
  - ${webDeployment.split('\n').join('\n    ')}
tasks:
  - name: hello
    resource: { kind: Deployment, name: web }
    command: [sh, -c, "echo task says hello"]
    timeout: 20
`,
      });

    const same = project('${environment.namespace}');
    expect(await namespaceNotes(same)).toEqual([]);
    const ran = await execute('run', same, ['hello']);
    expect(ran.data.actions.map((a) => [a.ref, a.state])).toEqual([['run.hello', 'ready']]);
    expect((await execute('deploy', same)).data.actions.map((a) => [a.ref, a.state])).toEqual([
      ['deploy.app', 'ready'],
    ]);

    const other = project('nk-module-elsewhere');
    expect(await namespaceNotes(other)).toEqual([
      {
        message: `deploy.app: ${refusal('nk-module-elsewhere', 'nk-module')}`,
        file: 'app/garden.yml',
        line: 4,
      },
      {
        message: `run.hello: ${refusal('nk-module-elsewhere', 'nk-module')}`,
        file: 'app/garden.yml',
        line: 4,
      },
    ]);
    expect((await execute('deploy', other)).exitCode).not.toBe(0);
    expect(await clusterNamespaces()).not.toContain('nk-module-elsewhere');
  });

  it("a helm Deploy's and a helm-pod's: rendered and run for the environment's namespace, refused otherwise", async () => {
    // A `helm` on PATH that prints a fixed rendering (there is no helm binary here).
    const bin = mkdtempSync(path.join(os.tmpdir(), 'tend-helm-'));
    dirs.push(bin);
    writeFileSync(path.join(bin, 'rendering.yaml'), `---\n${webDeployment}\n`);
    writeFileSync(path.join(bin, 'helm'), `#!/bin/sh\ncat "${bin}/rendering.yaml"\n`);
    chmodSync(path.join(bin, 'helm'), 0o755);
    process.env.PATH = `${bin}${path.delimiter}${originalPath}`;
    const project = (namespace: string) =>
      makeProject({
        'tend.yml': projectYaml({ registry: h.sim.registryHost, namespace: 'nk-helm' }),
        'web/garden.yml': `kind: Deploy
type: helm
name: web
spec:
  namespace: ${namespace}
  chart: { path: chart }
  timeout: 20
---
kind: Run
type: helm-pod
name: pod
spec:
  namespace: ${namespace}
  chart: { path: chart }
  resource: { kind: Deployment, name: web }
  command: [sh, -c, "echo helm pod says hello"]
  timeout: 20
`,
        'web/chart/Chart.yaml': 'apiVersion: v2\nname: web\nversion: 0.1.0\n',
      });

    const same = project('${environment.namespace}');
    expect(await namespaceNotes(same)).toEqual([]);
    expect((await execute('deploy', same)).data.actions.map((a) => [a.ref, a.state])).toEqual([
      ['deploy.web', 'ready'],
    ]);
    expect((await execute('run', same, ['pod'])).data.actions.map((a) => [a.ref, a.state])).toEqual([
      ['run.pod', 'ready'],
    ]);

    const other = project('nk-helm-elsewhere');
    expect(await namespaceNotes(other)).toEqual([
      { message: `deploy.web: ${refusal('nk-helm-elsewhere', 'nk-helm')}`, file: 'web/garden.yml', line: 5 },
      { message: `run.pod: ${refusal('nk-helm-elsewhere', 'nk-helm')}`, file: 'web/garden.yml', line: 13 },
    ]);
    const deployed = await execute('deploy', other);
    expect(deployed.data.actions[0]!.error?.message).toContain(refusal('nk-helm-elsewhere', 'nk-helm'));
    const ran = await execute('run', other, ['pod']);
    expect(ran.data.actions.find((a) => a.ref === 'run.pod')?.error?.message).toContain(
      refusal('nk-helm-elsewhere', 'nk-helm'),
    );
    expect(await clusterNamespaces()).not.toContain('nk-helm-elsewhere');
  });
});
