/**
 * Garden's ConfigTemplate / RenderTemplate and a kubernetes Deploy's patchResources: Garden's
 * examples that use them (test/fixtures/garden-examples), projects that deploy rendered and
 * patched manifests into kube-sim, and the errors of bad templates, inputs and patches at their
 * file:line.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateCommand } from '../../../src/commands/validate.js';
import type { TendError } from '../../../src/errors.js';
import { copyGardenExample, makeProject, removeProjects } from '../../helpers/project.js';
import { execute, kubectlJson, startSim, type SimHandle } from './helpers.js';

let h: SimHandle;
beforeAll(async () => {
  h = await startSim();
});
afterAll(async () => h?.stop());

afterAll(removeProjects);

/** Each error of `tend validate` as `CODE file:line message`. */
async function validateErrors(root: string): Promise<string[]> {
  try {
    await validateCommand({ root, var: [] });
  } catch (error) {
    const { errors } = (error as TendError).detail as {
      errors: { code: string; message: string; location: { file: string; line: number } }[];
    };
    return errors.map((e) => `${e.code} ${e.location.file}:${e.location.line} ${e.message}`);
  }
  return [];
}

interface Deployment {
  spec: {
    replicas: number;
    template: {
      spec: {
        containers: { name: string; image: string; env?: { name: string; value: string }[] }[];
        volumes?: { name: string; persistentVolumeClaim?: { claimName: string } }[];
        imagePullSecrets?: { name: string }[];
      };
    };
  };
  metadata: { labels?: Record<string, string> };
}

const project = (name: string) => `apiVersion: garden.io/v2
kind: Project
name: ${name}
defaultEnvironment: local
environments:
  - name: local
    defaultNamespace: ${name}
variables:
  greeting: hello
providers:
  - name: local-kubernetes
    namespace: \${environment.namespace}
`;

/** A Deployment manifest of one container, `app` for its name. */
const deploymentYaml = (app: string) => `apiVersion: apps/v1
kind: Deployment
metadata:
  name: ${app}
spec:
  replicas: 3
  selector:
    matchLabels: { app: ${app} }
  template:
    metadata:
      labels: { app: ${app} }
    spec:
      imagePullSecrets:
        - name: fake
      containers:
        - name: ${app}
          image: busybox:1
          env:
            - name: KEEP
              value: kept
            - name: GREETING
              value: placeholder
          volumeMounts:
            - name: data
              mountPath: /data
      volumes:
        - name: data
          emptyDir: {}
`;

describe("Garden's examples with templates and patches", () => {
  it('k8s-deploy-simple: valid as it is; deploys, the Deployment patched with the volume variable', async () => {
    const root = copyGardenExample('k8s-deploy-simple');
    const validated = await validateCommand({ root, var: [] });
    expect(validated.exitCode).toBe(0);
    expect(validated.data.actions.map((a) => a.ref)).toEqual(['deploy.my-volume', 'deploy.postgres']);
    // The variable the patch reads, changed: the deployed Deployment shows the patch.
    const deployed = await execute('deploy', root, [], { var: ['volumeName=patched-volume'] });
    expect(deployed.data.actions.map((a) => [a.ref, a.state, a.error?.message])).toEqual([
      ['deploy.my-volume', 'ready', undefined],
      ['deploy.postgres', 'ready', undefined],
    ]);
    // Wherever the provider put them (its namespace setting), as kubectl sees them.
    const all = (kind: string) =>
      kubectlJson<{ items: (Deployment & { metadata: { name: string; namespace: string } })[] }>(
        h.kubeconfig,
        'get',
        kind,
        '-A',
      );
    const deployment = (await all('deployments')).items.find((d) => d.metadata.name === 'postgres')!;
    const pod = deployment.spec.template.spec;
    expect(pod.volumes).toEqual([
      { name: 'postgres-storage', persistentVolumeClaim: { claimName: 'patched-volume' } },
    ]);
    // The rest of the manifest as written.
    expect(pod.containers.map((c) => [c.name, c.image, c.env?.length])).toEqual([
      ['postgres', 'postgres:15', 4],
    ]);
    const claims = (await all('persistentvolumeclaims')).items.map((c) => c.metadata);
    expect(claims).toContainEqual(
      expect.objectContaining({ name: 'patched-volume', namespace: deployment.metadata.namespace }),
    );
  });

  it('templated-k8s-container: valid as it is; its RenderTemplate renders a Build and a Deploy', async () => {
    const root = copyGardenExample('templated-k8s-container');
    const validated = await validateCommand({ root, var: [] });
    expect(validated.exitCode).toBe(0);
    expect(validated.data.actions.map((a) => `${a.ref} ${a.type} ${a.file}:${a.line}`)).toEqual([
      'build.my-service container service/garden.yml:1',
      'deploy.my-service kubernetes service/garden.yml:1',
    ]);
  });

  it('k8s-deploy-config-templates and k8s-deploy-patch-resources: valid as they are, their container db included', async () => {
    for (const name of ['k8s-deploy-config-templates', 'k8s-deploy-patch-resources']) {
      const validated = await validateCommand({ root: copyGardenExample(name), var: [] });
      expect(validated.exitCode, name).toBe(0);
      const deploys = validated.data.actions.filter((a) => a.ref.startsWith('deploy.'));
      expect(deploys.map((a) => `${a.ref} ${a.type}`).sort(), name).toEqual([
        'deploy.api kubernetes',
        'deploy.postgres container',
        'deploy.web kubernetes',
      ]);
    }
  });

  it('k8s-deploy-config-templates with its db as a kubernetes Deploy: the rendered web and api Deploys validate', async () => {
    const root = copyGardenExample('k8s-deploy-config-templates');
    // Only the container Deploy (postgres) and its container Runs changed, to what tend runs today.
    writeFileSync(
      path.join(root, 'db', 'garden.yml'),
      `kind: Deploy
type: kubernetes
name: postgres
spec:
  manifests: []
---
kind: Run
type: exec
name: db-init
spec:
  command: [echo, init]
`,
    );
    const validated = await validateCommand({ root, var: [] });
    expect(validated.exitCode).toBe(0);
    expect(
      validated.data.actions
        .map((a) => `${a.ref} ${a.type} ${a.file}:${a.line} ${a.dependencies.join(',')}`)
        .sort(),
    ).toEqual([
      'build.api container api/garden.yml:1 ',
      'build.web container web/garden.yml:1 ',
      'deploy.api kubernetes api/garden.yml:1 build.api,run.db-init',
      'deploy.postgres kubernetes db/garden.yml:1 ',
      'deploy.web kubernetes web/garden.yml:1 build.web',
      'run.db-init exec db/garden.yml:7 ',
    ]);
  });
});

describe('ConfigTemplate and RenderTemplate', () => {
  const template = `kind: ConfigTemplate
name: service
inputsSchemaPath: schema.json
configs:
  - kind: Deploy
    type: kubernetes
    name: \${parent.name}
    description: \${parent.name} from \${template.name}
    source:
      path: \${inputs.manifestDir}
    dependencies:
      - $concat: \${inputs.dependencies || []}
    spec:
      manifestFiles: [deployment.yaml]
      patchResources:
        - kind: Deployment
          name: \${parent.name}
          patch:
            spec:
              replicas: \${inputs.replicas}
              template:
                spec:
                  containers:
                    - name: \${parent.name}
                      env: \${inputs.env}
                  imagePullSecrets:
                    - name: real
`;
  const schema = JSON.stringify({
    type: 'object',
    properties: {
      manifestDir: { type: 'string' },
      replicas: { type: 'integer', default: 1 },
      dependencies: { type: 'array', items: { type: 'string' } },
      env: { type: 'array', items: { type: 'object', required: ['name', 'value'] } },
    },
    required: ['manifestDir', 'env'],
  });
  const render = (name: string, inputs: string) => `kind: RenderTemplate
template: service
name: ${name}
inputs:
${inputs}`;

  it('renders each RenderTemplate into actions that deploy, patched with their inputs (defaults from the schema, templates in inputs)', async () => {
    const root = makeProject({
      'project.garden.yml': project('templates-deploy'),
      'templates/garden.yml': template,
      'templates/schema.json': schema,
      'web/garden.yml': render(
        'web',
        `  manifestDir: manifests
  dependencies: [deploy.api]
  env:
    - name: GREETING
      value: \${var.greeting}-web
`,
      ),
      'web/manifests/deployment.yaml': deploymentYaml('web'),
      'api/garden.yml': render(
        'api',
        `  manifestDir: .
  replicas: 2
  env: []
`,
      ),
      'api/deployment.yaml': deploymentYaml('api'),
    });
    const validated = await validateCommand({ root, var: [] });
    expect(validated.exitCode).toBe(0);
    expect(
      validated.data.actions.map((a) => `${a.ref} ${a.file}:${a.line} ${a.dependencies.join(',')}`),
    ).toEqual(['deploy.api api/garden.yml:1 ', 'deploy.web web/garden.yml:1 deploy.api']);
    const deployed = await execute('deploy', root);
    expect(deployed.data.actions.map((a) => [a.ref, a.state, a.error?.message])).toEqual([
      ['deploy.api', 'ready', undefined],
      ['deploy.web', 'ready', undefined],
    ]);
    const get = (name: string) =>
      kubectlJson<Deployment>(h.kubeconfig, '-n', 'templates-deploy', 'get', 'deployment', name);
    const web = await get('web');
    expect(web.spec.replicas).toBe(1); // the schema's default
    const webPod = web.spec.template.spec;
    // Strategic merge: env merged by name (the input's template resolved), pull secrets by name.
    expect(webPod.containers[0]!.env).toEqual([
      { name: 'KEEP', value: 'kept' },
      { name: 'GREETING', value: 'hello-web' },
    ]);
    expect(webPod.imagePullSecrets).toEqual([{ name: 'fake' }, { name: 'real' }]);
    const api = await get('api');
    expect(api.spec.replicas).toBe(2);
    expect(api.spec.template.spec.containers[0]!.env).toEqual([
      { name: 'KEEP', value: 'kept' },
      { name: 'GREETING', value: 'placeholder' },
    ]);
  });

  it('refuses a RenderTemplate naming a missing template, and inputs the schema refuses, at their lines', async () => {
    const root = makeProject({
      'project.garden.yml': project('templates-bad'),
      'templates/garden.yml': template,
      'templates/schema.json': schema,
      'a/garden.yml': `kind: RenderTemplate
name: a
template: servce
inputs: {}
`,
      'b/garden.yml': render(
        'b',
        `  manifestDir: .
  replicas: many
`,
      ),
    });
    const errors = await validateErrors(root);
    expect(errors).toEqual([
      'TEND_CONFIG_INVALID a/garden.yml:3 RenderTemplate a names template "servce", which is not defined; templates: service',
      expect.stringMatching(
        /^TEND_CONFIG_INVALID b\/garden\.yml:5 missing required key "env" in inputs \(the inputs schema of ConfigTemplate service\)$/,
      ),
      expect.stringMatching(
        /^TEND_CONFIG_INVALID b\/garden\.yml:6 .*replicas.*\(the inputs schema of ConfigTemplate service\)$/,
      ),
    ]);
  });

  it('refuses a template that renders a RenderTemplate of itself (a cycle), at the template line', async () => {
    const root = makeProject({
      'project.garden.yml': project('templates-cycle'),
      'templates/garden.yml': `kind: ConfigTemplate
name: loop
configs:
  - kind: RenderTemplate
    name: again
    template: loop
`,
      'use/garden.yml': `kind: RenderTemplate
name: use
template: loop
`,
    });
    expect(await validateErrors(root)).toEqual([
      'TEND_CONFIG_INVALID templates/garden.yml:4 ConfigTemplate loop renders kind "RenderTemplate", a RenderTemplate of itself (a cycle); a template renders Build, Deploy, Run, Test and Workflow configs only, as in Garden (in ConfigTemplate loop rendered by RenderTemplate use at use/garden.yml:1:1)',
    ]);
  });

  it('refuses a rendered name that reads more than inputs, parent and template, at the template line', async () => {
    const root = makeProject({
      'project.garden.yml': project('templates-name'),
      'templates/garden.yml': `kind: ConfigTemplate
name: t
configs:
  - kind: Deploy
    type: kubernetes
    name: \${var.greeting}
    spec:
      manifests: []
`,
      'use/garden.yml': `kind: RenderTemplate
name: use
template: t
`,
    });
    const errors = await validateErrors(root);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(
      /^TEND_CONFIG_INVALID templates\/garden\.yml:6 .*var\.greeting.*inputs, parent and template only \(in ConfigTemplate \S+ rendered by RenderTemplate use at \S+\)$/,
    );
  });

  it("Garden 0.12's templated module renders its ModuleTemplate's modules: names and $forEach from inputs, other contexts when its actions run", async () => {
    const root = makeProject({
      'project.garden.yml': project('modtpl')
        .replace('garden.io/v2', 'garden.io/v1')
        .replace(
          '  - name: local-kubernetes\n    namespace: ${environment.namespace}\n',
          `  - name: local-kubernetes\n    namespace: \${environment.namespace}\n    deploymentRegistry: { hostname: ${h.sim.registryHost}, namespace: modtpl }\n`,
        ),
      // As pdelanauze/grpc-web-k8s-envoy-garden-sample and Garden issue 3091's repro write them.
      'templates/garden.yml': `kind: ModuleTemplate
name: service
modules:
  - type: container
    name: \${parent.name}-image
  - type: kubernetes
    name: \${parent.name}
    # Garden's conversion builds the container module of serviceResource first: no build.dependencies needed.
    serviceResource:
      kind: Deployment
      containerModule: \${parent.name}-image
    manifests:
      - apiVersion: apps/v1
        kind: Deployment
        metadata: { name: "\${parent.name}" }
        spec:
          replicas: \${inputs.replicas}
          selector: { matchLabels: { app: "\${parent.name}" } }
          template:
            metadata: { labels: { app: "\${parent.name}" } }
            spec:
              containers:
                - name: main
                  image: \${modules["\${parent.name}-image"].outputs.deployment-image-id}
                  env: [{ name: GREETING, value: "\${var.greeting}" }]
  - type: container
    name: \${parent.name}-workers
    image: nginx:1.27
    include: []
    services:
      $forEach: \${inputs.workers}
      $return:
        name: \${parent.name}-\${item.value}
        env: { WORKER: "\${item.value}" }
`,
      'api/garden.yml': `kind: Module
type: templated
name: api
template: service
inputs: { replicas: 2, workers: [a, b] }
`,
      'api/Dockerfile': 'FROM nginx\n',
    });
    expect((await validateCommand({ root, var: [] })).exitCode).toBe(0);
    const deployed = await execute('deploy', root);
    expect(deployed.data.actions.map((a) => [a.ref, a.state, a.error?.message]).sort()).toEqual([
      ['build.api-image', 'ready', undefined],
      ['deploy.api', 'ready', undefined],
      ['deploy.api-a', 'ready', undefined],
      ['deploy.api-b', 'ready', undefined],
    ]);
    const api = await kubectlJson<Deployment>(h.kubeconfig, '-n', 'modtpl', 'get', 'deployment', 'api');
    expect(api.spec.replicas).toBe(2);
    const [main] = api.spec.template.spec.containers;
    expect(main!.image).toMatch(/\/api-image:v-[0-9a-f]+$/);
    expect(main!.env).toEqual([{ name: 'GREETING', value: 'hello' }]);
    const worker = await kubectlJson<Deployment>(h.kubeconfig, '-n', 'modtpl', 'get', 'deployment', 'api-b');
    const [container] = worker.spec.template.spec.containers;
    expect([container!.image, container!.env?.find((e) => e.name === 'WORKER')?.value]).toEqual([
      'nginx:1.27',
      'b',
    ]);
  });

  it('refuses a templated module naming a missing template, at its line', async () => {
    const root = makeProject({
      'project.garden.yml': project('modtpl-missing').replace('garden.io/v2', 'garden.io/v1'),
      'api/garden.yml': `kind: Module
type: templated
name: api
template: servce
`,
    });
    expect(await validateErrors(root)).toEqual([
      'TEND_CONFIG_INVALID api/garden.yml:4 templated module api names template "servce", which is not defined; templates: (none)',
    ]);
  });
});

describe('patchResources', () => {
  const deploy = (patches: string) => `kind: Deploy
type: kubernetes
name: app
spec:
  manifestFiles: [deployment.yaml]
  patchResources:
${patches}`;

  it('json and merge strategies deploy; a patch matching nothing patches nothing', async () => {
    const root = makeProject({
      'project.garden.yml': project('patch-strategies'),
      'app/garden.yml': deploy(`    - kind: Deployment
      name: app
      strategy: json
      patch:
        - { op: replace, path: /spec/replicas, value: 2 }
        - { op: add, path: /metadata/labels, value: { patched: json } }
        - { op: remove, path: /spec/template/spec/imagePullSecrets }
    - kind: Deployment
      name: app
      strategy: merge
      patch: { spec: { replicas: 5 } }
    - kind: Service
      name: nothing
      patch: { spec: {} }
`),
      'app/deployment.yaml': deploymentYaml('app'),
    });
    const deployed = await execute('deploy', root);
    expect(deployed.data.actions.map((a) => [a.ref, a.state, a.error?.message])).toEqual([
      ['deploy.app', 'ready', undefined],
    ]);
    const app = await kubectlJson<Deployment>(
      h.kubeconfig,
      '-n',
      'patch-strategies',
      'get',
      'deployment',
      'app',
    );
    // The first patch of the kind and name only, as Garden does.
    expect(app.spec.replicas).toBe(2);
    expect(app.metadata.labels?.patched).toBe('json');
    expect(app.spec.template.spec.imagePullSecrets).toBeUndefined();
  });

  it('refuses malformed JSON patch operations at their line; an operation that cannot apply fails the deploy naming it', async () => {
    const bad = makeProject({
      'project.garden.yml': project('patch-bad'),
      'app/garden.yml': deploy(`    - kind: Deployment
      name: app
      strategy: json
      patch:
        - { op: frobnicate, path: /spec/replicas }
        - { op: add, path: spec/replicas, value: 1 }
`),
      'app/deployment.yaml': deploymentYaml('app'),
    });
    const errors = await validateErrors(bad);
    expect(errors.map((e) => e.split(' ').slice(0, 2).join(' '))).toEqual([
      'TEND_CONFIG_INVALID app/garden.yml:11',
      'TEND_CONFIG_INVALID app/garden.yml:12',
    ]);

    const failing = makeProject({
      'project.garden.yml': project('patch-fails'),
      'app/garden.yml': deploy(`    - kind: Deployment
      name: app
      strategy: json
      patch:
        - { op: replace, path: /spec/nothing/here, value: 1 }
`),
      'app/deployment.yaml': deploymentYaml('app'),
    });
    const deployed = await execute('deploy', failing);
    const [result] = deployed.data.actions;
    expect(result?.state).toBe('failed');
    expect(result?.error?.message).toBe(
      'deploy.app: spec.patchResources[0] on Deployment app (deployment.yaml#1): operation 0 ({"op":"replace","path":"/spec/nothing/here","value":1}): path /spec/nothing/here does not exist in the object',
    );
  });
});
