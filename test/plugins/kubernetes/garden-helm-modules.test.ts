/**
 * Garden's `argocd` example (0.12 modules: container, and helm with a local and a remote chart,
 * copied unmodified into test/fixtures/garden-examples): valid as it is; without helm on PATH its
 * deploy fails with TEND_TOOL_NOT_FOUND naming helm. With a `helm` script on PATH that prints a
 * fixed rendering per release, the charts deploy with the values Garden gives them (the image
 * the container module built) and the helm module's task runs in a pod like its StatefulSet.
 */
import { chmodSync, cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { repoRoot, runTend } from '../../helpers/project.js';
import { kubectlJson, startSim, type SimHandle } from './helpers.js';

let h: SimHandle;
beforeAll(async () => {
  // The example's provider names no registry that kube-sim has: kube-sim advertises its own, as kind does.
  h = await startSim({ advertiseRegistry: true });
});
afterAll(async () => h?.stop());

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function copyArgocd(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tend-garden-argocd-'));
  dirs.push(dir);
  cpSync(path.join(repoRoot, 'test', 'fixtures', 'garden-examples', 'argocd'), dir, { recursive: true });
  return dir;
}

const cluster = () => ['--kubeconfig', h.kubeconfig, '--context', 'kube-sim'];

interface ActionResult {
  ref: string;
  state: string;
  error?: { code: string; message: string };
}

const workload = (kind: string, name: string) => `---
apiVersion: apps/v1
kind: ${kind}
metadata:
  name: ${name}
spec:
  replicas: 1
  selector: { matchLabels: { app: ${name} } }
  template:
    metadata: { labels: { app: ${name} } }
    spec:
      containers: [{ name: ${name}, image: "nginx" }]
`;

/** A `helm` that prints a workload named after the release (a StatefulSet for postgres), keeping each values file. */
function fakeHelm(): string {
  const bin = mkdtempSync(path.join(os.tmpdir(), 'tend-helm-'));
  dirs.push(bin);
  writeFileSync(path.join(bin, 'postgres.yaml'), workload('StatefulSet', 'postgres'));
  for (const release of ['api', 'web'])
    writeFileSync(path.join(bin, `${release}.yaml`), workload('Deployment', release));
  writeFileSync(
    path.join(bin, 'helm'),
    `#!/bin/sh
printf '%s\\n' "$@" > "${bin}/argv-$2"
for last; do :; done
cat "$last" > "${bin}/values-$2"
cat "${bin}/$2.yaml"
`,
  );
  chmodSync(path.join(bin, 'helm'), 0o755);
  return bin;
}

// Its default environment's provider merges the project's shared settings, which push images to
// Docker Hub (out of reach here); its `local` environment builds into the cluster's own registry.
const local = ['--env', 'local'];

describe("Garden's argocd example (helm modules)", () => {
  it('is valid as it is: the modules become a helm Deploy each, helm-pod Runs and the container Builds', async () => {
    const validated = await runTend(['validate'], { cwd: copyArgocd() });
    expect(validated.code, validated.stderr).toBe(0);
    expect(validated.stdout).toMatch(/^deploy\.postgres\s+helm\s+postgres\/garden\.yml:1\s+-$/m);
    expect(validated.stdout).toMatch(
      /^run\.db-init\s+helm-pod\s+postgres\/garden\.yml:\d+\s+deploy\.postgres$/m,
    );
    expect(validated.stdout).toMatch(/^deploy\.web\s+helm\s+web\/garden\.yml:\d+\s+build\.web-image$/m);
    expect(validated.stdout).toMatch(/^deploy\.api\s+helm\s+api\/garden\.yml:\d+\s+build\.api-image$/m);
  });

  it('without helm on PATH, deploy fails on each helm Deploy with TEND_TOOL_NOT_FOUND naming helm', async () => {
    const root = copyArgocd();
    const empty = mkdtempSync(path.join(os.tmpdir(), 'tend-no-helm-'));
    dirs.push(empty);
    const deployed = await runTend(['deploy', ...local, ...cluster(), '--json'], {
      cwd: root,
      env: { PATH: `${empty}${path.delimiter}${path.dirname(process.execPath)}` },
      timeoutMs: 120_000,
    });
    expect(deployed.code, deployed.stderr).not.toBe(0);
    const { actions } = JSON.parse(deployed.stdout) as { actions: ActionResult[] };
    const helmDeploys = actions.filter((a) =>
      ['deploy.api', 'deploy.postgres', 'deploy.web'].includes(a.ref),
    );
    expect(helmDeploys.map((a) => a.ref).sort()).toEqual(['deploy.api', 'deploy.postgres', 'deploy.web']);
    for (const action of helmDeploys) {
      expect(action.state).toBe('failed');
      expect(action.error?.code).toBe('TEND_TOOL_NOT_FOUND');
      expect(action.error?.message).toMatch(/^deploy\.[a-z]+: helm is not on PATH; .*install helm/);
    }
  });

  it('with helm: each chart rendered with its values (the image the container module built), the task run in a pod like the StatefulSet', async () => {
    const root = copyArgocd();
    const bin = fakeHelm();
    const env = { PATH: `${bin}${path.delimiter}${process.env.PATH ?? ''}` };
    const deployed = await runTend(['deploy', ...local, ...cluster(), '--json'], {
      cwd: root,
      env,
      timeoutMs: 120_000,
    });
    expect(deployed.code, `${deployed.stdout}\n${deployed.stderr}`).toBe(0);
    const { actions, namespace } = JSON.parse(deployed.stdout) as {
      actions: ActionResult[];
      namespace: string;
    };
    // The images may be built already, by the test above (same versions, same registry).
    const state = (a: ActionResult) =>
      a.state === 'cached' && a.ref.startsWith('build.') ? 'ready' : a.state;
    expect(actions.map((a) => `${a.ref} ${state(a)}`).sort()).toEqual([
      'build.api-image ready',
      'build.web-image ready',
      'deploy.api ready',
      'deploy.postgres ready',
      'deploy.web ready',
    ]);

    // web: a local chart; postgres: the bitnami chart by name, repo and version.
    const argv = (release: string) =>
      readFileSync(path.join(bin, `argv-${release}`), 'utf8')
        .trim()
        .split('\n');
    expect(argv('web').slice(0, 5)).toEqual([
      'template',
      'web',
      path.join(root, 'web', 'chart'),
      '--namespace',
      namespace,
    ]);
    expect(argv('postgres').slice(0, 7)).toEqual([
      'template',
      'postgres',
      'postgresql',
      '--version',
      '12.1.2',
      '--repo',
      'https://charts.bitnami.com/bitnami',
    ]);
    const webValues = parse(readFileSync(path.join(bin, 'values-web'), 'utf8')) as {
      name: string;
      image: { repository: string; tag: string };
    };
    expect(webValues.name).toBe('web');
    expect(webValues.image.repository).toMatch(new RegExp(`^${h.sim.registryHost}/.*web-image$`));
    expect(webValues.image.tag).toMatch(/^v-[0-9a-f]+$/);
    const deployment = await kubectlJson<{ metadata: { labels: Record<string, string> } }>(
      h.kubeconfig,
      '-n',
      namespace,
      'get',
      'deployment',
      'web',
    );
    expect(deployment.metadata.labels['tend.dev/action']).toBe('deploy.web');

    const ran = await runTend(['run', 'db-init', ...local, ...cluster(), '--json'], {
      cwd: root,
      env,
      timeoutMs: 120_000,
    });
    expect(ran.code, `${ran.stdout}\n${ran.stderr}`).toBe(0);
    const run = JSON.parse(ran.stdout) as { actions: ActionResult[] };
    expect(run.actions.find((a) => a.ref === 'run.db-init')?.state).toBe('ready');
  }, 180_000);
});
