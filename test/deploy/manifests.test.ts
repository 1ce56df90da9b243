/**
 * The Kubernetes manifests under deploy/: every base and overlay rendered with `kubectl
 * kustomize` (what each must hold: non-root, read-only root file system, requests and limits,
 * probes, the image, a NetworkPolicy per component, everything in tend-system) and applied to
 * kube-sim with `kubectl apply --server-side` (a server-side dry run first, which creates
 * nothing; a second apply changes nothing); their pods start once the Secrets they
 * reference exist. The agent's ServiceAccount, with its token, lets `tend agent` do its job —
 * inventory, delete, pause, resume — and nothing else: the calls it made are exactly what its
 * ClusterRole grants, and it can neither read Secrets nor delete a Deployment. The server of the
 * embedded-executor overlay serves the cluster with its own ServiceAccount's token. The sign-in
 * overlay takes the OpenID provider's settings from the Secret tend-oidc (the client secret as a
 * file) and ships a roles file the server accepts.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { kubernetesPlugin } from '../../src/plugins/kubernetes/index.js';
import { call } from '../../tools/kube-sim/test/helpers.js';
import type { KObject } from '../../tools/kube-sim/src/index.js';
import {
  callContext,
  dueEnvironments,
  clusterSettings,
  jobFor,
  seedNamespace,
  testClock,
} from '../cleanup/helpers.js';
import { freePort, repoRoot, runTend, startTend, waitFor } from '../helpers/project.js';
import { startSim, type SimHandle } from '../plugins/kubernetes/helpers.js';
import { createTestServer } from '../server/helpers.js';
import { readRolesFile } from '../../src/server/oidc/roles-file.js';

/** Applied in this order: the server's Deployment ends as the PostgreSQL overlay's. */
const bases = ['server', 'agent', 'overlays/embedded-executor', 'overlays/postgres'];
/** The sign-in overlay is applied on its own, in a namespace of its own (below). */
const rendered = [...bases, 'overlays/oidc'];
/** The namespace of tend's own pods: the system namespace tend server and agent protect by default. */
const systemNamespace = 'tend-system';
const clusterScoped = new Set([
  'Namespace',
  'ClusterRole',
  'ClusterRoleBinding',
  'ValidatingAdmissionPolicy',
  'ValidatingAdmissionPolicyBinding',
]);
const { version } = JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as {
  version: string;
};

let handle: SimHandle;
const scratch = mkdtempSync(path.join(os.tmpdir(), 'tend-deploy-'));
beforeAll(async () => {
  handle = await startSim({ namespaceDeleteDelayMs: 20, podStartDelayMs: 5 });
  delete process.env.KUBECONFIG;
});
afterAll(async () => {
  await handle.stop();
  rmSync(scratch, { recursive: true, force: true });
});

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

async function render(dir: string): Promise<{ yaml: string; objects: KObject[] }> {
  const run = await kubectl(['kustomize', path.join(repoRoot, 'deploy', dir)]);
  expect(run.code, run.stderr).toBe(0);
  return { yaml: run.stdout, objects: parseAllDocuments(run.stdout).map((d) => d.toJSON() as KObject) };
}

const kindOf = (objects: KObject[], kind: string) => objects.filter((o) => o.kind === kind);
const storeKey: Record<string, string> = {
  Namespace: 'namespaces',
  ServiceAccount: 'serviceaccounts',
  PersistentVolumeClaim: 'persistentvolumeclaims',
  Service: 'services',
  Deployment: 'deployments.apps',
  ClusterRole: 'clusterroles.rbac.authorization.k8s.io',
  ClusterRoleBinding: 'clusterrolebindings.rbac.authorization.k8s.io',
  ConfigMap: 'configmaps',
  NetworkPolicy: 'networkpolicies.networking.k8s.io',
  ValidatingAdmissionPolicy: 'validatingadmissionpolicies.admissionregistration.k8s.io',
  ValidatingAdmissionPolicyBinding: 'validatingadmissionpolicybindings.admissionregistration.k8s.io',
};

/** A token for a ServiceAccount of the applied manifests, and a kubeconfig with it. */
async function serviceAccountKubeconfig(name: string, context = 'kube-sim'): Promise<string> {
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
  const file = path.join(scratch, `${name}-${context}.kubeconfig`);
  writeFileSync(file, handle.sim.kubeconfigFor(res.json.status.token as string, context), { mode: 0o600 });
  return file;
}

/** The `verb resource` pairs a ClusterRole's rules grant (`list deployments.apps`). */
function granted(role: KObject): string[] {
  const rules = role['rules'] as { apiGroups: string[]; resources: string[]; verbs: string[] }[];
  return rules
    .flatMap((r) =>
      r.apiGroups.flatMap((g) =>
        r.resources.flatMap((res) => r.verbs.map((v) => `${v} ${g ? `${res}.${g}` : res}`)),
      ),
    )
    .sort();
}

describe('the manifests under deploy/', () => {
  it.each(rendered)(
    '%s: non-root, read-only root file system, requests, the image of this version',
    async (dir) => {
      const { objects } = await render(dir);
      const deployments = kindOf(objects, 'Deployment');
      expect(deployments.length).toBe(1);
      for (const d of deployments) {
        const pod = d.spec.template.spec;
        expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 10001 });
        for (const c of pod.containers) {
          expect(c.image).toBe(`tend:${version}`);
          expect(c.securityContext).toEqual({
            allowPrivilegeEscalation: false,
            readOnlyRootFilesystem: true,
            capabilities: { drop: ['ALL'] },
          });
          expect(c.resources.requests).toEqual({ cpu: expect.any(String), memory: expect.any(String) });
          expect(c.resources.limits).toEqual({ cpu: expect.any(String), memory: expect.any(String) });
          // A read-only root: what tend writes goes to mounted volumes.
          expect(c.volumeMounts.map((m: { mountPath: string }) => m.mountPath).sort()).toEqual(
            expect.arrayContaining(['/tmp', '/var/lib/tend']),
          );
          // The server's probes on its API port; the agent's on its --health-port.
          const port = d.metadata.name === 'tend-server' ? 'http' : 'health';
          expect(c.readinessProbe.httpGet).toEqual({ path: '/readyz', port });
          expect(c.livenessProbe.httpGet).toEqual({ path: '/healthz', port });
          if (port === 'health') {
            const args = c.args as string[];
            const containerPort = c.ports.find((p: { name: string }) => p.name === 'health').containerPort;
            expect(args[args.indexOf('--health-port') + 1]).toBe(String(containerPort));
          }
        }
      }
      // Each component's pods have a NetworkPolicy restricting both directions.
      for (const d of deployments) {
        const selecting = kindOf(objects, 'NetworkPolicy').filter(
          (p) => JSON.stringify(p.spec.podSelector) === JSON.stringify(d.spec.selector),
        );
        expect(selecting.map((p) => p.spec.policyTypes)).toEqual([['Ingress', 'Egress']]);
      }
      for (const o of objects) {
        if (clusterScoped.has(o.kind!)) expect(o.metadata.namespace, o.kind).toBeUndefined();
        else expect(o.metadata.namespace, `${o.kind}/${o.metadata.name}`).toBe(systemNamespace);
      }
    },
  );

  it.each(bases)(
    '%s applies to a cluster with kubectl apply --server-side (a dry run first)',
    async (dir) => {
      const { yaml, objects } = await render(dir);
      const apply = (input: string, ...flags: string[]) =>
        kubectl(['apply', '--server-side', '--field-manager=tend-test', ...flags, '-f', '-'], { input });
      const present = () =>
        objects
          .filter((o) =>
            handle.sim.store.get(storeKey[o.kind!]!, o.metadata.namespace ?? '', o.metadata.name!),
          )
          .map((o) => `${o.kind}/${o.metadata.name}`);
      // A server-side dry run checks objects in a namespace that exists: the namespace comes first,
      // as on a real cluster (a dry-run Namespace is not created).
      const namespace = kindOf(objects, 'Namespace');
      expect(namespace.map((n) => n.metadata.name)).toEqual([systemNamespace]);
      const created = await apply(JSON.stringify(namespace[0]));
      expect(created.code, created.stderr).toBe(0);
      const before = present();
      const dry = await apply(yaml, '--dry-run=server');
      expect(dry.code, dry.stderr).toBe(0);
      expect(dry.stdout).toMatch(/serverside-applied \(server dry run\)/);
      expect(present()).toEqual(before);
      const applied = await apply(yaml);
      expect(applied.code, applied.stderr).toBe(0);
      expect(present()).toHaveLength(objects.length);
      const again = await apply(yaml);
      expect(again.code, again.stderr).toBe(0);
    },
  );

  it('lets the server be reached on its port only, and each component reach only what it uses', async () => {
    type Port = { port: number | string; protocol: string };
    type Peer = { podSelector?: { matchLabels: Record<string, string> } };
    const policy = async (dir: string) =>
      kindOf((await render(dir)).objects, 'NetworkPolicy')[0]!.spec as {
        ingress?: { ports: Port[] }[];
        egress: { to?: Peer[]; ports: Port[] }[];
      };
    const egressPorts = (p: Awaited<ReturnType<typeof policy>>) =>
      p.egress.flatMap((rule) => rule.ports.map((x) => `${x.port}/${x.protocol}`)).sort();
    const server = await policy('server');
    expect(server.ingress).toEqual([{ ports: [{ port: 'http', protocol: 'TCP' }] }]);
    // DNS; HTTPS for the OpenID provider and webhooks.
    expect(egressPorts(server)).toEqual(['443/TCP', '53/TCP', '53/UDP']);
    expect(egressPorts(await policy('overlays/postgres'))).toEqual([
      '443/TCP',
      '53/TCP',
      '53/UDP',
      '5432/TCP',
    ]);
    expect(egressPorts(await policy('overlays/embedded-executor'))).toEqual([
      '443/TCP',
      '53/TCP',
      '53/UDP',
      '6443/TCP',
    ]);
    const agent = await policy('agent');
    expect(agent.ingress).toEqual([{ ports: [{ port: 'health', protocol: 'TCP' }] }]);
    const toServer = agent.egress.find((rule) => rule.ports.some((x) => x.port === 7420))!;
    expect(toServer.to).toEqual([
      {
        podSelector: {
          matchLabels: { 'app.kubernetes.io/name': 'tend', 'app.kubernetes.io/component': 'server' },
        },
      },
    ]);
    expect(egressPorts(agent)).toEqual(['443/TCP', '53/TCP', '53/UDP', '6443/TCP', '7420/TCP']);
  });

  type Rule = { apiGroups: string[]; resources: string[]; verbs: string[] };
  const clusterRules = (objects: KObject[]) => kindOf(objects, 'ClusterRole')[0]!.rules as Rule[];
  /** The agent's ClusterRole rules with a component of deploy/components added. */
  const agentRulesWith = async (component: string): Promise<Rule[]> => {
    const dir = mkdtempSync(path.join(os.tmpdir(), `tend-${component}-`));
    try {
      writeFileSync(
        path.join(dir, 'kustomization.yaml'),
        `resources: [${path.relative(dir, path.join(repoRoot, 'deploy', 'agent'))}]\n` +
          `components: [${path.relative(dir, path.join(repoRoot, 'deploy', 'components', component))}]\n`,
      );
      const run = await kubectl(['kustomize', dir]);
      expect(run.code, run.stderr).toBe(0);
      return clusterRules(parseAllDocuments(run.stdout).map((d) => d.toJSON() as KObject));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };

  it('reads Secrets only with the archive-secrets component, which adds that one grant', async () => {
    const base = clusterRules((await render('agent')).objects);
    expect(base.flatMap((r) => r.resources)).not.toContain('secrets');
    expect(await agentRulesWith('archive-secrets')).toEqual([
      ...base,
      { apiGroups: [''], resources: ['secrets'], verbs: ['list'] },
    ]);
  });

  it('creates namespaces only with the restore component, which adds create and patch of the archived kinds', async () => {
    const base = clusterRules((await render('agent')).objects);
    expect(base.filter((r) => r.verbs.includes('create'))).toEqual([]);
    const withRestore = await agentRulesWith('restore');
    expect(withRestore.slice(0, base.length)).toEqual(base);
    const added = withRestore.slice(base.length);
    expect(added[0]).toEqual({ apiGroups: [''], resources: ['namespaces'], verbs: ['create'] });
    // Every kind the archive lists (the base role's list-only rules) can be re-created.
    const archived = base.filter(
      (r) =>
        r.verbs.join() === 'list' &&
        !r.resources.some((k) => k === 'pods' || k === 'horizontalpodautoscalers'),
    );
    for (const rule of archived) {
      for (const resource of rule.resources) {
        const creatable = added.some(
          (r) =>
            r.apiGroups.includes(rule.apiGroups[0]!) &&
            r.resources.includes(resource) &&
            r.verbs.includes('create'),
        );
        expect(creatable, resource).toBe(true);
      }
    }
    // Nothing deleted beyond the one path.
    expect(added.flatMap((r) => r.verbs)).not.toContain('delete');
  });

  it('starts the pods once the Secrets they reference exist', async () => {
    const pods = (component: string) =>
      handle.sim.store
        .list('pods', systemNamespace)
        .filter((p) => p.metadata.labels?.['app.kubernetes.io/component'] === component);
    const waiting = (component: string) =>
      pods(component).map(
        (p) => p.status?.containerStatuses?.[0]?.state?.waiting?.message as string | undefined,
      );
    // The PostgreSQL overlay was applied last for the server: its URL's Secret is missing.
    await waitFor(
      () => waiting('server').some((m) => m === 'secret "tend-database" not found'),
      'the server to wait for its database URL',
    );
    await waitFor(
      () => waiting('agent').some((m) => m?.includes('secret "tend-agent-token" not found')),
      'the agent to wait for its token',
    );
    await kubectl([
      '-n',
      systemNamespace,
      'create',
      'secret',
      'generic',
      'tend-database',
      '--from-literal=url=postgres://tend@db/tend',
    ]);
    await kubectl([
      '-n',
      systemNamespace,
      'create',
      'secret',
      'generic',
      'tend-agent-token',
      '--from-literal=token=tend_x',
    ]);
    await waitFor(() => pods('server').some((p) => p.status?.phase === 'Running'), 'the server pod to run');
    await waitFor(() => pods('agent').some((p) => p.status?.phase === 'Running'), 'the agent pod to run');
  });
});

describe('the sign-in overlay', () => {
  it('takes the OpenID provider from the Secret tend-oidc and the roles from a ConfigMap that checks', async () => {
    const { objects } = await render('overlays/oidc');
    const server = kindOf(objects, 'Deployment')[0]!;
    const container = server.spec.template.spec.containers[0];
    const args = container.args as string[];
    const flag = (name: string) => args[args.indexOf(name) + 1];
    expect(flag('--oidc-issuer')).toBe('$(TEND_OIDC_ISSUER)');
    expect(flag('--oidc-client-id')).toBe('$(TEND_OIDC_CLIENT_ID)');
    expect(flag('--public-url')).toBe('$(TEND_PUBLIC_URL)');
    expect(flag('--oidc-client-secret-file')).toBe('/etc/tend/oidc/client-secret');
    expect(flag('--roles-file')).toBe('/etc/tend/roles/roles.yaml');
    // Every $(…) of the arguments is a variable from the Secret: Kubernetes substitutes only those.
    const fromSecret = Object.fromEntries(
      (container.env as { name: string; valueFrom?: { secretKeyRef?: { name: string; key: string } } }[])
        .filter((e) => e.valueFrom?.secretKeyRef)
        .map((e) => [e.name, e.valueFrom!.secretKeyRef]),
    );
    for (const variable of args.flatMap((a) => /^\$\((\w+)\)$/.exec(a)?.[1] ?? [])) {
      expect(fromSecret[variable], variable).toMatchObject({ name: 'tend-oidc' });
    }
    // The client secret is a file, never an environment variable or an argument.
    expect(JSON.stringify(container.env)).not.toContain('client-secret');
    const volumes = server.spec.template.spec.volumes as {
      name: string;
      secret?: object;
      configMap?: object;
    }[];
    expect(volumes.find((v) => v.name === 'oidc')?.secret).toMatchObject({ secretName: 'tend-oidc' });
    expect(volumes.find((v) => v.name === 'roles')?.configMap).toEqual({ name: 'tend-roles' });
    // The roles file shipped as an example is one the server accepts.
    const roles = kindOf(objects, 'ConfigMap').find((c) => c.metadata.name === 'tend-roles')!;
    const file = path.join(scratch, 'roles.yaml');
    writeFileSync(file, (roles['data'] as Record<string, string>)['roles.yaml']!);
    expect(readRolesFile(file).rolesOf({ email: null, groups: ['shop-developers'] })).toEqual(
      new Map([['shop', 'developer']]),
    );
  });

  it('applies, and its server starts once the Secret tend-oidc exists', async () => {
    // A namespace of its own, so the Deployment of the other overlays stays as they left it.
    const { yaml } = await render('overlays/oidc');
    const moved = yaml
      .replace(/^(\s*namespace: )tend-system$/gm, '$1tend-sign-in')
      .replace(/^(\s*name: )tend-system$/m, '$1tend-sign-in');
    const applied = await kubectl(['apply', '--server-side', '--field-manager=tend-test', '-f', '-'], {
      input: moved,
    });
    expect(applied.code, applied.stderr).toBe(0);
    const pods = () =>
      handle.sim.store
        .list('pods', 'tend-sign-in')
        .filter((p) => p.metadata.labels?.['app.kubernetes.io/component'] === 'server');
    await waitFor(
      () =>
        pods().some((p) =>
          p.status?.containerStatuses?.[0]?.state?.waiting?.message?.includes('secret "tend-oidc" not found'),
        ),
      'the server to wait for the Secret tend-oidc',
    );
    const created = await kubectl([
      '-n',
      'tend-sign-in',
      'create',
      'secret',
      'generic',
      'tend-oidc',
      '--from-literal=issuer=https://login.example.com/realms/platform',
      '--from-literal=client-id=tend',
      '--from-literal=client-secret=s3cret',
      '--from-literal=public-url=https://tend.example.com',
    ]);
    expect(created.code, created.stderr).toBe(0);
    await waitFor(() => pods().some((p) => p.status?.phase === 'Running'), 'the server pod to run');
  });
});

describe("the agent's ServiceAccount", () => {
  // On their own too (`-t`): the agent base and the embedded-executor overlay, applied.
  beforeAll(async () => {
    for (const dir of ['agent', 'overlays/embedded-executor']) {
      const { yaml } = await render(dir);
      const applied = await kubectl(['apply', '--server-side', '--field-manager=tend-test', '-f', '-'], {
        input: yaml,
      });
      expect(applied.code, applied.stderr).toBe(0);
    }
  });

  it('does the agent’s job and nothing more: its calls are exactly what its ClusterRole grants', async () => {
    const { objects } = await render('agent');
    const role = kindOf(objects, 'ClusterRole')[0]!;
    const kubeconfig = await serviceAccountKubeconfig('tend-agent');
    const user = `system:serviceaccount:${systemNamespace}:tend-agent`;
    const mark = handle.sim.requests.latest();

    // Pause and resume, as the executor's plugin handler does them with these credentials.
    const cleanup = kubernetesPlugin.cleanup!;
    const { ctx } = callContext(clusterSettings(kubeconfig));
    const [target] = await cleanup.targets(ctx);
    const ns = seedNamespace(handle.sim, 'rbac-shop');
    const labels = { 'app.kubernetes.io/managed-by': 'tend' };
    const template = {
      metadata: { labels: { app: 'api' } },
      spec: { containers: [{ name: 'api', image: 'api:1' }] },
    };
    handle.sim.store.create('deployments.apps', 'rbac-shop', {
      metadata: { name: 'api', labels },
      spec: { replicas: 2, selector: { matchLabels: { app: 'api' } }, template },
    });
    handle.sim.store.create('statefulsets.apps', 'rbac-shop', {
      metadata: { name: 'db', labels },
      spec: { replicas: 1, selector: { matchLabels: { app: 'api' } }, template },
    });
    handle.sim.store.create('cronjobs.batch', 'rbac-shop', {
      metadata: { name: 'report', labels },
      spec: {
        schedule: '0 3 * * *',
        jobTemplate: {
          spec: { template: { spec: { restartPolicy: 'Never', containers: [{ name: 'r', image: 'r:1' }] } } },
        },
      },
    });
    const paused = await cleanup.verifyAndClean(ctx, target!, jobFor(handle.sim, ns, { action: 'pause' }));
    expect(paused).toEqual({
      outcome: 'done',
      message: expect.stringMatching(/^paused namespace rbac-shop: Deployment api 2 → 0/),
    });
    expect(handle.sim.store.get('deployments.apps', 'rbac-shop', 'api')!.spec.replicas).toBe(0);
    const resumed = await cleanup.verifyAndClean(ctx, target!, jobFor(handle.sim, ns, { action: 'resume' }));
    expect(resumed.outcome).toBe('done');
    expect(handle.sim.store.get('deployments.apps', 'rbac-shop', 'api')!.spec.replicas).toBe(2);

    // tend agent itself: inventory, then the due environment's namespace deleted.
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
        'rbac',
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
      expect(
        (JSON.parse(second.stdout) as { last: { jobs: { outcome: string }[] } }).last.jobs.map(
          (j) => j.outcome,
        ),
      ).toEqual(['done']);
      await waitFor(() => !handle.sim.store.get('namespaces', '', due!.name), 'the namespace to be gone');
    } finally {
      await server.close();
    }

    // What it may not do.
    const secrets = await kubectl(['get', 'secrets', '-A'], { kubeconfig });
    expect(secrets.code).not.toBe(0);
    expect(secrets.stderr).toContain(
      `User "${user}" cannot list resource "secrets" in API group "" at the cluster scope`,
    );
    const deletion = await kubectl(['-n', 'rbac-shop', 'delete', 'deployment', 'api'], { kubeconfig });
    expect(deletion.code).not.toBe(0);
    expect(deletion.stderr).toContain(
      `User "${user}" cannot delete resource "deployments" in API group "apps"`,
    );
    expect(handle.sim.store.get('deployments.apps', 'rbac-shop', 'api')).toBeDefined();

    // Exactly what the ClusterRole grants: every grant used, nothing refused on the way.
    const calls = handle.sim.requests.list({ since: mark }).filter((r) => r.user === user && r.resource);
    const expectedRefusals = (r: { verb: string; resource?: string }) =>
      r.resource === 'secrets' || (r.verb === 'delete' && r.resource === 'deployments.apps');
    const refused = calls.filter((r) => r.status === 403 && !expectedRefusals(r));
    expect(refused).toEqual([]);
    const used = [
      ...new Set(calls.filter((r) => r.status !== 403).map((r) => `${r.verb} ${r.resource}`)),
    ].sort();
    expect(used).toEqual(granted(role));
  }, 180_000);

  it('serves the cluster from tend server with the embedded-executor overlay’s ServiceAccount', async () => {
    const { objects } = await render('overlays/embedded-executor');
    const args = kindOf(objects, 'Deployment')[0]!.spec.template.spec.containers[0].args as string[];
    expect(args).toContain('--context=inClusterContext');
    // The in-cluster context's name, with the server's ServiceAccount token, as Kubernetes mounts it.
    const kubeconfig = await serviceAccountKubeconfig('tend-server', 'inClusterContext');
    const user = `system:serviceaccount:${systemNamespace}:tend-server`;
    const mark = handle.sim.requests.latest();
    const port = await freePort();
    const server = startTend(
      [
        ...args,
        '--port',
        String(port),
        '--host',
        '127.0.0.1',
        '--kubeconfig',
        kubeconfig,
        '--cleanup-interval',
        '1s',
      ],
      { env: { TEND_DATA_DIR: path.join(scratch, 'embedded-data'), HOME: scratch } },
    );
    try {
      await server.waitForOutput(/tend server listening/, 'the server to listen');
      await waitFor(
        () =>
          handle.sim.requests
            .list({ since: mark })
            .some(
              (r) => r.user === user && r.verb === 'list' && r.resource === 'namespaces' && r.status === 200,
            ),
        'the embedded executor to list the namespaces with its ServiceAccount',
        30_000,
      );
      expect(
        handle.sim.requests.list({ since: mark }).filter((r) => r.user === user && r.status === 403),
      ).toEqual([]);
    } finally {
      server.signal('SIGTERM');
      await server.exited;
    }
  }, 120_000);
});
