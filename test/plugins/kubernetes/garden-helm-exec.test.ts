/**
 * Garden's `helm` Deploy, `helm-pod`, `kubernetes-exec` and `kubernetes-pod` with `resource`, in
 * kube-sim. No helm release is installed on this machine: the deploy path is tested with a `helm`
 * script on PATH that prints a fixed chart rendering and records its arguments (tend's side:
 * what it asks helm, and what it does with the rendering); the not-found path for real.
 */
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { validateCommand } from '../../../src/commands/validate.js';
import { makeProject } from '../../helpers/project.js';
import { execute, kubectlJson, projectYaml, startSim, type SimHandle } from './helpers.js';

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
});

/** The chart as the fake helm renders it: a Namespace (adopted), a ConfigMap in it, a Deployment. */
const rendering = `---
# Source: web/templates/namespace.yaml
apiVersion: v1
kind: Namespace
metadata:
  name: web-system
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: web-config
  namespace: web-system
data:
  script.sh: 'echo "\${HOME}"'
---
apiVersion: v1
kind: Pod
metadata:
  name: web-test
  annotations: { helm.sh/hook: test }
spec: { containers: [{ name: t, image: alpine }] }
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector: { matchLabels: { app: web } }
  template:
    metadata: { labels: { app: web } }
    spec:
      containers:
        - name: web
          image: alpine
          env: [{ name: GREETING, value: hello }]
`;

/** A `helm` on PATH that records its arguments and the values file, and prints the rendering. */
function fakeHelm(): string {
  const bin = mkdtempSync(path.join(os.tmpdir(), 'tend-helm-'));
  dirs.push(bin);
  writeFileSync(path.join(bin, 'rendering.yaml'), rendering);
  writeFileSync(
    path.join(bin, 'helm'),
    `#!/bin/sh
printf '%s\\n' "$@" > "${bin}/argv"
for last; do :; done
cat "$last" > "${bin}/values"
cat "${bin}/rendering.yaml"
`,
  );
  chmodSync(path.join(bin, 'helm'), 0o755);
  process.env.PATH = `${bin}${path.delimiter}${originalPath}`;
  return bin;
}

function helmProject(namespace: string, extra = ''): string {
  return makeProject({
    'tend.yml': projectYaml({ registry: h.sim.registryHost, namespace }),
    'web/web.tend.yml': `kind: Deploy
type: helm
name: web
spec:
  chart: { path: chart }
  releaseName: web-release
  valueFiles: [values-dev.yaml]
  values: { replicas: 2, image: { tag: v1 } }
  timeout: 20
${extra}`,
    'web/chart/Chart.yaml': 'apiVersion: v2\nname: web\nversion: 0.1.0\n',
    'web/chart/templates/deployment.yaml': '# rendered by helm\n',
    'web/values-dev.yaml': 'replicas: 1\n',
  });
}

describe('helm Deploy', () => {
  it('renders with `helm template` (release, chart, namespace, value files, values last) and applies the rendering', async () => {
    const bin = fakeHelm();
    const root = helmProject('helm-ok');
    const deployed = await execute('deploy', root);
    expect(deployed.data.actions.map((a) => [a.ref, a.state, a.error?.message])).toEqual([
      ['deploy.web', 'ready', undefined],
    ]);
    const argv = readFileSync(path.join(bin, 'argv'), 'utf8').trim().split('\n');
    expect(argv.slice(0, -1)).toEqual([
      'template',
      'web-release',
      path.join(root, 'web', 'chart'),
      '--namespace',
      'helm-ok',
      '--values',
      path.join(root, 'web', 'values-dev.yaml'),
      '--values',
    ]);
    expect(argv.at(-1)).toMatch(/helm-values-web-[0-9a-f]+\.yaml$/);
    expect(readFileSync(path.join(bin, 'values'), 'utf8')).toBe('replicas: 2\nimage:\n  tag: v1\n');
    // The Namespace of the rendering stands for the environment's: its ConfigMap is there, as written.
    const configMap = await kubectlJson<{
      data: Record<string, string>;
      metadata: { labels: Record<string, string> };
    }>(h.kubeconfig, '-n', 'helm-ok', 'get', 'configmap', 'web-config');
    expect(configMap.data['script.sh']).toBe('echo "${HOME}"');
    expect(configMap.metadata.labels['tend.dev/action']).toBe('deploy.web');
    const pods = await kubectlJson<{ items: { metadata: { name: string } }[] }>(
      h.kubeconfig,
      '-n',
      'helm-ok',
      'get',
      'pods',
    );
    // The test hook is left out; the Deployment's pod runs.
    expect(pods.items.map((p) => p.metadata.name).filter((n) => n.startsWith('web-test'))).toEqual([]);
    expect(pods.items.some((p) => p.metadata.name.startsWith('web-'))).toBe(true);
  });

  it("kubernetes-exec runs the command in a running pod of the chart's Deployment; kubernetes-pod takes its pod spec", async () => {
    fakeHelm();
    const root = helmProject(
      'helm-exec',
      `---
kind: Test
type: kubernetes-exec
name: web-exec
dependencies: [deploy.web]
spec:
  resource: { kind: Deployment, name: web }
  command: [sh, -c, "echo exec says hello"]
---
kind: Test
type: kubernetes-exec
name: web-exec-fails
dependencies: [deploy.web]
spec:
  resource: { kind: Deployment, name: web }
  command: [sh, -c, "exit 3"]
---
kind: Run
type: kubernetes-pod
name: web-pod
dependencies: [deploy.web]
spec:
  resource: { kind: Deployment, name: web }
  command: [sh, -c, "echo pod says hello"]
  timeout: 20
`,
    );
    const tested = await execute('test', root);
    const states = Object.fromEntries(tested.data.actions.map((a) => [a.ref, a.state]));
    expect(states['test.web-exec']).toBe('ready');
    expect(states['test.web-exec-fails']).toBe('failed');
    const ran = await execute('run', root, ['web-pod']);
    expect(ran.data.actions.find((a) => a.ref === 'run.web-pod')?.state).toBe('ready');
  });

  it('two Deploys rendering the same object into one namespace: an error naming both', async () => {
    fakeHelm();
    const root = helmProject(
      'helm-twice',
      `---
kind: Deploy
type: helm
name: web-again
spec: { chart: { path: chart }, timeout: 20 }
`,
    );
    const deployed = await execute('deploy', root);
    const errors = deployed.data.actions.map((a) => a.error?.message).filter(Boolean);
    expect(errors).toEqual([
      expect.stringMatching(
        /: ConfigMap web-config in namespace "helm-twice" is also rendered by deploy\.web(-again)?; two Deploys cannot own one object/,
      ),
    ]);
    expect(errors[0]).toMatch(/^deploy\.web(-again)?: /);
  });

  it('without helm on PATH: validate passes, deploy fails with TEND_TOOL_NOT_FOUND naming helm', async () => {
    const empty = mkdtempSync(path.join(os.tmpdir(), 'tend-no-helm-'));
    dirs.push(empty);
    process.env.PATH = `${empty}${path.delimiter}${path.dirname(process.execPath)}`;
    const root = helmProject('helm-missing');
    expect((await validateCommand({ root, var: [] })).exitCode).toBe(0);
    const deployed = await execute('deploy', root);
    expect(deployed.exitCode).toBe(2);
    expect(deployed.data.actions[0]!.error).toMatchObject({
      code: 'TEND_TOOL_NOT_FOUND',
      message: expect.stringMatching(
        /^deploy\.web: helm is not on PATH; .*install helm \(https:\/\/helm\.sh/,
      ),
    });
  });
});
