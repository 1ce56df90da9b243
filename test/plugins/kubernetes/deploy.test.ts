import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { cleanupDeployCommand } from '../../../src/commands/cleanup.js';
import { statusCommand } from '../../../src/commands/status.js';
import { errorCodes, type ErrorCode } from '../../../src/errors.js';
import { removeProjects, runTend, waitFor } from '../../helpers/project.js';
import {
  deploymentYaml,
  execute,
  kubectl,
  kubectlJson,
  namespaceEvents,
  sessionEvents,
  shopProject,
  startSim,
  type SimHandle,
} from './helpers.js';

let h: SimHandle;
beforeAll(async () => {
  h = await startSim();
});
afterAll(async () => h?.stop());
afterEach(removeProjects);

interface DeploymentJson {
  metadata: { labels: Record<string, string>; annotations: Record<string, string> };
  spec: { template: { spec: { containers: { image: string }[] } } };
  status: { availableReplicas?: number };
}

/** A deployment manifest whose pods carry kube-sim behaviour annotations. */
function deploymentWith(podAnnotations: Record<string, string>): string {
  const lines = Object.entries(podAnnotations)
    .map(([k, v]) => `        ${k}: "${v}"`)
    .join('\n');
  return deploymentYaml.replace(
    '      labels: { app: api }\n',
    `      labels: { app: api }\n      annotations:\n${lines}\n`,
  );
}

function deployProject(
  namespace: string,
  manifest: string,
  extra: Record<string, string> = {},
  projectExtra?: string,
) {
  return shopProject({
    registry: h.sim.registryHost,
    namespace,
    projectExtra,
    files: { 'api/k8s/api.yaml': manifest, ...extra },
  });
}

describe('kubernetes deploys', () => {
  it('applies the manifests with server-side apply, labelled and versioned; kubectl sees the available Deployment', async () => {
    const root = deployProject('deploy-ok', deploymentYaml);
    const result = await execute('deploy', root);
    expect(result.exitCode).toBe(0);
    const [build, deploy] = result.data.actions;
    const d = await kubectlJson<DeploymentJson>(h.kubeconfig, '-n', 'deploy-ok', 'get', 'deployment', 'api');
    expect(d.metadata.labels).toMatchObject({
      'tend.dev/action': 'deploy.api',
      'app.kubernetes.io/managed-by': 'tend',
    });
    expect(d.metadata.annotations['tend.dev/version']).toBe(deploy!.version);
    // `image:` of the spec went to the container that had none.
    expect(d.spec.template.spec.containers[0]!.image).toBe(build!.outputs.image);
    expect(d.status.availableReplicas).toBe(1);
    const events = namespaceEvents(sessionEvents(root, result.data.sessionId));
    expect(events.some((e) => e.namespaceName === 'deploy-ok' && e.role === 'app' && e.namespaceUid)).toBe(
      true,
    );
  });

  it('reports the status by the version annotation: ready when current, outdated after a change', async () => {
    const root = deployProject('deploy-status', deploymentYaml);
    await execute('deploy', root);
    const again = await execute('deploy', root);
    expect(again.data.actions.map((a) => a.state)).toEqual(['cached', 'cached']);
    const status = await statusCommand({ root });
    expect(status.data.actions.find((a) => a.ref === 'deploy.api')?.state).toBe('ready');
    await kubectl(
      h.kubeconfig,
      '-n',
      'deploy-status',
      'annotate',
      'deployment',
      'api',
      'tend.dev/version=v-old',
      '--overwrite',
    );
    const outdated = await statusCommand({ root });
    expect(outdated.data.actions.find((a) => a.ref === 'deploy.api')?.state).toBe('not-ready');
  });

  it('reports a deploy scaled to 0 by a pause as paused, not ready', async () => {
    const root = deployProject('deploy-paused', deploymentYaml);
    await execute('deploy', root);
    // What a pause leaves (test/cleanup/pause.test.ts): replicas 0, the previous count recorded.
    await kubectl(
      h.kubeconfig,
      '-n',
      'deploy-paused',
      'annotate',
      'deployment',
      'api',
      'tend.dev/paused-replicas=1',
    );
    await kubectl(h.kubeconfig, '-n', 'deploy-paused', 'scale', 'deployment', 'api', '--replicas=0');
    const status = await statusCommand({ root });
    expect(status.data.actions.find((a) => a.ref === 'deploy.api')).toMatchObject({
      state: 'paused',
      reason: expect.stringMatching(/^Deployment\/api paused by cleanup: resumed by the next/),
    });
  });

  it('deletes what it applied (tend cleanup deploy)', async () => {
    // The deploy's image comes from the build's outputs, which `tend cleanup deploy` does not compute.
    const root = deployProject('deploy-delete', deploymentYaml);
    await execute('deploy', root);
    const result = await cleanupDeployCommand(['api'], { root });
    expect(result.data.deploys).toEqual([{ ref: 'deploy.api', deleted: true }]);
    await expect(kubectl(h.kubeconfig, '-n', 'deploy-delete', 'get', 'deployment', 'api')).rejects.toThrow(
      /NotFound|not found/,
    );
  });

  it('resolves ${var.*} in manifest files, with --var overrides', async () => {
    const root = deployProject(
      'deploy-vars',
      deploymentYaml.replace('replicas: 1', 'replicas: ${var.replicas}'),
      {},
      'variables: { replicas: 1 }',
    );
    const result = await execute('deploy', root, [], { var: ['replicas=2'] });
    expect(result.exitCode).toBe(0);
    const d = await kubectlJson<{ spec: { replicas: number } }>(
      h.kubeconfig,
      '-n',
      'deploy-vars',
      'get',
      'deployment',
      'api',
    );
    expect(d.spec.replicas).toBe(2);
  });

  it('inline manifests and Jobs: waits until the Job completed', async () => {
    const root = shopProject({
      registry: h.sim.registryHost,
      namespace: 'deploy-inline',
      files: {
        'api/api.tend.yml': `kind: Deploy
type: kubernetes
name: migrate
spec:
  manifests:
    - apiVersion: batch/v1
      kind: Job
      metadata: { name: migrate }
      spec:
        template:
          spec:
            restartPolicy: Never
            containers: [{ name: m, image: alpine, command: [sh, -c, "echo migrated"] }]
    - apiVersion: v1
      kind: ConfigMap
      metadata: { name: settings }
      data: { env: "\${environment.name}" }
`,
      },
    });
    const result = await execute('deploy', root);
    expect(result.exitCode).toBe(0);
    const job = await kubectlJson<{ status: { succeeded?: number } }>(
      h.kubeconfig,
      '-n',
      'deploy-inline',
      'get',
      'job',
      'migrate',
    );
    expect(job.status.succeeded).toBe(1);
    const cm = await kubectlJson<{ data: Record<string, string> }>(
      h.kubeconfig,
      '-n',
      'deploy-inline',
      'get',
      'configmap',
      'settings',
    );
    expect(cm.data).toEqual({ env: 'dev' });
  });

  it("Garden's waitForJobs: false counts a Job ready until it fails, as Garden does (deploy and status)", async () => {
    const job = (name: string, command: string, extra = '') => `kind: Deploy
type: kubernetes
name: ${name}
spec:
${extra}  timeout: 2
  manifests:
    - apiVersion: batch/v1
      kind: Job
      metadata: { name: ${name} }
      spec:
        backoffLimit: 0
        template:
          spec:
            restartPolicy: Never
            containers: [{ name: j, image: alpine, command: [sh, -c, "${command}"] }]
`;
    const root = shopProject({
      registry: h.sim.registryHost,
      namespace: 'deploy-jobs',
      files: {
        // In a Garden file, as Garden projects write it; in tend.yml, the same key.
        'api/endless.garden.yml': job('endless', 'sleep infinity', '  waitForJobs: false\n'),
        'api/api.tend.yml': [
          job('waited', 'sleep infinity'),
          job('broken', 'sleep 2 && exit 3', '  waitForJobs: false\n'),
        ].join('---\n'),
      },
    });
    const result = await execute('deploy', root, ['endless', 'waited', 'broken']);
    const states = Object.fromEntries(result.data.actions.map((a) => [a.ref, [a.state, a.error?.code]]));
    expect(states).toEqual({
      'deploy.endless': ['ready', undefined],
      'deploy.waited': ['failed', 'TEND_K8S_TIMEOUT'],
      // Not failed yet when the deploy looked: its pod fails after 2 s.
      'deploy.broken': ['ready', undefined],
    });
    await waitFor(
      () => h.sim.store.get('jobs', 'deploy-jobs', 'broken')?.status?.failed,
      'the Job broken to fail',
    );
    const status = await statusCommand({ root });
    const statusOf = (ref: string) => status.data.actions.find((a) => a.ref === ref)?.state;
    expect(['endless', 'waited', 'broken'].map((name) => statusOf(`deploy.${name}`))).toEqual([
      'ready',
      'not-ready',
      'not-ready',
    ]);
  });
});

describe('bad input is a clear error, with the namespace still recorded', () => {
  async function failure(namespace: string, manifest: string) {
    const root = deployProject(namespace, manifest);
    const result = await execute('deploy', root);
    const deploy = result.data.actions.find((a) => a.ref === 'deploy.api')!;
    expect(deploy.state).toBe('failed');
    // The command exits as docs/errors.md says for the error: 2 for a manifest error, else 1.
    expect(result.exitCode).toBe(errorCodes[deploy.error!.code as ErrorCode]);
    const events = namespaceEvents(sessionEvents(root, result.data.sessionId));
    expect(events.some((e) => e.namespaceName === namespace && e.role === 'app' && e.namespaceUid)).toBe(
      true,
    );
    return deploy.error!;
  }

  it('a manifest without kind', async () => {
    const error = await failure('bad-nokind', 'apiVersion: v1\nmetadata: { name: x }\n');
    expect(error).toMatchObject({ code: 'TEND_K8S_MANIFEST_INVALID' });
    expect(error.message).toMatch(/k8s\/api\.yaml#1: missing kind/);
  });

  it('through the CLI a manifest error exits 2 (fix the file), a pod that cannot start 1', async () => {
    const bad = deployProject('bad-exit', 'apiVersion: v1\nmetadata: { name: x }\n');
    const manifest = await runTend(['deploy'], { cwd: bad, env: { KUBECONFIG: h.kubeconfig } });
    expect(manifest.code, manifest.stderr).toBe(2);
    expect(manifest.stdout).toMatch(/k8s\/api\.yaml#1: missing kind/);
    const pull = deployProject('bad-exit-pull', deploymentWith({ 'kube-sim.tend.dev/image-pull': 'fail' }));
    const failed = await runTend(['deploy'], { cwd: pull, env: { KUBECONFIG: h.kubeconfig } });
    expect(failed.code, failed.stderr).toBe(1);
  });

  it('a manifest that is not YAML', async () => {
    const error = await failure('bad-yaml', 'apiVersion: v1\nkind: [ConfigMap\n');
    expect(error.code).toBe('TEND_K8S_MANIFEST_INVALID');
    expect(error.message).toMatch(/k8s\/api\.yaml:\d+:\d+: invalid YAML/);
  });

  it('a manifest the cluster rejects', async () => {
    const error = await failure('bad-rejected', deploymentYaml.replace(/ {2}selector:\n.*\n/, ''));
    expect(error.code).toBe('TEND_K8S_MANIFEST_INVALID');
    expect(error.message).toMatch(/the cluster rejected Deployment api: .*spec\.selector/);
  });

  it('a manifest for another namespace or a cluster-scoped kind', async () => {
    const other = await failure(
      'bad-namespace',
      deploymentYaml.replace('  name: api\n', '  name: api\n  namespace: elsewhere\n'),
    );
    expect(other.message).toMatch(/sets namespace "elsewhere", but tend deploys into "bad-namespace"/);
    const scoped = await failure(
      'bad-scope',
      'apiVersion: v1\nkind: PersistentVolume\nmetadata: { name: pv }\nspec: {}\n',
    );
    // Known cluster-scoped kinds are refused without asking the cluster.
    expect(scoped.message).toMatch(
      /PersistentVolume pv is cluster-scoped; .*apply it to the cluster once, outside tend/,
    );
    // Its scope first: a cluster-scoped object that names a namespace is not told to set overrideNamespace.
    const scopedElsewhere = await failure(
      'bad-scope-ns',
      'apiVersion: v1\nkind: PersistentVolume\nmetadata: { name: pv, namespace: elsewhere }\nspec: {}\n',
    );
    expect(scopedElsewhere.message).toMatch(/PersistentVolume pv is cluster-scoped/);
    expect(scopedElsewhere.message).not.toContain('overrideNamespace');
    // A Namespace is adopted (manifests.test.ts), but not one of the cluster's own.
    const ns = await failure('bad-ns-kind', 'apiVersion: v1\nkind: Namespace\nmetadata: { name: default }\n');
    expect(ns.message).toMatch(
      /Namespace default is one of the cluster's own namespaces: tend deploy refuses it/,
    );
  });

  it('an image that cannot be pulled fails fast, naming the pod and the reason', async () => {
    const error = await failure('bad-image', deploymentWith({ 'kube-sim.tend.dev/image-pull': 'fail' }));
    expect(error.code).toBe('TEND_K8S_POD_FAILED');
    expect(error.message).toMatch(/Deployment\/api: cannot start: container api .*ErrImagePull/);
    expect(error.message).toMatch(/pod api-[a-z0-9-]+: phase Pending/);
  });

  it('a workload that never becomes ready times out, listing what is not ready and why', async () => {
    const root = shopProject({
      registry: h.sim.registryHost,
      namespace: 'bad-unready',
      files: {
        'api/k8s/api.yaml': deploymentWith({ 'kube-sim.tend.dev/ready': 'false' }),
        'api/api.tend.yml': `kind: Deploy
type: kubernetes
name: api
spec: { files: [k8s/api.yaml], image: alpine, timeout: 1 }
`,
      },
    });
    const result = await execute('deploy', root);
    const error = result.data.actions[0]!.error!;
    expect(error.code).toBe('TEND_K8S_TIMEOUT');
    expect(error.message).toMatch(
      /deploy\.api: not ready after 1 s:\nDeployment\/api: 0 of 1 updated replicas available/,
    );
    expect(error.message).toMatch(/pod api-[a-z0-9-]+: phase Running; api running, not ready/);
  });
});
