/**
 * Defence in depth in the cluster: the ValidatingAdmissionPolicy that deploy/ ships
 * (components/admission, in deploy/agent and the embedded-executor overlay), rendered with
 * `kubectl kustomize` and applied to kube-sim, which enforces it with a real CEL evaluator. With
 * the ServiceAccount tokens of tend-agent and tend-server — whose ClusterRole, with the restore
 * and archive-secrets components, may delete any namespace, patch any workload and create
 * Secrets anywhere — the real `kubectl` and `@kubernetes/client-node` are refused on kube-system, on a namespace without tend's
 * label, on an adopted one (delete), on tend's own namespace and on cluster-scoped objects, as a
 * bug in tend would be; a person's credentials are not restricted; and tend's own cleanup of a
 * namespace it marked — pause, resume, `tend agent` deleting a due environment — passes untouched.
 */
import { AppsV1Api, KubeConfig, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { kubernetesPlugin } from '../../src/plugins/kubernetes/index.js';
import type { KObject } from '../../tools/kube-sim/src/index.js';
import { call } from '../../tools/kube-sim/test/helpers.js';
import {
  callContext,
  clusterSettings,
  dueEnvironments,
  jobFor,
  seedNamespace,
  testClock,
} from '../cleanup/helpers.js';
import { repoRoot, runTend, waitFor } from '../helpers/project.js';
import { startSim, type SimHandle } from '../plugins/kubernetes/helpers.js';
import { createTestServer } from '../server/helpers.js';

const systemNamespace = 'tend-system';
const policyName = 'tend-marked-namespaces-only';
const denied = `ValidatingAdmissionPolicy '${policyName}' with binding '${policyName}' denied request`;

let handle: SimHandle;
const scratch = mkdtempSync(path.join(os.tmpdir(), 'tend-admission-'));
const kubeconfigs: Record<string, string> = {};

function kubectl(args: string[], options: { kubeconfig?: string; input?: string } = {}) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    const child = execFile(
      'kubectl',
      args,
      { env: { ...process.env, KUBECONFIG: options.kubeconfig ?? handle.kubeconfig }, maxBuffer: 16 << 20 },
      (error, stdout, stderr) =>
        resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
    if (options.input !== undefined) child.stdin!.end(options.input);
  });
}

/** `kubectl kustomize` of a kustomization naming deploy/ directories as resources and components. */
async function render(resources: string[], components: string[] = []): Promise<string> {
  const dir = mkdtempSync(path.join(scratch, 'kustomization-'));
  const rel = (p: string) => path.relative(dir, path.join(repoRoot, 'deploy', p));
  writeFileSync(
    path.join(dir, 'kustomization.yaml'),
    `resources: [${resources.map(rel).join(', ')}]\ncomponents: [${components.map(rel).join(', ')}]\n`,
  );
  const run = await kubectl(['kustomize', dir]);
  expect(run.code, run.stderr).toBe(0);
  return run.stdout;
}

async function apply(yaml: string): Promise<void> {
  const applied = await kubectl(['apply', '--server-side', '--field-manager=tend-test', '-f', '-'], {
    input: yaml,
  });
  expect(applied.code, applied.stderr).toBe(0);
}

/** A kubeconfig with a token of one of the applied ServiceAccounts. */
async function serviceAccountKubeconfig(name: string): Promise<string> {
  const res = await call(
    handle.sim,
    'POST',
    `/api/v1/namespaces/${systemNamespace}/serviceaccounts/${name}/token`,
    {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec: { expirationSeconds: 3600 },
    },
  );
  expect(res.status, res.text).toBe(201);
  const file = path.join(scratch, `${name}.kubeconfig`);
  writeFileSync(file, handle.sim.kubeconfigFor(res.json.status.token as string), { mode: 0o600 });
  return file;
}

/** The API server's refusal of a merge patch scaling a Deployment to zero, through @kubernetes/client-node. */
async function scaleToZero(kubeconfig: string, namespace: string, name: string): Promise<string> {
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfig);
  try {
    await kc
      .makeApiClient(AppsV1Api)
      .patchNamespacedDeployment(
        { namespace, name, body: { spec: { replicas: 0 } } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
  } catch (e) {
    const { code, body } = e as { code?: number; body?: unknown };
    const status = (typeof body === 'string' ? JSON.parse(body) : body) as { message: string };
    return `${code} ${status.message}`;
  }
  throw new Error(`the patch of ${namespace}/${name} was allowed`);
}

const template = {
  metadata: { labels: { app: 'api' } },
  spec: { containers: [{ name: 'api', image: 'api:1' }] },
};
function seedDeployment(namespace: string, name: string, replicas = 2): void {
  handle.sim.store.create('deployments.apps', namespace, {
    metadata: { name, labels: { 'app.kubernetes.io/managed-by': 'tend' } },
    spec: { replicas, selector: { matchLabels: { app: 'api' } }, template },
  });
}

beforeAll(async () => {
  handle = await startSim({ namespaceDeleteDelayMs: 20, podStartDelayMs: 5 });
  delete process.env.KUBECONFIG;
  // The agent with every optional grant (the widest ClusterRole deploy/ ships), and the server
  // cleaning its own cluster: both ServiceAccounts bound to that ClusterRole, one policy. (The
  // overlay's ClusterRole, without the components, is the same object: applied first.)
  await apply(await render(['overlays/embedded-executor']));
  await apply(await render(['agent'], ['components/restore', 'components/archive-secrets']));
  kubeconfigs['tend-agent'] = await serviceAccountKubeconfig('tend-agent');
  kubeconfigs['tend-server'] = await serviceAccountKubeconfig('tend-server');
  // What a bug in tend could reach: kube-system, a team's namespace tend never marked, one tend
  // adopted, a namespace marked but annotated as tend's shared infrastructure.
  seedDeployment('kube-system', 'coredns');
  seedNamespace(handle.sim, 'payments', { labels: null });
  seedDeployment('payments', 'ledger');
  seedNamespace(handle.sim, 'legacy', { annotations: { 'tend.dev/adopted': 'true' } });
  seedDeployment('legacy', 'api');
  seedNamespace(handle.sim, 'builds', { annotations: { 'tend.dev/role': 'system' } });
}, 120_000);
afterAll(async () => {
  await handle.stop();
  rmSync(scratch, { recursive: true, force: true });
});

describe('the admission policy deploy/ ships', () => {
  it('is one policy and its binding, cluster-scoped, failing closed, denying', async () => {
    for (const dir of ['agent', 'overlays/embedded-executor']) {
      const objects = parseAllDocuments(await render([dir])).map((d) => d.toJSON() as KObject);
      const policies = objects.filter((o) => o.kind === 'ValidatingAdmissionPolicy');
      const bindings = objects.filter((o) => o.kind === 'ValidatingAdmissionPolicyBinding');
      expect(policies.map((p) => [p.apiVersion, p.metadata.name, p.metadata.namespace])).toEqual([
        ['admissionregistration.k8s.io/v1', policyName, undefined],
      ]);
      expect(policies[0]!.spec.failurePolicy).toBe('Fail');
      expect(bindings.map((b) => [b.metadata.name, b.metadata.namespace, b.spec])).toEqual([
        [policyName, undefined, { policyName, validationActions: ['Deny'] }],
      ]);
    }
    expect(handle.sim.store.get('validatingadmissionpolicies', '', policyName)).toBeDefined();
  });

  it.each(['tend-agent', 'tend-server'])(
    "refuses %s's token on kube-system, unmarked, adopted and system namespaces, whatever RBAC grants",
    async (account) => {
      const kubeconfig = kubeconfigs[account]!;
      const as = (...args: string[]) => kubectl(args, { kubeconfig });

      expect(await scaleToZero(kubeconfig, 'kube-system', 'coredns')).toBe(
        `403 deployments.apps "coredns" is forbidden: ${denied}: namespace kube-system is not labelled app.kubernetes.io/managed-by=tend: tend's service accounts change nothing in it`,
      );
      const secret = await as('-n', 'kube-system', 'create', 'secret', 'generic', 'x', '--from-literal=a=b');
      expect(secret.stderr).toContain(denied);

      const unmarked = await as('delete', 'namespace', 'payments', '--wait=false');
      expect(unmarked.code).not.toBe(0);
      expect(unmarked.stderr).toContain(
        `namespaces "payments" is forbidden: ${denied}: namespace payments is not labelled app.kubernetes.io/managed-by=tend`,
      );
      expect(await scaleToZero(kubeconfig, 'payments', 'ledger')).toContain(denied);

      const adopted = await as('delete', 'namespace', 'legacy', '--wait=false');
      expect(adopted.stderr).toContain(
        `${denied}: namespace legacy existed before tend used it (tend.dev/adopted=true): tend never deletes it`,
      );
      const system = await as('delete', 'namespace', 'builds', '--wait=false');
      expect(system.stderr).toContain(`${denied}: namespace builds is tend's shared infrastructure`);
      // tend's own namespace: its Deployments, its token's Secret.
      expect(await scaleToZero(kubeconfig, systemNamespace, 'tend-agent')).toContain(
        `${denied}: namespace ${systemNamespace} is not labelled`,
      );
      // Creating a namespace (the restore component's grant) needs tend's label on it.
      expect((await as('create', 'namespace', 'sneaky')).stderr).toContain(denied);

      // Nothing changed.
      expect(handle.sim.store.get('deployments', 'kube-system', 'coredns')!.spec.replicas).toBe(2);
      expect(handle.sim.store.get('deployments', 'payments', 'ledger')!.spec.replicas).toBe(2);
      for (const name of ['payments', 'legacy', 'builds'])
        expect(handle.sim.store.get('namespaces', '', name)!.status?.phase).toBe('Active');
      expect(handle.sim.store.get('namespaces', '', 'sneaky')).toBeUndefined();
      expect(handle.sim.store.get('secrets', 'kube-system', 'x')).toBeUndefined();
    },
  );

  it("leaves people's credentials alone: the administrator still scales kube-system", async () => {
    const scaled = await kubectl([
      '-n',
      'kube-system',
      'patch',
      'deployment',
      'coredns',
      '--type=merge',
      '-p',
      '{"spec":{"replicas":3}}',
    ]);
    expect(scaled.code, scaled.stderr).toBe(0);
    expect(handle.sim.store.get('deployments', 'kube-system', 'coredns')!.spec.replicas).toBe(3);
  });

  it('lets tend’s cleanup of a namespace it marked pass: pause, resume, and tend agent deleting a due one', async () => {
    const kubeconfig = kubeconfigs['tend-agent']!;
    const user = `system:serviceaccount:${systemNamespace}:tend-agent`;
    const mark = handle.sim.requests.latest();
    const cleanup = kubernetesPlugin.cleanup!;
    const { ctx } = callContext(clusterSettings(kubeconfig));
    const [target] = await cleanup.targets(ctx);
    const ns = seedNamespace(handle.sim, 'shop-dev');
    seedDeployment('shop-dev', 'api');
    const paused = await cleanup.verifyAndClean(ctx, target!, jobFor(handle.sim, ns, { action: 'pause' }));
    expect(paused.outcome, paused.message).toBe('done');
    expect(handle.sim.store.get('deployments', 'shop-dev', 'api')!.spec.replicas).toBe(0);
    const resumed = await cleanup.verifyAndClean(ctx, target!, jobFor(handle.sim, ns, { action: 'resume' }));
    expect(resumed.outcome, resumed.message).toBe('done');
    expect(handle.sim.store.get('deployments', 'shop-dev', 'api')!.spec.replicas).toBe(2);

    const clock = testClock();
    const server = await createTestServer('sqlite', {
      now: clock.now,
      cleanup: { maxPerPass: 100, intervalMs: 1000 },
    });
    try {
      const url = await server.app.listen({ port: 0, host: '127.0.0.1' });
      const tokenFile = path.join(scratch, 'agent-token');
      writeFileSync(tokenFile, server.tokens.agent, { mode: 0o600 });
      const [due] = await dueEnvironments(
        { sim: handle.sim, server, clock, cleanup: server.app.cleanup.switches },
        1,
        'admitted',
      );
      const agent = () =>
        runTend(
          [
            'agent',
            '--server',
            url,
            '--token-file',
            tokenFile,
            '--kubeconfig',
            kubeconfig,
            '--once',
            '--json',
          ],
          {
            env: { TEND_CONFIG_DIR: path.join(scratch, 'no-login') },
          },
        );
      const first = await agent();
      expect(first.code, first.stderr).toBe(0);
      expect((await server.app.cleanup.pass.run())?.planned).toBe(1);
      const second = await agent();
      expect(second.code, second.stderr).toBe(0);
      const jobs = (JSON.parse(second.stdout) as { last: { jobs: { outcome: string }[] } }).last.jobs;
      expect(jobs.map((j) => j.outcome)).toEqual(['done']);
      await waitFor(() => !handle.sim.store.get('namespaces', '', due!.name), 'the namespace to be gone');
    } finally {
      await server.close();
    }
    // Not one of its requests was refused on the way.
    const refused = handle.sim.requests
      .list({ since: mark })
      .filter((r) => r.user === user && (r.status === 403 || r.status === 422));
    expect(refused).toEqual([]);
  }, 180_000);
});
