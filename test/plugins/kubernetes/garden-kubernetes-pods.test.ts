/**
 * Garden 0.12 `kubernetes` modules' tasks and tests, converted as Garden 0.13 converts them:
 * kubernetes-pod Runs and Tests whose pod is the workload of their `resource` (else the module's
 * `serviceResource`) as the module's files and manifests have it. A kubernetes-pod with manifests
 * of its own finds its workload there too, without the workload being deployed (as in Garden).
 * A container Run's env may read a Secret's key, as a container Deploy's does.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateCommand } from '../../../src/commands/validate.js';
import { makeProject, removeProjects } from '../../helpers/project.js';
import { execute, kubectl, logMessages, startSim, type SimHandle } from './helpers.js';

let h: SimHandle;
beforeAll(async () => {
  // A container whose command names `show-pod` logs what it runs as: its image, env and mounts.
  h = await startSim({
    podRules: [
      {
        command: /show-env/,
        behaviour: (container, pod) => {
          const spec = pod.spec as { containers: { name: string; env?: { name: string }[] }[] };
          const env = spec.containers.find((c) => c.name === container.name)!.env ?? [];
          return {
            exitCode: 0,
            runMs: 0,
            logs: [`env ${JSON.stringify(env.filter((e) => !e.name.startsWith('TEND_')))}`],
          };
        },
      },
      {
        command: /show-pod/,
        behaviour: (container, pod) => {
          const spec = pod.spec as {
            containers: { name: string; env?: { name: string }[]; volumeMounts?: unknown[] }[];
          };
          const own = spec.containers.find((c) => c.name === container.name)!;
          const env = (own.env ?? []).map((e) => e.name).filter((n) => !n.startsWith('TEND_'));
          return {
            exitCode: 0,
            runMs: 0,
            logs: [`pod ${container.image} ${env.join(',')} ${JSON.stringify(own.volumeMounts ?? [])}`],
          };
        },
      },
    ],
  });
});
afterAll(async () => {
  await h?.stop();
  removeProjects();
});

const shown = (root: string, sessionId: string) =>
  logMessages(root, sessionId).filter((m) => m.startsWith('pod '));

const deployment = (name: string, image: string) => `apiVersion: apps/v1
kind: Deployment
metadata: { name: ${name} }
spec:
  selector: { matchLabels: { app: ${name} } }
  template:
    metadata: { labels: { app: ${name} } }
    spec:
      containers:
        - name: main
          image: ${image}
          env: [{ name: FROM_MANIFEST, value: "yes" }]
          volumeMounts: [{ name: cache, mountPath: /cache }]
      volumes: [{ name: cache, emptyDir: {} }]
`;

describe('a 0.12 kubernetes module with tasks and tests', () => {
  const root = makeProject({
    'project.garden.yml': `kind: Project
name: k8s-module-tasks
environments: [{ name: dev, defaultNamespace: k8s-module-tasks }]
providers: [{ name: local-kubernetes, namespace: "\${environment.namespace}" }]
variables: { tag: "1.2" }
`,
    'api/garden.yml': `kind: Module
type: kubernetes
name: api
files: [api.yaml]
manifests:
  - apiVersion: apps/v1
    kind: Deployment
    metadata: { name: worker }
    spec:
      selector: { matchLabels: { app: worker } }
      template:
        metadata: { labels: { app: worker } }
        spec: { containers: [{ name: main, image: "worker:\${var.tag}" }] }
serviceResource: { kind: Deployment, name: api }
tasks:
  - name: migrate
    description: migrates the database
    command: [show-pod, migrate]
    env: { RETRIES: 3 }
  - name: on-worker
    command: [show-pod]
    resource: { kind: Deployment, name: worker }
tests:
  - name: smoke
    command: [show-pod]
    dependencies: [migrate]
`,
    'api/api.yaml': deployment('api', 'api:${var.tag}'),
  });

  it('validates: each task a kubernetes-pod Run, each test a Test <module>-<test>', async () => {
    const validated = await validateCommand({ root, var: [] });
    expect(validated.exitCode).toBe(0);
    expect(validated.data.actions.map((a) => `${a.ref} ${a.type} ${a.dependencies.join(',')}`)).toEqual([
      'deploy.api kubernetes ',
      'run.migrate kubernetes-pod ',
      'run.on-worker kubernetes-pod ',
      'test.api-smoke kubernetes-pod run.migrate',
    ]);
  });

  it("runs them in pods like the module's workloads, from its files and manifests, with nothing deployed", async () => {
    const ran = await execute('run', root, ['migrate', 'on-worker']);
    expect(ran.data.actions.map((a) => [a.ref, a.state, a.error?.message])).toEqual([
      ['run.migrate', 'ready', undefined],
      ['run.on-worker', 'ready', undefined],
    ]);
    // The workload's image, env and volumes (templated as the module's files are), the task's env.
    expect(shown(root, ran.data.sessionId).sort()).toEqual([
      'pod api:1.2 FROM_MANIFEST,RETRIES [{"name":"cache","mountPath":"/cache"}]',
      'pod worker:1.2  []',
    ]);
    const tested = await execute('test', root);
    expect(tested.data.actions.map((a) => [a.ref, a.state])).toContainEqual(['test.api-smoke', 'ready']);
    // The test's pod (without the task's env); its dependency's may run again beside it.
    expect(shown(root, tested.data.sessionId)).toContain(
      'pod api:1.2 FROM_MANIFEST [{"name":"cache","mountPath":"/cache"}]',
    );
  }, 120_000);

  it('a resource the manifests do not have fails the run, naming what they have', async () => {
    const missing = makeProject({
      'project.garden.yml': `apiVersion: garden.io/v2
kind: Project
name: k8s-pod-missing
environments: [{ name: dev, defaultNamespace: k8s-pod-missing }]
providers: [{ name: local-kubernetes, namespace: "\${environment.namespace}" }]
`,
      'garden.yml': `kind: Run
type: kubernetes-pod
name: job
spec:
  resource: { kind: Deployment, name: web }
  manifestFiles: [api.yaml]
  command: [show-pod]
`,
      'api.yaml': deployment('api', 'api:1'),
    });
    const ran = await execute('run', missing, ['job']);
    expect(ran.data.actions[0]!.error?.message).toBe(
      'run.job: its manifests have no Deployment web; they have Deployment api',
    );
  });

  it('a resource of a kind alone is the one workload of that kind, as in Garden; of two, or read from the cluster, the error says to name it', async () => {
    const byKind = makeProject({
      'project.garden.yml': `apiVersion: garden.io/v2
kind: Project
name: k8s-pod-kind
environments: [{ name: dev, defaultNamespace: k8s-pod-kind }]
providers: [{ name: local-kubernetes, namespace: "\${environment.namespace}" }]
`,
      'garden.yml': `kind: Run
type: kubernetes-pod
name: one
spec:
  resource: { kind: Deployment }
  manifestFiles: [api.yaml]
  command: [show-pod]
---
kind: Run
type: kubernetes-pod
name: two
spec:
  resource: { kind: Deployment }
  manifestFiles: [api.yaml, web.yaml]
  command: [show-pod]
---
kind: Run
type: kubernetes-pod
name: live
spec:
  resource: { kind: Deployment }
  command: [show-pod]
`,
      'api.yaml': deployment('api', 'api:1'),
      'web.yaml': deployment('web', 'web:1'),
    });
    expect((await validateCommand({ root: byKind, var: [] })).exitCode).toBe(0);
    const ran = await execute('run', byKind, ['one', 'two', 'live']);
    expect(ran.data.actions.map((a) => [a.ref, a.state, a.error?.message]).sort()).toEqual([
      [
        'run.live',
        'failed',
        'run.live: resource.name is needed: without manifests of its own, the Deployment is read from the cluster by name',
      ],
      ['run.one', 'ready', undefined],
      ['run.two', 'failed', 'run.two: they have 2 Deployments (api, web); name one with resource.name'],
    ]);
    expect(shown(byKind, ran.data.sessionId)).toEqual([
      'pod api:1 FROM_MANIFEST [{"name":"cache","mountPath":"/cache"}]',
    ]);
  });
});

describe('a kubernetes-pod with manifests of its own', () => {
  it("mounts its volumes beside the workload's, in the workload's container", async () => {
    const root = makeProject({
      'tend.yml': `kind: Project
name: k8s-pod-volumes
environments: [{ name: dev, defaultNamespace: k8s-pod-volumes }]
providers: [{ name: kubernetes }]
`,
      'job.tend.yml': `kind: Run
type: kubernetes-pod
name: job
spec:
  resource: { kind: Deployment, name: api }
  manifestFiles: [api.yaml]
  command: [show-pod]
  volumes:
    - { name: scratch, containerPath: /scratch }
`,
      'api.yaml': deployment('api', 'api:1'),
    });
    const ran = await execute('run', root, ['job']);
    expect(ran.data.actions.map((a) => [a.ref, a.state, a.error?.message])).toEqual([
      ['run.job', 'ready', undefined],
    ]);
    expect(shown(root, ran.data.sessionId)).toEqual([
      'pod api:1 FROM_MANIFEST [{"name":"cache","mountPath":"/cache"},{"name":"scratch","mountPath":"/scratch"}]',
    ]);
  });
});

describe("a container Run's env", () => {
  it("reads a Secret's key (`secretRef`), as Garden's container actions do", async () => {
    const root = makeProject({
      'project.garden.yml': `kind: Project
name: pod-secret-env
environments: [{ name: dev, defaultNamespace: pod-secret-env }]
providers: [{ name: local-kubernetes, namespace: "\${environment.namespace}" }]
variables:
  gitEnv:
    GIT_USERNAME: { secretRef: { name: git-credentials, key: username } }
    GIT_PASSWORD: { secretRef: { name: git-credentials } }
    GIT_ASKPASS: /app/git_password
`,
      'garden.yml': `kind: Module
type: container
name: home
image: node:20
tasks:
  - name: sync-sites
    command: [show-env]
    env: \${var.gitEnv}
`,
    });
    // The Secret, made by someone else (tend adopts the namespace).
    await kubectl(h.kubeconfig, 'create', 'namespace', 'pod-secret-env');
    await kubectl(
      h.kubeconfig,
      ...['-n', 'pod-secret-env', 'create', 'secret', 'generic', 'git-credentials'],
      ...['--from-literal=username=u', '--from-literal=GIT_PASSWORD=p'],
    );
    const ran = await execute('run', root, ['sync-sites']);
    expect(ran.data.actions.map((a) => [a.ref, a.state, a.error?.message])).toEqual([
      ['run.sync-sites', 'ready', undefined],
    ]);
    const [line] = logMessages(root, ran.data.sessionId).filter((m) => m.startsWith('env '));
    expect(JSON.parse(line!.slice('env '.length))).toEqual([
      { name: 'GIT_USERNAME', valueFrom: { secretKeyRef: { name: 'git-credentials', key: 'username' } } },
      { name: 'GIT_PASSWORD', valueFrom: { secretKeyRef: { name: 'git-credentials', key: 'GIT_PASSWORD' } } },
      { name: 'GIT_ASKPASS', value: '/app/git_password' },
    ]);
  });
});
