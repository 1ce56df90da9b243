/**
 * `autoscaling/v2` HorizontalPodAutoscalers and `batch/v1` CronJobs: discovered, stored and
 * printed for the real kubectl, and the HPA's minimal controller behaviour (replicas kept within
 * its bounds; a target scaled to 0 left alone, autoscaling disabled).
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeSim } from '../src/index.js';
import { startKubeSim } from '../src/index.js';
import { call, waitFor } from './helpers.js';

const KUBECTL = '/usr/bin/kubectl';

let sim: KubeSim;
let dir: string;
let env: NodeJS.ProcessEnv;

function kubectl(args: string[], input?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(KUBECTL, args, { env }, (err, stdout, stderr) => {
      if (err) reject(new Error(`kubectl ${args.join(' ')} failed: ${stderr}`));
      else resolve(stdout);
    });
    child.stdin!.end(input ?? '');
  });
}

const manifests = `
apiVersion: apps/v1
kind: Deployment
metadata: { name: web, namespace: scaling }
spec:
  replicas: 1
  selector: { matchLabels: { app: web } }
  template:
    metadata: { labels: { app: web } }
    spec: { containers: [{ name: web, image: shop/web:v1 }] }
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: { name: web, namespace: scaling }
spec:
  scaleTargetRef: { apiVersion: apps/v1, kind: Deployment, name: web }
  minReplicas: 2
  maxReplicas: 5
  metrics:
    - type: Resource
      resource: { name: cpu, target: { type: Utilization, averageUtilization: 80 } }
---
apiVersion: batch/v1
kind: CronJob
metadata: { name: report, namespace: scaling }
spec:
  schedule: "0 3 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: Never
          containers: [{ name: report, image: shop/report:v1 }]
`;

const replicas = async () =>
  (await call(sim, 'GET', '/apis/apps/v1/namespaces/scaling/deployments/web')).json.spec.replicas as number;

describe.skipIf(!existsSync(KUBECTL))('kube-sim: HorizontalPodAutoscaler and CronJob', () => {
  beforeAll(async () => {
    sim = await startKubeSim();
    dir = await mkdtemp(join(tmpdir(), 'kube-sim-autoscaling-'));
    await sim.writeKubeconfig(join(dir, 'kubeconfig'));
    env = { ...process.env, KUBECONFIG: join(dir, 'kubeconfig'), HOME: dir };
    await kubectl(['create', 'namespace', 'scaling']);
  });
  afterAll(async () => {
    await sim?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('kubectl applies them and lists them with get hpa,cronjobs', async () => {
    const applied = await kubectl(['apply', '-f', '-'], manifests);
    expect(applied).toContain('horizontalpodautoscaler.autoscaling/web created');
    expect(applied).toContain('cronjob.batch/report created');
    const listed = await kubectl(['get', 'hpa,cronjobs', '-n', 'scaling', '--no-headers']);
    expect(listed).toMatch(/horizontalpodautoscaler\.autoscaling\/web/);
    expect(listed).toMatch(/cronjob\.batch\/report/);
    const resources = await kubectl(['api-resources', '--no-headers']);
    expect(resources).toMatch(/horizontalpodautoscalers\s+hpa\s+autoscaling\/v2/);
    expect(resources).toMatch(/cronjobs\s+cj\s+batch\/v1/);
    const cronjob = JSON.parse(await kubectl(['get', 'cronjob', 'report', '-n', 'scaling', '-o', 'json']));
    expect(cronjob.spec.suspend).toBe(false);
    // Applying the same again changes nothing.
    expect(await kubectl(['apply', '-f', '-'], manifests)).toContain(
      'horizontalpodautoscaler.autoscaling/web unchanged',
    );
  });

  it('the HPA keeps its target within its bounds, and leaves a target scaled to 0 alone', async () => {
    // minReplicas 2: the deployment applied with 1 is scaled up.
    await waitFor(async () => (await replicas()) === 2, 'the HPA to scale web to its minimum');
    await kubectl(['scale', 'deployment/web', '-n', 'scaling', '--replicas=9']);
    await waitFor(async () => (await replicas()) === 5, 'the HPA to scale web down to its maximum');

    await kubectl(['scale', 'deployment/web', '-n', 'scaling', '--replicas=0']);
    const disabled = await waitFor(async () => {
      const hpa = (
        await call(sim, 'GET', '/apis/autoscaling/v2/namespaces/scaling/horizontalpodautoscalers/web')
      ).json;
      const c = hpa.status?.conditions?.find((x: { type: string }) => x.type === 'ScalingActive');
      return c?.reason === 'ScalingDisabled' ? hpa : undefined;
    }, 'autoscaling to be disabled');
    expect(disabled.status.currentReplicas).toBe(0);
    expect(await replicas()).toBe(0);

    await kubectl(['scale', 'deployment/web', '-n', 'scaling', '--replicas=3']);
    await waitFor(async () => {
      const hpa = (
        await call(sim, 'GET', '/apis/autoscaling/v2/namespaces/scaling/horizontalpodautoscalers/web')
      ).json;
      return hpa.status?.conditions?.[0]?.status === 'True' && hpa.status.desiredReplicas === 3;
    }, 'autoscaling to be active again');
    expect(await replicas()).toBe(3);
  });
});
