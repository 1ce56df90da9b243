/**
 * A number or a boolean written as a string (`memory: "7000"`, `replicas: "2"`, `daemon: "false"`)
 * is converted where the spec schema wants a number or a boolean, as Garden's Joi schemas convert
 * it (Joi's `convert: true`): only a decimal number, blanks around allowed, that a number holds
 * exactly, and `true`/`false` in any case. Anything else stays an error at its line.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { TendError } from '../../src/errors.js';
import { configureAt, configureError, failure } from '../helpers/configure.js';
import { makeProject, removeProjects } from '../helpers/project.js';

afterEach(removeProjects);

const project = `apiVersion: garden.io/v1
kind: Project
name: p
environments: [{ name: dev }]
providers: [{ name: local-kubernetes }]
`;

/** A Garden container Deploy named api whose spec adds `lines` (indented by two spaces) to an image. */
const containerDeploy = (lines: string, variables = '') => `${project}${variables}---
kind: Deploy
type: container
name: api
spec:
  image: nginx
${lines}`;

/** The container Deploy with `replicas` and `limits.memory` from the project's `variables`. */
const templatedDeploy = (variables: string) =>
  containerDeploy(
    `  replicas: \${var.replicas}
  limits: { memory: "\${var.memory}" }
`,
    `variables: { ${variables} }\n`,
  );

/** The spec of `ref` as it is resolved and checked to run. */
async function resolvedSpec(root: string, ref: string): Promise<Record<string, unknown>> {
  const configuration = await configureAt(root);
  const action = configuration.actions.find((a) => a.ref === ref)!;
  return configuration.checkSpec(
    action,
    configuration.resolveSpec(action, { keepActionOutputs: false }),
  ) as Record<string, unknown>;
}

/** `file:line message` of each problem of a load that fails. */
async function problems(root: string): Promise<string[]> {
  const error: TendError = await configureError(root);
  const listed = (error.detail as { errors: { message: string; location: { file: string; line: number } }[] })
    .errors;
  return listed.map((e) => `${e.location.file}:${e.location.line} ${e.message}`);
}

describe('a number or boolean written as a string in a Garden spec', () => {
  it('is converted as Garden converts it, each kind of field', async () => {
    const root = makeProject({
      'project.garden.yml': containerDeploy(`  replicas: "2"
  limits: { memory: "7000", cpu: " 250 " }
  cpu: { min: "10.5", max: "+1e3" }
  memory: { min: "64", max: "2048" }
  daemon: "FALSE"
  ports:
    - name: http
      containerPort: "80"
      servicePort: "8080"
  healthCheck:
    httpGet: { path: /, port: http }
    readinessTimeoutSeconds: "5"
`),
    });
    expect(await resolvedSpec(root, 'deploy.api')).toMatchObject({
      replicas: 2,
      limits: { memory: 7000, cpu: 250 },
      cpu: { min: 10.5, max: 1000 },
      memory: { min: 64, max: 2048 },
      daemon: false,
      ports: [{ name: 'http', containerPort: 80, servicePort: 8080 }],
      healthCheck: { readinessTimeoutSeconds: 5 },
    });
  });

  it('is converted once a template gives it', async () => {
    const root = makeProject({
      'project.garden.yml': templatedDeploy('replicas: "3", memory: "7000"'),
    });
    expect(await resolvedSpec(root, 'deploy.api')).toMatchObject({ replicas: 3, limits: { memory: 7000 } });
  });

  it('is an error at its line when Garden would not convert it', async () => {
    // Two actions: TypeBox lists at most 8 errors of one value.
    const root = makeProject({
      'project.garden.yml': containerDeploy(`  replicas: "2.5"
  limits: { memory: "7000abc", cpu: "" }
  cpu: { min: "0x10", max: "Infinity" }
  daemon: "yes"
---
kind: Deploy
type: container
name: web
spec:
  image: nginx
  memory: { min: "1e400", max: "12345678901234567890" }
  ports:
    - name: http
      containerPort: " "
      servicePort: "1_000"
`),
    });
    expect(await problems(root)).toEqual([
      'project.garden.yml:12 invalid value for spec.replicas: expected a whole number, got "2.5"',
      'project.garden.yml:13 invalid value for spec.limits.memory: expected a number, got "7000abc"',
      'project.garden.yml:13 invalid value for spec.limits.cpu: expected a number, got ""',
      'project.garden.yml:14 invalid value for spec.cpu.min: expected a number, got "0x10"',
      'project.garden.yml:14 invalid value for spec.cpu.max: expected a number or null, got "Infinity"',
      'project.garden.yml:15 invalid value for spec.daemon: expected true or false, got "yes"',
      'project.garden.yml:22 invalid value for spec.memory.min: expected a number, got "1e400"',
      'project.garden.yml:22 invalid value for spec.memory.max: expected a number or null, got "12345678901234567890"',
      'project.garden.yml:25 invalid value for spec.ports[0].containerPort: expected a whole number, got " "',
      'project.garden.yml:26 invalid value for spec.ports[0].servicePort: expected a whole number, got "1_000"',
    ]);
  });

  it('is an error once a template gives what Garden would not convert', async () => {
    const root = makeProject({
      'project.garden.yml': templatedDeploy('replicas: "", memory: "0x10"'),
    });
    const error = await failure(resolvedSpec(root, 'deploy.api'));
    expect(error.code).toBe('TEND_CONFIG_INVALID');
    expect(error.message).toBe(
      'invalid value for spec.replicas: expected a whole number, got "" (after resolving template expressions)\n' +
        'project.garden.yml:14:21: invalid value for spec.limits.memory: expected a number, got "0x10" (after resolving template expressions)\n' +
        '(2 configuration errors)',
    );
    expect(error.location).toMatchObject({ file: 'project.garden.yml', line: 13 });
  });

  it("is converted in tend's own files too", async () => {
    const root = makeProject({
      'tend.yml': `kind: Project
name: p
environments: [{ name: dev, defaultNamespace: p-dev }]
providers: [{ name: exec }]
---
kind: Deploy
type: exec
name: api
spec:
  command: [serve]
  persistent: "true"
  stopGracePeriod: "10"
  readiness: { timeout: "2.5" }
`,
    });
    expect(await resolvedSpec(root, 'deploy.api')).toMatchObject({
      persistent: true,
      stopGracePeriod: 10,
      readiness: { timeout: 2.5 },
    });
  });

  it('is converted in a Garden 0.12 module, as in the actions it becomes', async () => {
    const root = makeProject({
      'project.garden.yml': `${project}---
kind: Module
type: container
name: api
image: nginx
services:
  - name: api
    replicas: "2"
    limits: { memory: "7000" }
    ports: [{ name: http, containerPort: "80" }]
`,
    });
    expect(await resolvedSpec(root, 'deploy.api')).toMatchObject({
      replicas: 2,
      limits: { memory: 7000 },
      ports: [{ name: 'http', containerPort: 80 }],
    });
  });
});

describe('a null item of a list once templates are resolved (Garden sparse arrays)', () => {
  // Garden's own test project kubernetes-type-conditional-manifests: Joi's sparse arrays drop null items.
  const conditional = (foo: boolean) =>
    makeProject({
      'project.garden.yml': `${project}---
kind: Deploy
type: kubernetes
name: config-map-list
variables:
  foo: ${String(foo)}
spec:
  manifestTemplates:
    - "\${var.foo ? 'manifests.yaml' : null}"
---
kind: Deploy
type: container
name: api
spec:
  image: nginx
  args: [serve, "\${var.flag}", --port=80]
variables:
  flag: null
`,
      'manifests.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: { name: m }\n',
    });

  it('is left out, as Garden leaves it out: an entry a condition turns off is no entry', async () => {
    expect((await resolvedSpec(conditional(false), 'deploy.config-map-list')).manifestTemplates).toEqual([]);
    expect((await resolvedSpec(conditional(true), 'deploy.config-map-list')).manifestTemplates).toEqual([
      'manifests.yaml',
    ]);
    expect((await resolvedSpec(conditional(false), 'deploy.api')).args).toEqual(['serve', '--port=80']);
  });

  it('stays in a value tend does not type (a helm chart values list keeps its null)', async () => {
    const root = makeProject({
      'project.garden.yml': `${project}---
kind: Deploy
type: helm
name: chart
spec:
  chart: { path: chart }
  values: { list: [a, "\${var.none}", b] }
variables:
  none: null
`,
      'chart/Chart.yaml': 'apiVersion: v2\nname: chart\nversion: 0.1.0\n',
    });
    expect((await resolvedSpec(root, 'deploy.chart')).values).toEqual({ list: ['a', null, 'b'] });
  });
});
