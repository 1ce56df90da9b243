/**
 * Garden's container volumes — an empty directory, a `hostPath`, and `action:` a
 * persistentvolumeclaim or configmap Deploy (`module:` a volume module in Garden 0.12) — on
 * container Deploys, Tests and Runs, and those two Deploy types (and module types) themselves:
 * validated as Garden checks them, then deployed into kube-sim, where the pods mount them.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateCommand } from '../../../src/commands/validate.js';
import type { TendError } from '../../../src/errors.js';
import { makeProject, removeProjects } from '../../helpers/project.js';
import { execute, kubectlJson, logMessages, startSim, type SimHandle } from './helpers.js';

let h: SimHandle;
beforeAll(async () => {
  // A container whose command names `show-volumes` logs its pod's volumes and its own mounts: what
  // a Test or Run pod (removed when it ends) mounted.
  h = await startSim({
    podRules: [
      {
        command: /show-volumes/,
        behaviour: (container, pod) => {
          const spec = pod.spec as {
            volumes?: unknown[];
            containers: { name: string; volumeMounts?: unknown[] }[];
          };
          const own = spec.containers.find((c) => c.name === container.name);
          return {
            exitCode: 0,
            runMs: 0,
            logs: [
              `volumes ${JSON.stringify(spec.volumes ?? [])}`,
              `mounts ${JSON.stringify(own?.volumeMounts)}`,
            ],
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

interface PodSpec {
  volumes?: Record<string, unknown>[];
  containers: { name: string; volumeMounts?: { name: string; mountPath: string }[] }[];
}

async function workloadPod(namespace: string, name: string): Promise<PodSpec> {
  const deployment = await kubectlJson<{ spec: { template: { spec: PodSpec } } }>(
    h.kubeconfig,
    '-n',
    namespace,
    'get',
    'deployment',
    name,
  );
  return deployment.spec.template.spec;
}

async function validateErrors(root: string): Promise<string[]> {
  try {
    await validateCommand({ root, var: [] });
  } catch (error) {
    const { errors } = (error as TendError).detail as {
      errors: { code: string; message: string; location: { file: string; line: number } }[];
    };
    return errors.map((e) => `${e.location.file}:${e.location.line} ${e.code} ${e.message}`);
  }
  return [];
}

/** The `volumes …` and `mounts …` lines the show-volumes container logged in a session. */
function shownVolumes(root: string, sessionId: string): { volumes: unknown; mounts: unknown } {
  const messages = logMessages(root, sessionId);
  const line = (prefix: string) => {
    const found = messages.find((m) => m.startsWith(`${prefix} `));
    expect(found, messages.join('\n')).toBeDefined();
    return JSON.parse(found!.slice(prefix.length + 1)) as unknown;
  };
  return { volumes: line('volumes'), mounts: line('mounts') };
}

const gardenProject = (namespace: string) => `apiVersion: garden.io/v1
kind: Project
name: ${namespace}
environments: [{ name: dev, defaultNamespace: ${namespace} }]
providers: [{ name: local-kubernetes, namespace: "\${environment.namespace}" }]
variables: { storage: 1Gi }
`;

describe('Garden 0.12 container modules with volumes, and persistentvolumeclaim modules', () => {
  // As real projects write them: a database on a claim of a persistentvolumeclaim module, a task
  // mounting scripts of the project from the node (hostPath, on a local cluster), an empty directory.
  const root = makeProject({
    'project.garden.yml': gardenProject('volume-modules'),
    'scripts/init-db.sh': '#!/bin/sh\necho migrated\n',
    'postgres/garden.yml': `kind: Module
type: container
name: postgres
image: postgres:14
services:
  - name: db
    volumes:
      - name: data
        module: volume-claim-postgres
        containerPath: /var/lib/postgresql/data
      - name: scratch
        containerPath: /scratch
    ports: [{ name: db, containerPort: 5432 }]
tasks:
  - name: db-migrations
    command: [/bin/sh, -c]
    args: ["show-volumes /db-scripts/init-db.sh"]
    volumes:
      - name: scripts
        hostPath: ../scripts
        containerPath: /db-scripts
    dependencies: [db]
tests:
  - name: claim-mounted
    command: [show-volumes]
    volumes:
      - name: data
        module: volume-claim-postgres
        containerPath: /data
---
kind: Module
type: persistentvolumeclaim
name: volume-claim-postgres
description: volume for postgres
spec:
  accessModes: [ReadWriteOnce]
  resources:
    requests:
      storage: \${var.storage}
`,
  });

  it('validates: the claim is a Deploy each action mounting it depends on', async () => {
    const validated = await validateCommand({ root, var: [] });
    expect(validated.exitCode).toBe(0);
    expect(
      validated.data.actions.map((a) => `${a.ref} ${a.type} ${a.file}:${a.line} ${a.dependencies.join(',')}`),
    ).toEqual([
      'deploy.db container postgres/garden.yml:1 deploy.volume-claim-postgres',
      'run.db-migrations kubernetes-pod postgres/garden.yml:1 deploy.db',
      'test.postgres-claim-mounted kubernetes-pod postgres/garden.yml:1 deploy.volume-claim-postgres',
      'deploy.volume-claim-postgres kubernetes postgres/garden.yml:31 ',
    ]);
  });

  it('deploys the PersistentVolumeClaim and the Deployment mounting it; the task mounts the host directory', async () => {
    const deployed = await execute('deploy', root);
    expect(deployed.data.actions.map((a) => [a.ref, a.state, a.error?.message])).toEqual([
      ['deploy.volume-claim-postgres', 'ready', undefined],
      ['deploy.db', 'ready', undefined],
    ]);
    const claim = await kubectlJson<{ spec: Record<string, unknown> }>(
      h.kubeconfig,
      '-n',
      'volume-modules',
      'get',
      'persistentvolumeclaim',
      'volume-claim-postgres',
    );
    expect(claim.spec).toMatchObject({
      accessModes: ['ReadWriteOnce'],
      resources: { requests: { storage: '1Gi' } },
    });
    const pod = await workloadPod('volume-modules', 'db');
    expect(pod.volumes).toEqual([
      { name: 'data', persistentVolumeClaim: { claimName: 'volume-claim-postgres' } },
      { name: 'scratch', emptyDir: {} },
    ]);
    expect(pod.containers[0]!.volumeMounts).toEqual([
      { name: 'data', mountPath: '/var/lib/postgresql/data' },
      { name: 'scratch', mountPath: '/scratch' },
    ]);

    const ran = await execute('run', root, ['db-migrations']);
    expect(ran.data.actions.map((a) => [a.ref, a.state, a.error?.message])).toContainEqual([
      'run.db-migrations',
      'ready',
      undefined,
    ]);
    // Garden resolves hostPath against the action's source directory (here the module's).
    expect(shownVolumes(root, ran.data.sessionId)).toEqual({
      volumes: [{ name: 'scripts', hostPath: { path: path.join(root, 'scripts') } }],
      mounts: [{ name: 'scripts', mountPath: '/db-scripts' }],
    });

    const tested = await execute('test', root);
    expect(tested.data.actions.find((a) => a.ref === 'test.postgres-claim-mounted')?.state).toBe('ready');
    expect(shownVolumes(root, tested.data.sessionId)).toEqual({
      volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'volume-claim-postgres' } }],
      mounts: [{ name: 'data', mountPath: '/data' }],
    });
  }, 120_000);
});

describe('Garden 0.13 actions: persistentvolumeclaim and configmap Deploys mounted by container actions', () => {
  const root = makeProject({
    'project.garden.yml': gardenProject('volume-actions'),
    'garden.yml': `kind: Deploy
type: persistentvolumeclaim
name: uploads
spec:
  spec:
    accessModes: [ReadWriteOnce]
    resources: { requests: { storage: "\${var.storage}" } }
---
kind: Deploy
type: configmap
name: web-config
spec:
  data:
    nginx.conf: "server { listen 80; }"
---
kind: Deploy
type: container
name: web
dependencies: [deploy.uploads, { kind: Deploy, name: web-config }]
spec:
  image: nginx:1.27
  volumes:
    - { name: uploads, containerPath: /uploads, action: { kind: Deploy, name: uploads } }
    - { name: config, containerPath: /etc/nginx/conf.d, action: deploy.web-config }
    - { name: logs, containerPath: /var/log/nginx, hostPath: /var/log/web }
---
kind: Run
type: container
name: show
dependencies: [deploy.web-config]
spec:
  image: busybox
  command: [show-volumes]
  volumes:
    - { name: config, containerPath: /config, action: deploy.web-config }
`,
  });

  it('deploys the claim and the ConfigMap as objects named after the actions, mounted by the pods', async () => {
    const validated = await validateCommand({ root, var: [] });
    expect(validated.data.actions.map((a) => `${a.ref} ${a.type}`)).toEqual([
      'deploy.uploads kubernetes',
      'deploy.web-config kubernetes',
      'deploy.web container',
      'run.show kubernetes-pod',
    ]);
    const deployed = await execute('deploy', root);
    expect(deployed.data.actions.map((a) => [a.ref, a.state, a.error?.message])).toEqual([
      ['deploy.uploads', 'ready', undefined],
      ['deploy.web-config', 'ready', undefined],
      ['deploy.web', 'ready', undefined],
    ]);
    const config = await kubectlJson<{ data: Record<string, string> }>(
      h.kubeconfig,
      '-n',
      'volume-actions',
      'get',
      'configmap',
      'web-config',
    );
    expect(config.data).toEqual({ 'nginx.conf': 'server { listen 80; }' });
    const pod = await workloadPod('volume-actions', 'web');
    expect(pod.volumes).toEqual([
      { name: 'uploads', persistentVolumeClaim: { claimName: 'uploads' } },
      { name: 'config', configMap: { name: 'web-config' } },
      { name: 'logs', hostPath: { path: '/var/log/web' } },
    ]);
    expect(pod.containers[0]!.volumeMounts?.map((m) => m.mountPath)).toEqual([
      '/uploads',
      '/etc/nginx/conf.d',
      '/var/log/nginx',
    ]);

    const ran = await execute('run', root, ['show']);
    expect(ran.data.actions.find((a) => a.ref === 'run.show')?.state).toBe('ready');
    expect(shownVolumes(root, ran.data.sessionId)).toEqual({
      volumes: [{ name: 'config', configMap: { name: 'web-config' } }],
      mounts: [{ name: 'config', mountPath: '/config' }],
    });
  }, 120_000);

  it('refuses what Garden refuses, at the line: a volume action not depended on, not a volume, beside hostPath', async () => {
    const refused = makeProject({
      'project.garden.yml': gardenProject('volume-refused'),
      'garden.yml': `kind: Deploy
type: persistentvolumeclaim
name: claim
spec:
  namespace: elsewhere
  spec: { accessModes: [ReadWriteOnce] }
---
kind: Deploy
type: container
name: api
spec: { image: nginx }
---
kind: Deploy
type: container
name: web
dependencies: [deploy.api]
spec:
  image: nginx
  volumes:
    - { name: a, containerPath: /a, action: deploy.claim }
    - { name: b, containerPath: /b, action: deploy.api }
    - { name: c, containerPath: /c, action: deploy.claim, hostPath: /c }
`,
    });
    expect(await validateErrors(refused)).toEqual([
      'garden.yml:20 TEND_CONFIG_UNSUPPORTED deploy.web mounts deploy.claim but does not depend on it; add it to dependencies (Garden requires it too)',
      'garden.yml:21 TEND_CONFIG_UNSUPPORTED deploy.api is not a persistentvolumeclaim or configmap Deploy, the only actions a volume mounts (as in Garden)',
      'garden.yml:22 TEND_CONFIG_UNSUPPORTED a volume has hostPath or action, not both (as in Garden); remove one',
    ]);
  });

  it("tend's own container volume takes one source at most", async () => {
    const root2 = makeProject({
      'tend.yml': `kind: Project
name: volume-own
environments: [{ name: dev }]
providers: [{ name: kubernetes }]
`,
      'web.tend.yml': `kind: Deploy
type: container
name: web
spec:
  image: nginx
  volumes:
    - { name: a, containerPath: /a, persistentVolumeClaim: data, configMap: settings }
`,
    });
    expect(await validateErrors(root2)).toEqual([
      'web.tend.yml:7 TEND_CONFIG_INVALID invalid value for spec.volumes[0]: expected a volume with at most one of hostPath, persistentVolumeClaim and configMap, got a mapping',
    ]);
  });
});
