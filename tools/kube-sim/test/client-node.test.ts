/** The same flows through @kubernetes/client-node 1.x: typed APIs, Watch, Exec, Attach, Log. */
import type { V1Status } from '@kubernetes/client-node';
import {
  AppsV1Api,
  Attach,
  BatchV1Api,
  CoreV1Api,
  Exec,
  KubeConfig,
  Log,
  PatchStrategy,
  setHeaderOptions,
  Watch,
} from '@kubernetes/client-node';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PassThrough, Readable, Writable } from 'node:stream';
import * as tar from 'tar';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeSim } from '../src/index.js';
import { startKubeSim } from '../src/index.js';
import { call, deployment, pod, waitFor } from './helpers.js';

let sim: KubeSim;
let kc: KubeConfig;
let core: CoreV1Api;
let apps: AppsV1Api;
let batch: BatchV1Api;

function sink(): { stream: Writable; text: () => string } {
  const chunks: Buffer[] = [];
  return {
    stream: new Writable({
      write(c: Buffer, _e, cb) {
        chunks.push(Buffer.from(c));
        cb();
      },
    }),
    text: () => Buffer.concat(chunks).toString('utf8'),
  };
}

beforeAll(async () => {
  // Long enough that a busy machine still reads a deleted namespace while it is Terminating.
  sim = await startKubeSim({ namespaceDeleteDelayMs: 1500 });
  kc = new KubeConfig();
  kc.loadFromString(sim.kubeconfigYaml);
  core = kc.makeApiClient(CoreV1Api);
  apps = kc.makeApiClient(AppsV1Api);
  batch = kc.makeApiClient(BatchV1Api);
});
afterAll(async () => {
  await sim?.stop();
});

describe('client-node against kube-sim', () => {
  it('loads the kubeconfig: context kube-sim, CA data, bearer token', () => {
    expect(kc.getCurrentContext()).toBe('kube-sim');
    expect(kc.getCurrentCluster()?.caData).toBeTruthy();
    expect(kc.getCurrentUser()?.token).toBe(sim.token);
  });

  it('reads kube-system, whose uid is the cluster id', async () => {
    const ks = await core.readNamespace({ name: 'kube-system' });
    expect(ks.metadata?.uid).toBe(sim.clusterId);
  });

  it('creates, patches and deletes a namespace; it goes Terminating then away', async () => {
    const created = await core.createNamespace({
      body: { metadata: { name: 'cn-1', labels: { team: 'a' } } },
    });
    expect(created.metadata?.uid).toBeTruthy();
    expect(created.metadata?.resourceVersion).toMatch(/^\d+$/);
    expect(created.metadata?.creationTimestamp).toBeTruthy();
    expect(created.status?.phase).toBe('Active');
    const patched = await core.patchNamespace(
      { name: 'cn-1', body: { metadata: { annotations: { 'tend.dev/last-used': '2025-01-01' } } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    expect(patched.metadata?.annotations?.['tend.dev/last-used']).toBe('2025-01-01');
    expect(Number(patched.metadata?.resourceVersion)).toBeGreaterThan(
      Number(created.metadata?.resourceVersion),
    );
    await core.deleteNamespace({ name: 'cn-1' });
    const terminating = await core.readNamespace({ name: 'cn-1' });
    expect(terminating.status?.phase).toBe('Terminating');
    expect(terminating.metadata?.deletionTimestamp).toBeTruthy();
    expect(terminating.spec?.finalizers).toEqual(['kubernetes']);
    await waitFor(async () => {
      try {
        await core.readNamespace({ name: 'cn-1' });
        return false;
      } catch (e) {
        return (e as { code?: number }).code === 404;
      }
    }, 'namespace to disappear');
  });

  it('rolls out a Deployment: ReplicaSet, pods, available status', async () => {
    await core.createNamespace({ body: { metadata: { name: 'cn-apps' } } });
    await apps.createNamespacedDeployment({
      namespace: 'cn-apps',
      body: deployment('api', 'shop/api:v1', 3),
    });
    const d = await waitFor(async () => {
      const x = await apps.readNamespacedDeployment({ namespace: 'cn-apps', name: 'api' });
      return x.status?.availableReplicas === 3 && x.status.observedGeneration === x.metadata?.generation
        ? x
        : undefined;
    }, 'deployment available');
    expect(d.status?.readyReplicas).toBe(3);
    expect(d.status?.updatedReplicas).toBe(3);
    expect(d.status?.conditions?.find((c) => c.type === 'Available')?.status).toBe('True');
    const rs = await apps.listNamespacedReplicaSet({ namespace: 'cn-apps' });
    expect(rs.items).toHaveLength(1);
    expect(rs.items[0]!.metadata?.ownerReferences?.[0]?.uid).toBe(d.metadata?.uid);
    const pods = await core.listNamespacedPod({ namespace: 'cn-apps', labelSelector: 'app=api' });
    expect(pods.items).toHaveLength(3);
    expect(pods.items.every((p) => p.status?.phase === 'Running')).toBe(true);
    // A strategic merge patch of the image rolls out a new ReplicaSet and retires the old one.
    await apps.patchNamespacedDeployment(
      {
        namespace: 'cn-apps',
        name: 'api',
        body: { spec: { template: { spec: { containers: [{ name: 'app', image: 'shop/api:v2' }] } } } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch),
    );
    await waitFor(async () => {
      const x = await apps.readNamespacedDeployment({ namespace: 'cn-apps', name: 'api' });
      const ps = await core.listNamespacedPod({ namespace: 'cn-apps', labelSelector: 'app=api' });
      return (
        x.metadata?.generation === 2 &&
        x.status?.observedGeneration === 2 &&
        x.status.updatedReplicas === 3 &&
        x.status.availableReplicas === 3 &&
        x.status.replicas === 3 &&
        ps.items.length === 3 &&
        ps.items.every((p) => p.spec?.containers[0]?.image === 'shop/api:v2')
      );
    }, 'second rollout');
  });

  it('runs a StatefulSet and a Job to their end states', async () => {
    await core.createNamespace({ body: { metadata: { name: 'cn-batch' } } });
    await apps.createNamespacedStatefulSet({
      namespace: 'cn-batch',
      body: {
        metadata: { name: 'db' },
        spec: {
          serviceName: 'db',
          replicas: 2,
          selector: { matchLabels: { app: 'db' } },
          template: {
            metadata: { labels: { app: 'db' } },
            spec: { containers: [{ name: 'pg', image: 'postgres:15' }] },
          },
        },
      },
    });
    await waitFor(
      async () =>
        (await apps.readNamespacedStatefulSet({ namespace: 'cn-batch', name: 'db' })).status
          ?.readyReplicas === 2,
      'statefulset ready',
    );
    expect((await core.readNamespacedPod({ namespace: 'cn-batch', name: 'db-1' })).status?.phase).toBe(
      'Running',
    );
    await batch.createNamespacedJob({
      namespace: 'cn-batch',
      body: {
        metadata: { name: 'migrate' },
        spec: {
          backoffLimit: 0,
          template: {
            spec: {
              restartPolicy: 'Never',
              containers: [{ name: 'm', image: 'busybox', command: ['sh', '-c', 'echo migrated'] }],
            },
          },
        },
      },
    });
    const job = await waitFor(async () => {
      const j = await batch.readNamespacedJob({ namespace: 'cn-batch', name: 'migrate' });
      return j.status?.conditions?.some((c) => c.type === 'Complete' && c.status === 'True') ? j : undefined;
    }, 'job complete');
    expect(job.status?.succeeded).toBe(1);
    await batch.createNamespacedJob({
      namespace: 'cn-batch',
      body: {
        metadata: { name: 'broken' },
        spec: {
          backoffLimit: 1,
          template: {
            spec: {
              restartPolicy: 'Never',
              containers: [{ name: 'm', image: 'busybox', command: ['sh', '-c', 'exit 2'] }],
            },
          },
        },
      },
    });
    const failed = await waitFor(async () => {
      const j = await batch.readNamespacedJob({ namespace: 'cn-batch', name: 'broken' });
      return j.status?.conditions?.some((c) => c.type === 'Failed' && c.status === 'True') ? j : undefined;
    }, 'job failed');
    expect(failed.status?.failed).toBe(2);
  });

  it('watches from a resourceVersion and sees ADDED, MODIFIED and DELETED', async () => {
    await core.createNamespace({ body: { metadata: { name: 'cn-watch' } } });
    const list = await core.listNamespacedConfigMap({ namespace: 'cn-watch' });
    const events: string[] = [];
    const watch = new Watch(kc);
    const ctl = await watch.watch(
      '/api/v1/namespaces/cn-watch/configmaps',
      { resourceVersion: list.metadata?.resourceVersion, labelSelector: 'w=1' },
      (type, obj: { metadata: { name: string } }) => events.push(`${type} ${obj.metadata.name}`),
      () => {},
    );
    try {
      await core.createNamespacedConfigMap({
        namespace: 'cn-watch',
        body: { metadata: { name: 'ignored' }, data: {} },
      });
      await core.createNamespacedConfigMap({
        namespace: 'cn-watch',
        body: { metadata: { name: 'c1', labels: { w: '1' } }, data: { a: '1' } },
      });
      await core.replaceNamespacedConfigMap({
        namespace: 'cn-watch',
        name: 'c1',
        body: { metadata: { name: 'c1', labels: { w: '1' } }, data: { a: '2' } },
      });
      await core.deleteNamespacedConfigMap({ namespace: 'cn-watch', name: 'c1' });
      await waitFor(() => events.length >= 3, 'three events');
      expect(events).toEqual(['ADDED c1', 'MODIFIED c1', 'DELETED c1']);
    } finally {
      ctl.abort();
    }
  });

  it('execs with stdin (tar into the scratch directory) and reports exit codes', async () => {
    await core.createNamespace({ body: { metadata: { name: 'cn-exec' } } });
    await core.createNamespacedPod({
      namespace: 'cn-exec',
      body: pod('bk', { image: 'moby/buildkit:v0.13' }),
    });
    await waitFor(
      async () =>
        (await core.readNamespacedPod({ namespace: 'cn-exec', name: 'bk' })).status?.phase === 'Running',
      'pod running',
    );
    const exec = new Exec(kc);
    const run = (
      command: string[],
      stdin: Readable | null,
    ): Promise<{ status: V1Status; out: string; err: string }> =>
      new Promise((resolve, reject) => {
        const out = sink();
        const err = sink();
        exec
          .exec('cn-exec', 'bk', 'main', command, out.stream, err.stream, stdin, false, (status) =>
            // The status arrives before the socket closes; give the streams a tick to flush.
            setImmediate(() => resolve({ status, out: out.text(), err: err.text() })),
          )
          .catch(reject);
      });
    const echoed = await run(['cat'], Readable.from([Buffer.from('hello from stdin')]));
    expect(echoed.status.status).toBe('Success');
    expect(echoed.out).toBe('hello from stdin');
    const context = tar.c({ cwd: join(import.meta.dirname, 'fixtures', 'context') }, [
      '.',
    ]) as unknown as Readable;
    const unpacked = await run(['tar', 'xf', '-', '-C', '/workspace'], context.pipe(new PassThrough()));
    expect(unpacked.status.status).toBe('Success');
    const scratch = await sim.store.scratchDir('cn-exec', 'bk');
    expect(await readFile(join(scratch, 'workspace', 'Dockerfile'), 'utf8')).toContain('FROM');
    const failed = await run(['sh', '-c', 'echo oops >&2; exit 3'], null);
    expect(failed.status.status).toBe('Failure');
    expect(failed.status.reason).toBe('NonZeroExitCode');
    expect(failed.status.details?.causes?.[0]).toEqual({ reason: 'ExitCode', message: '3' });
  });

  it('reads and follows logs with Log', async () => {
    await core.createNamespace({ body: { metadata: { name: 'cn-log' } } });
    await core.createNamespacedPod({
      namespace: 'cn-log',
      body: pod('talker', {
        restartPolicy: 'Never',
        annotations: {
          'kube-sim.tend.dev/logs': 'one\ntwo\nthree',
          'kube-sim.tend.dev/log-interval-ms': '30',
        },
      }),
    });
    await waitFor(
      async () =>
        (await core.readNamespacedPod({ namespace: 'cn-log', name: 'talker' })).status?.phase === 'Running',
      'running',
    );
    const out = sink();
    const done = new Promise<void>((resolve) => out.stream.on('finish', () => resolve()));
    await new Log(kc).log('cn-log', 'talker', 'main', out.stream, { follow: true });
    await done;
    expect(out.text()).toBe('one\ntwo\nthree\n');
    const tail = await core.readNamespacedPodLog({ namespace: 'cn-log', name: 'talker', tailLines: 1 });
    expect(tail).toBe('three\n');
    // sinceTime: only lines written from then on (none, after the last one); a bad time is a 400.
    const logPath = '/api/v1/namespaces/cn-log/pods/talker/log';
    const future = encodeURIComponent(new Date(Date.now() + 60_000).toISOString());
    const since = await call(sim, 'GET', `${logPath}?sinceTime=${future}`);
    expect([since.status, since.text]).toEqual([200, '']);
    const past = await call(sim, 'GET', `${logPath}?sinceTime=2000-01-01T00:00:00Z`);
    expect(past.text).toBe('one\ntwo\nthree\n');
    expect((await call(sim, 'GET', `${logPath}?sinceTime=yesterday`)).status).toBe(400);
    await waitFor(
      async () =>
        (await core.readNamespacedPod({ namespace: 'cn-log', name: 'talker' })).status?.phase === 'Succeeded',
      'succeeded',
    );
  });

  it('attaches to a Kaniko pod, feeds the context on stdin, and the pod succeeds with a pushed image', async () => {
    await core.createNamespace({ body: { metadata: { name: 'cn-kaniko' } } });
    const dest = `${sim.registryHost}/shop/api:v-kaniko`;
    await core.createNamespacedPod({
      namespace: 'cn-kaniko',
      body: pod('kaniko', {
        image: 'gcr.io/kaniko-project/executor:v1.23.0',
        restartPolicy: 'Never',
        stdin: true,
        args: ['--context', 'tar://stdin', `--destination=${dest}`],
      }),
    });
    await waitFor(
      async () =>
        (await core.readNamespacedPod({ namespace: 'cn-kaniko', name: 'kaniko' })).status?.phase ===
        'Running',
      'running',
    );
    const out = sink();
    const stdin = (
      tar.c({ cwd: join(import.meta.dirname, 'fixtures', 'context') }, ['.']) as unknown as Readable
    ).pipe(new PassThrough());
    const ws = await new Attach(kc).attach('cn-kaniko', 'kaniko', 'main', out.stream, null, stdin, false);
    await new Promise((r) => ws.on('close', r));
    const p = await waitFor(async () => {
      const x = await core.readNamespacedPod({ namespace: 'cn-kaniko', name: 'kaniko' });
      return x.status?.phase === 'Succeeded' ? x : undefined;
    }, 'kaniko to succeed');
    expect(p.status?.containerStatuses?.[0]?.state?.terminated?.exitCode).toBe(0);
    expect(out.text()).toContain('Pushed');
    const man = sim.registry.get('shop/api', 'v-kaniko');
    expect(man?.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
  });
});
