/**
 * True readiness: after a manifest change a Deploy is `ready` only when the rollout is done as
 * `kubectl rollout status` means it — the new generation observed, every replica on the new
 * template and available, no old replica left — for Deployments, StatefulSets and DaemonSets.
 * kube-sim rolls like the real controllers (surge and unavailability bounds, one StatefulSet pod
 * at a time, status counted before a pod is replaced), and the new pods take a while to start,
 * so a readiness that trusts the old replicas' availability returns too early here.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { removeProjects } from '../../helpers/project.js';
import { execute, kubectl, kubectlJson, shopProject, startSim, type SimHandle } from './helpers.js';

let h: SimHandle;
beforeAll(async () => {
  // Old pods terminate for a second, as they would during a real pod's grace period.
  h = await startSim({ podTerminationDelayMs: 1000 });
});
afterAll(async () => h?.stop());
afterEach(removeProjects);

interface PodJson {
  metadata: { name: string; labels: Record<string, string>; deletionTimestamp?: string };
  spec: { containers: { env?: { name: string; value: string }[] }[] };
  status: { phase: string; conditions?: { type: string; status: string }[] };
}

const podTemplate = (app: string) => `  template:
    metadata:
      labels: { app: ${app} }
      annotations:
        kube-sim.tend.dev/start-ms: "\${var.startMs}"
        kube-sim.tend.dev/ready: "\${var.ready}"
    spec:
      containers:
        - name: ${app}
          image: alpine
          env: [{ name: RELEASE, value: "\${var.release}" }]
`;

const manifests = {
  Deployment: (replicas: number) => `apiVersion: apps/v1
kind: Deployment
metadata: { name: web }
spec:
  replicas: ${replicas}
  selector: { matchLabels: { app: web } }
${podTemplate('web')}`,
  StatefulSet: (replicas: number) => `apiVersion: apps/v1
kind: StatefulSet
metadata: { name: web }
spec:
  replicas: ${replicas}
  serviceName: web
  selector: { matchLabels: { app: web } }
${podTemplate('web')}`,
  DaemonSet: () => `apiVersion: apps/v1
kind: DaemonSet
metadata: { name: web }
spec:
  selector: { matchLabels: { app: web } }
${podTemplate('web')}`,
};

/** A project whose one Deploy applies `manifest`; variables change the pod template. */
function rolloutProject(namespace: string, manifest: string, timeout = 30): string {
  return shopProject({
    registry: h.sim.registryHost,
    namespace,
    projectExtra: 'variables: { release: "1", startMs: "0", ready: "true" }\n',
    files: {
      'api/api.tend.yml': `kind: Deploy
type: kubernetes
name: web
spec: { files: [k8s/web.yaml], timeout: ${timeout} }
`,
      'api/k8s/web.yaml': manifest,
    },
  });
}

const release2 = ['release=2', 'startMs=600'];

/** The pods of the workload that are not terminating. */
async function pods(namespace: string): Promise<PodJson[]> {
  const all = await kubectlJson<{ items: PodJson[] }>(
    h.kubeconfig,
    'get',
    'pods',
    '-n',
    namespace,
    '-l',
    'app=web',
  );
  return all.items.filter((p) => !p.metadata.deletionTimestamp);
}

const isReady = (p: PodJson) =>
  p.status.phase === 'Running' &&
  (p.status.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
const releaseOf = (p: PodJson) => p.spec.containers[0]!.env?.find((e) => e.name === 'RELEASE')?.value;

async function rolledOut(namespace: string, kind: string): Promise<string> {
  return kubectl(
    h.kubeconfig,
    'rollout',
    'status',
    `${kind.toLowerCase()}/web`,
    '-n',
    namespace,
    '--watch=false',
  );
}

describe('readiness after a manifest change', () => {
  it('a Deployment is ready only when every replica runs the new template, is available and no old one is left', async () => {
    const root = rolloutProject('rollout-deploy', manifests.Deployment(2));
    expect((await execute('deploy', root)).exitCode).toBe(0);
    const result = await execute('deploy', root, [], { var: release2 });
    expect(result.exitCode).toBe(0);
    expect(result.data.actions[0]).toMatchObject({ ref: 'deploy.web', state: 'ready' });

    // At the moment tend said ready: only new pods, all of them ready; the old ReplicaSet empty.
    const now = await pods('rollout-deploy');
    expect(now.map(releaseOf)).toEqual(['2', '2']);
    expect(now.every(isReady)).toBe(true);
    const sets = await kubectlJson<{
      items: {
        metadata: { labels: Record<string, string> };
        spec: { replicas: number };
        status: { replicas?: number };
      }[];
    }>(h.kubeconfig, 'get', 'replicasets', '-n', 'rollout-deploy', '-l', 'app=web');
    expect(sets.items).toHaveLength(2);
    const hashes = new Set(now.map((p) => p.metadata.labels['pod-template-hash']));
    expect(hashes.size).toBe(1);
    const old = sets.items.find((rs) => !hashes.has(rs.metadata.labels['pod-template-hash']!))!;
    expect([old.spec.replicas, old.status.replicas ?? 0]).toEqual([0, 0]);
    expect(await rolledOut('rollout-deploy', 'Deployment')).toMatch(
      /deployment "web" successfully rolled out/,
    );
  });

  it('a Deployment whose new pods never become ready times out, saying the old replica is still there', async () => {
    const root = rolloutProject('rollout-stuck', manifests.Deployment(1), 2);
    expect((await execute('deploy', root)).exitCode).toBe(0);
    const result = await execute('deploy', root, [], { var: ['release=2', 'ready=false'] });
    expect(result.exitCode).toBe(1);
    const error = result.data.actions[0]!.error!;
    expect(error.code).toBe('TEND_K8S_TIMEOUT');
    expect(error.message).toMatch(
      /deploy\.web: not ready after 2 s:\nDeployment\/web: 1 old replica pending termination/,
    );
    expect(error.message).toMatch(/pod web-[a-z0-9]+-[a-z0-9]+: phase Running; web running, not ready/);
    // kubectl agrees: the rollout is not done.
    expect(await rolledOut('rollout-stuck', 'Deployment')).toMatch(/1 old replicas are pending termination/);
  });

  it('a StatefulSet is ready only when every pod is at the update revision and ready', async () => {
    const root = rolloutProject('rollout-sts', manifests.StatefulSet(2));
    expect((await execute('deploy', root)).exitCode).toBe(0);
    const result = await execute('deploy', root, [], { var: release2 });
    expect(result.exitCode).toBe(0);
    const now = await pods('rollout-sts');
    expect(now.map((p) => [p.metadata.name, releaseOf(p), isReady(p)])).toEqual([
      ['web-0', '2', true],
      ['web-1', '2', true],
    ]);
    expect(await rolledOut('rollout-sts', 'StatefulSet')).toMatch(
      /roll out complete: 2 new pods have been updated/,
    );
  });

  it('a DaemonSet is ready only when its pod runs the new template and is available', async () => {
    const root = rolloutProject('rollout-ds', manifests.DaemonSet());
    expect((await execute('deploy', root)).exitCode).toBe(0);
    const result = await execute('deploy', root, [], { var: release2 });
    expect(result.exitCode).toBe(0);
    const now = await pods('rollout-ds');
    expect(now.map((p) => [releaseOf(p), isReady(p)])).toEqual([['2', true]]);
    expect(await rolledOut('rollout-ds', 'DaemonSet')).toMatch(/daemon set "web" successfully rolled out/);
  });
});
