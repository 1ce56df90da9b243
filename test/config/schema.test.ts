/**
 * The JSON Schema for editors, checked with ajv (draft-07), which fastify already brings into
 * node_modules: valid documents pass, unknown keys and wrong values fail.
 */
import { Ajv } from 'ajv';
import { parseAllDocuments } from 'yaml';
import { afterAll, describe, expect, it } from 'vitest';
import { schemaCommand } from '../../src/commands/schema.js';
import { validateCommand } from '../../src/commands/validate.js';
import { buildJsonSchema } from '../../src/config/schema.js';
import { builtinPlugins } from '../../src/plugins/builtin.js';
import { testPlugins } from './fixtures/plugins.js';
import { removeProjects, writeProject, yaml } from './fixtures/project.js';

afterAll(removeProjects);

function compile(schema: object) {
  // patternErrorMessage is an editor extension (VS Code, yaml-language-server), unknown to ajv.
  const ajv = new Ajv({ allErrors: true, strict: false });
  return ajv.compile(schema);
}

const documents = (text: string) => parseAllDocuments(text).map((d) => d.toJS() as unknown);

const validProject = yaml`
  kind: Project
  name: shop
  defaultEnvironment: dev
  variables: { team: payments, replicas: 2, debug: false }
  environments:
    - name: dev
      defaultNamespace: shop-\${local.username}
      cleanup: { afterInactivity: 8h, action: delete }
    - name: preview
      cleanup: { afterInactivity: 2d }
  providers:
    - name: local
      shell: /bin/sh
    - name: cluster
      environments: [dev, preview]
      context: my-cluster
      namespace: \${environment.namespace}
      buildMode: kaniko
  server: http://localhost:7420
  ---
  kind: Build
  type: image
  name: api
  source: ./api
  include: ["**/*"]
  exclude: ["**/*.md"]
  timeout: 5m
  spec: { dockerfile: Dockerfile, buildArgs: { NODE_ENV: production } }
  ---
  kind: Deploy
  type: manifests
  name: api
  dependencies: [build.api]
  spec:
    files: [k8s/api.yaml]
    image: \${actions.build.api.outputs.image}
  ---
  kind: Test
  type: cmd
  name: api-integ
  description: integration tests
  dependencies: [deploy.api]
  spec: { command: [npm, run, integ], port: 8080 }
`;

describe('buildJsonSchema', () => {
  const validate = compile(buildJsonSchema(testPlugins));

  it('accepts every document of a valid configuration', () => {
    for (const doc of documents(validProject)) {
      expect(validate(doc), JSON.stringify(validate.errors)).toBe(true);
    }
  });

  it.each([
    [
      'an unknown key in the Project document',
      { kind: 'Project', name: 'shop', environments: [{ name: 'dev' }], nmae: 'x' },
    ],
    [
      'an unknown key in an environment',
      { kind: 'Project', name: 'shop', environments: [{ name: 'dev', defaultNamespce: 'x' }] },
    ],
    [
      'an unknown key in cleanup',
      {
        kind: 'Project',
        name: 'shop',
        environments: [{ name: 'dev', cleanup: { afterInactivity: '8h', after: 1 } }],
      },
    ],
    [
      'a bad cleanup duration',
      {
        kind: 'Project',
        name: 'shop',
        environments: [{ name: 'dev', cleanup: { afterInactivity: '8 hours' } }],
      },
    ],
    [
      'an unknown provider',
      { kind: 'Project', name: 'shop', environments: [{ name: 'dev' }], providers: [{ name: 'clustr' }] },
    ],
    [
      'an unknown key in a provider',
      {
        kind: 'Project',
        name: 'shop',
        environments: [{ name: 'dev' }],
        providers: [{ name: 'cluster', contxt: 'x' }],
      },
    ],
    [
      "another provider's key",
      {
        kind: 'Project',
        name: 'shop',
        environments: [{ name: 'dev' }],
        providers: [{ name: 'local', context: 'x' }],
      },
    ],
    ['an unknown kind', { kind: 'Deplyo', type: 'cmd', name: 'api' }],
    [
      'an unknown key in an action',
      { kind: 'Build', type: 'cmd', name: 'api', dependecies: [], spec: { command: ['make'] } },
    ],
    ['an invalid action name', { kind: 'Build', type: 'cmd', name: 'Api', spec: { command: ['make'] } }],
    ['an unknown action type', { kind: 'Build', type: 'cmnd', name: 'api' }],
    [
      'a type that does not support the kind',
      { kind: 'Deploy', type: 'image', name: 'api', spec: { dockerfile: 'D' } },
    ],
    [
      'an unknown key in a spec',
      { kind: 'Build', type: 'cmd', name: 'api', spec: { command: ['make'], cwd: '.' } },
    ],
    ['a spec of another kind', { kind: 'Build', type: 'image', name: 'api', spec: { command: ['make'] } }],
    [
      'a bad dependency reference',
      { kind: 'Build', type: 'cmd', name: 'api', dependencies: ['api'], spec: { command: ['make'] } },
    ],
  ])('rejects %s', (_name, doc) => {
    expect(validate(doc)).toBe(false);
  });

  it('covers the built-in plugins', async () => {
    const result = await schemaCommand();
    expect(result.exitCode).toBe(0);
    expect(JSON.parse(result.human)).toEqual(result.data);
    const validateBuiltin = compile(buildJsonSchema(builtinPlugins()));
    expect(
      validateBuiltin({
        kind: 'Project',
        name: 'shop',
        environments: [{ name: 'dev' }],
        providers: [{ name: 'exec' }],
      }),
    ).toBe(true);
    expect(validateBuiltin({ kind: 'Run', type: 'exec', name: 'seed', spec: { nope: true } })).toBe(false);
  });
});

describe('tend validate', () => {
  it('prints every action with its type, position and dependencies', async () => {
    const root = await writeProject({
      'tend.yml': yaml`
        kind: Project
        name: shop
        variables: { port: 8080 }
        environments: [{ name: dev, defaultNamespace: shop-dev }]
        providers: [{ name: local }]
        ---
        kind: Build
        type: cmd
        name: api
        spec: { command: [make] }
      `,
      'api/api.tend.yml': yaml`
        kind: Deploy
        type: cmd
        name: api
        spec:
          command: [serve, "\${actions.build.api.outputs.bin}"]
          port: \${var.port}
      `,
    });
    const result = await validateCommand({ root }, testPlugins);
    expect(result.exitCode).toBe(0);
    expect(result.data).toEqual({
      valid: true,
      project: 'shop',
      root,
      environment: 'dev',
      namespace: 'shop-dev',
      appNamespace: 'shop-dev',
      providers: ['local'],
      actions: [
        { ref: 'build.api', type: 'cmd', file: 'tend.yml', line: 7, column: 1, dependencies: [] },
        {
          ref: 'deploy.api',
          type: 'cmd',
          file: 'api/api.tend.yml',
          line: 1,
          column: 1,
          dependencies: ['build.api'],
        },
      ],
    });
    expect(result.human).toBe(
      [
        'project shop: environment dev, namespace shop-dev, providers local',
        '',
        'ACTION      TYPE  FILE                DEPENDENCIES',
        'build.api   cmd   tend.yml:7          -',
        'deploy.api  cmd   api/api.tend.yml:1  build.api',
        '',
        'configuration valid: 2 actions',
      ].join('\n'),
    );
  });

  it('checks resolved values against the spec schema', async () => {
    const root = await writeProject({
      'tend.yml': yaml`
        kind: Project
        name: shop
        variables: { port: http }
        environments: [{ name: dev, defaultNamespace: shop-dev }]
        providers: [{ name: local }]
        ---
        kind: Deploy
        type: cmd
        name: api
        spec:
          command: [serve]
          port: \${var.port}
      `,
    });
    await expect(validateCommand({ root }, testPlugins)).rejects.toMatchObject({
      code: 'TEND_CONFIG_INVALID',
      exitCode: 2,
      location: { file: 'tend.yml', line: 12, column: 9 },
      message:
        'invalid value for spec.port: expected a whole number, got "http" (after resolving template expressions)',
    });
    const ok = await validateCommand({ root, var: ['port=8080'] }, testPlugins);
    expect(ok.exitCode).toBe(0);
  });
});
