/**
 * Garden's `container` Deploy: the Deployment, Service and Ingresses Garden makes, applied into
 * kube-sim through the kubernetes Deploy path. Garden's examples that use it (copied unmodified
 * into test/fixtures/garden-examples) validate, deploy with `--kubeconfig/--context` and pass their
 * Tests and Runs; a small project of its own covers the keys the examples leave out.
 */

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateCommand } from '../../../src/commands/validate.js';
import type { TendError } from '../../../src/errors.js';
import { copyGardenExample, makeProject, removeProjects, runTend } from '../../helpers/project.js';
import { execute, kubectl, kubectlJson, gardenDatabaseWait, startSim, type SimHandle } from './helpers.js';

let h: SimHandle;
beforeAll(async () => {
  // Garden's local-kubernetes projects name no registry: kube-sim advertises its own, as kind does.
  h = await startSim({ advertiseRegistry: true, podRules: [gardenDatabaseWait] });
});
afterAll(async () => h?.stop());

afterAll(removeProjects);

interface Container {
  name: string;
  image: string;
  args?: string[];
  command?: string[];
  env?: { name: string; value?: string; valueFrom?: Record<string, unknown> }[];
  ports?: { name: string; containerPort: number; protocol: string }[];
  readinessProbe?: Record<string, unknown>;
  livenessProbe?: Record<string, unknown>;
  resources?: Record<string, Record<string, string>>;
  volumeMounts?: { name: string; mountPath: string }[];
}
interface Workload {
  kind: string;
  metadata: { name: string; labels: Record<string, string> };
  spec: {
    replicas?: number;
    selector: { matchLabels: Record<string, string> };
    template: {
      metadata: { annotations?: Record<string, string> };
      spec: { containers: Container[]; volumes?: unknown[] };
    };
  };
}
interface Service {
  metadata: { name: string; annotations?: Record<string, string> };
  spec: {
    type: string;
    selector: Record<string, string>;
    ports: { name: string; port: number; targetPort: number; nodePort?: number }[];
  };
}
interface Ingress {
  metadata: { name: string };
  spec: {
    ingressClassName?: string;
    rules: {
      host?: string;
      http: {
        paths: {
          path: string;
          pathType: string;
          backend: { service: { name: string; port: { number: number } } };
        }[];
      };
    }[];
  };
}

async function items<T>(namespace: string, kind: string): Promise<T[]> {
  return (await kubectlJson<{ items: T[] }>(h.kubeconfig, '-n', namespace, 'get', kind)).items;
}

/** `host path → service:port` of each Ingress, by name. */
async function ingressRoutes(namespace: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const ingress of await items<Ingress>(namespace, 'ingresses')) {
    const rule = ingress.spec.rules[0]!;
    const route = rule.http.paths[0]!;
    out[ingress.metadata.name] =
      `${rule.host ?? '*'}${route.path} → ${route.backend.service.name}:${route.backend.service.port.number}`;
  }
  return out;
}

async function namespaceOf(root: string): Promise<string> {
  return (await validateCommand({ root, var: [] })).data.namespace;
}

const cluster = () => ['--kubeconfig', h.kubeconfig, '--context', 'kube-sim'];

/** `tend <verb>` in the project's directory through the CLI, every action ready or cached. */
async function cli(root: string, verb: string, ...names: string[]): Promise<string[]> {
  const run = await runTend([verb, ...names, ...cluster(), '--json'], { cwd: root, timeoutMs: 120_000 });
  expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(0);
  const { actions } = JSON.parse(run.stdout) as { actions: { ref: string; state: string }[] };
  for (const action of actions) expect(['ready', 'cached'], action.ref).toContain(action.state);
  return actions.map((a) => a.ref).sort();
}

describe("Garden's examples with container Deploys", () => {
  it('vote: validates, deploys its seven Deploys as Deployments, Services and Ingresses, and its Tests and Runs pass', async () => {
    const root = copyGardenExample('vote');
    const validated = await runTend(['validate'], { cwd: root });
    expect(validated.code, validated.stderr).toBe(0);
    expect(validated.stdout).toContain('configuration valid: 16 actions');
    expect(validated.stdout).toContain(
      'note: vote/garden.yml:17:3: sync: sync mode, local mode and hot reload that tend accepts and ignores',
    );
    const namespace = await namespaceOf(root);

    expect(await cli(root, 'deploy')).toEqual([
      'build.api',
      'build.result',
      'build.vote',
      'build.worker',
      'deploy.api',
      'deploy.db',
      'deploy.redis',
      'deploy.result',
      'deploy.vote',
      'deploy.worker',
      'run.db-init',
    ]);
    const workloads = await items<Workload>(namespace, 'deployments');
    expect(workloads.map((d) => `${d.metadata.name}:${d.spec.replicas}`)).toEqual([
      'api:1',
      'db:1',
      'redis:1',
      'result:1',
      'vote:1',
      'worker:1',
    ]);
    const byName = Object.fromEntries(workloads.map((d) => [d.metadata.name, d]));
    const api = byName.api!;
    expect(api.metadata.labels['garden.io/action']).toBe('deploy.api');
    expect(api.spec.selector.matchLabels).toEqual({ 'garden.io/action': 'deploy.api' });
    const apiContainer = api.spec.template.spec.containers[0]!;
    // The build's image, as `${actions.build.api.outputs.deploymentImageId}` names it.
    expect(apiContainer.image).toBe(
      `${h.sim.registryHost}/${namespace}/api:${apiContainer.image.split(':').pop()}`,
    );
    expect(apiContainer.args).toEqual(['python', 'app.py']);
    expect(apiContainer.ports).toEqual([{ name: 'http', containerPort: 80, protocol: 'TCP' }]);
    expect(apiContainer.readinessProbe).toEqual({
      httpGet: { path: '/api', port: 80 },
      initialDelaySeconds: 2,
      periodSeconds: 1,
      timeoutSeconds: 3,
      successThreshold: 2,
      failureThreshold: 90,
    });
    expect(apiContainer.livenessProbe).toMatchObject({
      httpGet: { path: '/api', port: 80 },
      periodSeconds: 5,
    });
    expect(apiContainer.resources).toEqual({
      requests: { cpu: '10m', memory: '90Mi' },
      limits: { cpu: '1', memory: '1Gi' },
    });

    const db = byName.db!.spec.template.spec;
    expect(db.containers[0]!.image).toBe('postgres:11.7-alpine');
    expect(db.containers[0]!.readinessProbe).toMatchObject({
      exec: { command: ['psql', '-w', '-U', 'postgres', '-d', 'postgres', '-c', 'SELECT 1'] },
    });
    expect(db.volumes).toEqual([{ name: 'data', emptyDir: {} }]);
    expect(db.containers[0]!.volumeMounts).toEqual([{ name: 'data', mountPath: '/db-data' }]);
    expect(db.containers[0]!.env?.slice(0, 3)).toEqual([
      { name: 'POSTGRES_DATABASE', value: 'postgres' },
      { name: 'POSTGRES_USERNAME', value: 'postgres' },
      { name: 'POSTGRES_PASSWORD', value: 'test-password' },
    ]);
    expect(db.containers[0]!.env?.map((e) => e.name)).toContain('POD_NAMESPACE');

    // The worker has no ports: no Service.
    const services = await items<Service>(namespace, 'services');
    expect(
      services.map(
        (s) => `${s.metadata.name} ${s.spec.type} ${s.spec.ports.map((p) => `${p.port}→${p.targetPort}`)}`,
      ),
    ).toEqual([
      'api ClusterIP 80→80',
      'db ClusterIP 5432→5432',
      'redis ClusterIP 6379→6379',
      'result ClusterIP 80→80',
      'vote ClusterIP 8080→8080',
    ]);
    expect(services[0]!.spec.selector).toEqual({ 'garden.io/action': 'deploy.api' });
    expect(await ingressRoutes(namespace)).toEqual({
      'api-0': 'api.vote.local.demo.garden/ → api:80',
      'result-0': 'result.vote.local.demo.garden/ → result:80',
      'vote-0': 'vote.vote.local.demo.garden/ → vote:8080',
    });

    expect(await cli(root, 'test')).toContain('test.api-integ');
    expect(await cli(root, 'run', 'db-clear')).toContain('run.db-clear');
    // Deployed once: the next deploy finds every Deploy ready.
    const again = await runTend(['status', ...cluster(), '--json'], { cwd: root, timeoutMs: 60_000 });
    expect(again.code, again.stderr).toBe(0);
    const status = JSON.parse(again.stdout) as { actions: { ref: string; state: string }[] };
    expect(status.actions.filter((a) => a.ref.startsWith('deploy.')).map((a) => a.state)).toEqual(
      Array(6).fill('ready'),
    );
  }, 180_000);

  it.each([
    // [example, the provider's host of ingresses without one: local-tls sets defaultHostname,
    // remote-k8s's local-kubernetes gets Garden's default, <project>.local.demo.garden]
    ['local-tls', 'garden.dev'],
    ['remote-k8s', 'remote-k8s.local.demo.garden'],
  ])(
    '%s: both services deploy with their ingresses, and the node service tests pass',
    async (name, host) => {
      const root = copyGardenExample(name);
      const namespace = await namespaceOf(root);
      expect(await cli(root, 'deploy')).toEqual([
        'build.go-service',
        'build.node-service',
        'deploy.go-service',
        'deploy.node-service',
      ]);
      expect(await ingressRoutes(namespace)).toEqual({
        'go-service-0': `${host}/ → go-service:80`,
        'node-service-0': `${host}/hello → node-service:8080`,
        'node-service-1': `${host}/call-go-service → node-service:8080`,
      });
      const node = (await items<Workload>(namespace, 'deployments')).find(
        (d) => d.metadata.name === 'node-service',
      )!;
      expect(node.spec.template.spec.containers[0]!.args).toEqual(['npm', 'start']);
      expect(await cli(root, 'test')).toEqual(
        expect.arrayContaining(['test.node-service-integ', 'test.node-service-unit']),
      );
    },
    120_000,
  );

  it.each([
    ['code-synchronization', 'node-service', { httpGet: { path: '/_ah/health', port: 8080 } }],
    ['gatsby-code-sync', 'website', undefined],
    ['rust', 'backend', { httpGet: { path: '/', port: 3000 } }],
  ])(
    '%s: the sync-mode example deploys as it is (sync ignored)',
    async (name, deploy, probe) => {
      const root = copyGardenExample(name);
      const namespace = await namespaceOf(root);
      expect(await cli(root, 'deploy')).toEqual([`build.${deploy}`, `deploy.${deploy}`]);
      const [workload] = await items<Workload>(namespace, 'deployments');
      expect(workload!.metadata.name).toBe(deploy);
      const container = workload!.spec.template.spec.containers[0]!;
      if (probe) expect(container.readinessProbe).toMatchObject(probe);
      else expect(container.readinessProbe).toBeUndefined();
      expect(Object.keys(await ingressRoutes(namespace))).toEqual([`${deploy}-0`]);
    },
    120_000,
  );

  it('modules-to-actions: the 0.12 module and the actions deploy alike, and their tests pass', async () => {
    const root = copyGardenExample('modules-to-actions');
    const namespace = await namespaceOf(root);
    expect(await cli(root, 'deploy')).toEqual(['build.a', 'build.b', 'deploy.a', 'deploy.b']);
    expect((await items<Workload>(namespace, 'deployments')).map((d) => d.metadata.name)).toEqual(['a', 'b']);
    expect(await cli(root, 'test')).toEqual(expect.arrayContaining(['test.a-unit', 'test.b-unit']));
  }, 120_000);
});

describe('a container Deploy', () => {
  const project = (namespace: string, deploySpec: string) =>
    makeProject({
      'project.garden.yml': `apiVersion: garden.io/v2
kind: Project
name: ${namespace}
environments: [{ name: dev, defaultNamespace: ${namespace} }]
providers:
  - name: local-kubernetes
    namespace: \${environment.namespace}
    defaultHostname: apps.example.test
    ingressClass: nginx
`,
      'garden.yml': `kind: Deploy
type: container
name: web
spec:
${deploySpec}`,
    });

  it("sets Garden's replicas, resources, probes, env, annotations and node ports, and its outputs", async () => {
    const root = project(
      'container-keys',
      `  image: nginx:1.27
  command: [nginx]
  args: [-g, daemon off;]
  replicas: 2
  cpu: { min: 250, max: 1500 }
  memory: { min: 128, max: 512 }
  limits: { memory: 2048 }
  env:
    PORT: 8080
    DEBUG: true
    TOKEN: { secretRef: { name: web-secrets, key: token } }
  annotations: { team: web }
  ports:
    - { name: http, containerPort: 8080, servicePort: 80, nodePort: 30080 }
    - { name: admin, containerPort: 9000 }
  healthCheck:
    tcpPort: admin
    readinessTimeoutSeconds: 7
  ingresses:
    - { path: /api, port: http }
    - { path: /admin, port: admin, hostname: admin.example.test, annotations: { a: b } }
`,
    );
    // The Secret the env refers to, made by someone else (tend adopts the namespace).
    await kubectl(h.kubeconfig, 'create', 'namespace', 'container-keys');
    await kubectl(
      h.kubeconfig,
      '-n',
      'container-keys',
      'create',
      'secret',
      'generic',
      'web-secrets',
      '--from-literal=token=t',
    );
    const deployed = await execute('deploy', root);
    expect(deployed.data.actions.map((a) => [a.ref, a.state, a.error?.message])).toEqual([
      ['deploy.web', 'ready', undefined],
    ]);
    const [workload] = await items<Workload>('container-keys', 'deployments');
    expect(workload!.spec.replicas).toBe(2);
    expect(workload!.spec.template.metadata.annotations).toEqual({
      'kubectl.kubernetes.io/default-container': 'web',
      team: 'web',
    });
    const container = workload!.spec.template.spec.containers[0]!;
    expect([container.command, container.args]).toEqual([['nginx'], ['-g', 'daemon off;']]);
    expect(container.resources).toEqual({
      requests: { cpu: '250m', memory: '128Mi' },
      limits: { cpu: '1500m', memory: '2Gi' },
    });
    expect(container.readinessProbe).toMatchObject({ tcpSocket: { port: 9000 }, timeoutSeconds: 7 });
    expect(container.livenessProbe).toMatchObject({ tcpSocket: { port: 9000 }, timeoutSeconds: 3 });
    expect(container.env?.slice(0, 3)).toEqual([
      { name: 'PORT', value: '8080' },
      { name: 'DEBUG', value: 'true' },
      { name: 'TOKEN', valueFrom: { secretKeyRef: { name: 'web-secrets', key: 'token' } } },
    ]);
    const [service] = await items<Service>('container-keys', 'services');
    expect(service!.spec.type).toBe('NodePort');
    expect(service!.metadata.annotations).toEqual(expect.objectContaining({ team: 'web' }));
    expect(service!.spec.ports.map((p) => [p.name, p.port, p.targetPort, p.nodePort])).toEqual([
      ['http', 80, 8080, 30080],
      ['admin', 9000, 9000, undefined],
    ]);
    expect(await ingressRoutes('container-keys')).toEqual({
      'web-0': 'apps.example.test/api → web:80',
      'web-1': 'admin.example.test/admin → web:9000',
    });
    const ingresses = await items<Ingress>('container-keys', 'ingresses');
    expect(ingresses.map((i) => i.spec.ingressClassName)).toEqual(['nginx', 'nginx']);
    expect(deployed.data.actions[0]!.outputs).toEqual({
      namespace: 'container-keys',
      deployedImageId: 'nginx:1.27',
    });
  });

  it('a daemon is a DaemonSet, no Service without ports, and tend logs reads its pods', async () => {
    const root = project('container-daemon', '  image: fluentd:v1\n  daemon: true\n');
    await execute('deploy', root);
    const daemons = await items<Workload>('container-daemon', 'daemonsets');
    expect(daemons.map((d) => d.metadata.name)).toEqual(['web']);
    expect(daemons[0]!.spec.replicas).toBeUndefined();
    expect(await items('container-daemon', 'services')).toEqual([]);
    // tend logs reads the pods of the generated workload.
    const logs = await runTend(['logs', 'web', ...cluster()], { cwd: root, timeoutMs: 60_000 });
    expect(logs.code, logs.stderr).toBe(0);
    expect(logs.stdout).toContain('kube-sim: container web started (image fluentd:v1)');
  });

  it('a volume with both hostPath and action, and a port name that is not a port, are refused with file and line', async () => {
    const root = project(
      'container-refused',
      `  image: nginx
  volumes:
    - { name: data, containerPath: /data, hostPath: ./data, action: deploy.data }
  ports: [{ name: http, containerPort: 80 }]
`,
    );
    let error: TendError | undefined;
    await validateCommand({ root, var: [] }).catch((e: unknown) => (error = e as TendError));
    const { errors } = error!.detail as {
      errors: { message: string; location: { file: string; line: number } }[];
    };
    expect(errors.map((e) => `${e.location.file}:${e.location.line} ${e.message}`)).toEqual([
      expect.stringMatching(/^garden\.yml:7 a volume has hostPath or action, not both/),
    ]);

    const badPort = project(
      'container-bad-port',
      '  image: nginx\n  ports: [{ name: http, containerPort: 80 }]\n  ingresses: [{ path: /, port: web }]\n',
    );
    const deployed = await execute('deploy', badPort);
    expect(deployed.data.actions[0]!.error?.message).toBe(
      'deploy.web: ingresses[0]: port "web" is not one of spec.ports (http)',
    );
  });
});
