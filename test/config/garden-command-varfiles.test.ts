/**
 * Garden's `command.*` template context (the command's name and parameters, as the CLI passes
 * them), and Garden's varfiles: dotenv files, project-level `varfile`, the default `garden.env`
 * and `garden.<env>.env`, and varfile paths with `${…}`.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { selectEnvironment } from '../../src/config/environment.js';
import { loadProjectConfig } from '../../src/config/pipeline.js';
import { builtinPlugins } from '../../src/plugins/builtin.js';
import { makeProject, removeProjects, runTend } from '../helpers/project.js';

afterEach(removeProjects);

const commandProject = `kind: Project
name: shop
defaultEnvironment: "\${command.name == 'deploy' ? 'prod' : 'dev'}"
environments:
  - name: dev
  - name: prod
    defaultNamespace: shop-\${command.name}
providers:
  - name: exec
---
kind: Deploy
type: exec
name: skipped-by-validate
disabled: "\${command.name == 'validate'}"
spec:
  command: [echo]
`;

describe('command.* as the CLI passes it', () => {
  it('command.name chooses the environment, its namespace and what is disabled', async () => {
    const root = makeProject({ 'tend.yml': commandProject });
    const validated = await runTend(['validate'], { cwd: root });
    expect(validated.code, validated.stderr).toBe(0);
    expect(validated.stdout).toContain('environment dev, namespace shop-');
    expect(validated.stdout).toMatch(
      /note: tend\.yml:\d+:\d+: deploy\.skipped-by-validate is disabled in environment dev/,
    );

    const deployed = await runTend(['deploy', '--json'], { cwd: root });
    expect(deployed.code, deployed.stderr).toBe(0);
    const data = JSON.parse(deployed.stdout) as {
      environment: string;
      namespace: string;
      actions: { ref: string }[];
    };
    expect([data.environment, data.namespace]).toEqual(['prod', 'shop-deploy']);
    expect(data.actions.map((a) => a.ref)).toEqual(['deploy.skipped-by-validate']);
  });

  it('command.params: the arguments by name, the options by their long name, defaults included', async () => {
    const root = makeProject({
      'tend.yml': `kind: Project
name: shop
environments: [{ name: dev }]
providers: [{ name: exec }]
---
kind: Run
type: exec
name: hello
spec:
  command: [sh, -c, "echo \${command.name}/\${command.params.names[0]}/\${command.params.concurrency}/\${command.params.show-output}/\${command.params.env || 'none'}"]
`,
    });
    const ran = await runTend(['run', 'hello', '--show-output'], { cwd: root });
    expect(ran.code, ran.stderr).toBe(0);
    expect(ran.stdout).toContain('run/hello/8/true/none');
  });
});

const load = async (root: string, env?: string) => {
  const { project } = await loadProjectConfig({ cwd: root, plugins: builtinPlugins() });
  return selectEnvironment(project, { env, vars: {} }).variables;
};

describe("Garden's varfiles", () => {
  it('garden.env and garden.<env>.env are read as dotenv when there, between the project, environment and their variables', async () => {
    const project = `apiVersion: garden.io/v2
kind: Project
name: shop
variables: { a: project, c: project, d: project }
environments:
  - name: dev
    variables: { b: environment, d: environment }
  - name: ci
providers:
  - name: local-kubernetes
`;
    const root = makeProject({
      'project.garden.yml': project,
      'garden.env': 'a=project-varfile\nd=project-varfile\n',
      'garden.dev.env': [
        '# a comment',
        'export b="environment\\nvarfile" # trailing comment',
        "e: 'single # not a comment'",
        'f=unquoted value # comment',
        'not an assignment',
        'g=',
      ].join('\n'),
    });
    // Garden's order: environment varfile > environment variables > project varfile > project variables.
    expect(await load(root, 'dev')).toEqual({
      a: 'project-varfile',
      b: 'environment\nvarfile',
      c: 'project',
      d: 'environment',
      e: 'single # not a comment',
      f: 'unquoted value',
      g: '',
    });
    // No garden.ci.env: nothing to read, no error.
    expect(await load(root, 'ci')).toEqual({ a: 'project-varfile', c: 'project', d: 'project-varfile' });
  });

  it('a varfile path with ${…} is resolved in the environment; a named varfile that is missing is an error at its line', async () => {
    const root = makeProject({
      'project.garden.yml': `apiVersion: garden.io/v2
kind: Project
name: shop
varfile: config/\${project.name}.json
variables: { region: eu }
environments:
  - name: dev
    varfile: config/\${environment.name}-\${var.region}.yml
  - name: ci
    varfile: config/ci.env
providers:
  - name: local-kubernetes
`,
      'config/shop.json': '{ "fromJson": 1 }',
      'config/dev-eu.yml': 'fromYaml: [1, 2]\n',
    });
    expect(await load(root, 'dev')).toEqual({ region: 'eu', fromJson: 1, fromYaml: [1, 2] });
    await expect(load(root, 'ci')).rejects.toMatchObject({
      code: 'TEND_CONFIG_NOT_FOUND',
      message: expect.stringMatching(/^varfile config\/ci\.env of environment ci does not exist/),
      location: { file: 'project.garden.yml', line: 10 },
    });
  });

  it("a missing named varfile's hint says what Garden allows: create it, or change or remove varfile: (repro: lesterlab)", async () => {
    const gardenProject = (varfile: string) => `apiVersion: garden.io/v2
kind: Project
name: shop
environments:
  - name: dev
    varfile: dev.yaml
varfile: ${varfile}
`;
    const root = makeProject({ 'project.garden.yml': gardenProject('.garden.vars.yaml') });
    const project = await runTend(['validate'], { cwd: root });
    expect(project.code).toBe(2);
    expect(project.stderr).toContain(
      'project.garden.yml:7:10: varfile .garden.vars.yaml of project shop does not exist',
    );
    expect(project.stderr).toContain(
      "create it, or change or remove varfile: (Garden's varfile is one path, which must exist unless it is the default garden.env)",
    );
    expect(project.stderr).not.toContain('optional');
    writeFileSync(path.join(root, '.garden.vars.yaml'), 'a: 1\n');
    const environment = await runTend(['validate'], { cwd: root });
    expect(environment.stderr).toContain(
      'project.garden.yml:6:14: varfile dev.yaml of environment dev does not exist',
    );
    expect(environment.stderr).toContain(
      "create it, or change or remove environments[0].varfile: (Garden's varfile is one path, which must exist unless it is the default garden.dev.env)",
    );
  });

  it.each([
    ['a list', '\n  - { path: .garden.vars.yaml, optional: true }', '7:1', 'a list'],
    ['a mapping', '{ path: .garden.vars.yaml, optional: true }', '7:1', 'a mapping'],
  ])(
    "a varfile: that is %s is refused at varfile, as Garden's schema refuses it",
    async (_, value, at, got) => {
      const root = makeProject({
        'project.garden.yml': `apiVersion: garden.io/v2
kind: Project
name: shop
environments:
  - name: dev
    varfile: { path: dev.yaml }
varfile: ${value}
`,
      });
      const run = await runTend(['validate'], { cwd: root });
      expect(run.code).toBe(2);
      expect(run.stderr).toContain(
        `project.garden.yml:${at}: varfile must be a path (a string), as in Garden; got ${got}`,
      );
      expect(run.stderr).toContain(
        'project.garden.yml:6:5: environments[0].varfile must be a path (a string), as in Garden; got a mapping',
      );
      expect(run.stderr).not.toContain('varfiles');
    },
  );

  it('a varfile not named .json, .yml or .yaml is dotenv, as Garden reads it (.env.local, .env.example, no extension)', async () => {
    const root = makeProject({
      'tend.yml': `kind: Project
name: shop
varfiles: [.env.example, .env.local, settings, shared.JSON, more.Yml]
environments: [{ name: dev }]
`,
      '.env.example': 'FOO=example\nBAZ="q u x"\n',
      '.env.local': 'FOO=local\n',
      settings: 'export REGION=north # a comment\n',
      'shared.JSON': '{ "count": 3 }\n',
      'more.Yml': 'nested: { a: [1] }\n',
    });
    expect(await load(root)).toEqual({
      FOO: 'local',
      BAZ: 'q u x',
      REGION: 'north',
      count: 3,
      nested: { a: [1] },
    });
  });

  it("tend's own project varfiles; a dotenv name that is not a variable name is refused at its line", async () => {
    const root = makeProject({
      'tend.yml': `kind: Project
name: shop
varfiles: [shared.env]
environments: [{ name: dev }]
`,
      'shared.env': 'ok=1\n\n9lives=no\n',
    });
    await expect(load(root)).rejects.toMatchObject({
      message: expect.stringContaining('invalid variable name "9lives"'),
      location: { file: 'shared.env', line: 3, column: 1 },
    });
  });
});

describe("the validate header's namespace", () => {
  it("names the provider's namespace where objects go (Garden's namespace: {name}), beside the environment's", async () => {
    const root = makeProject({
      'project.garden.yml': `apiVersion: garden.io/v2
kind: Project
name: shop
environments:
  - name: local
    defaultNamespace: shop-local
  - name: same
    defaultNamespace: shop-same
providers:
  - name: local-kubernetes
    environments: [local]
    namespace: { name: "\${project.name}-apps" }
  - name: local-kubernetes
    environments: [same]
    namespace: \${environment.namespace}
`,
    });
    const local = await runTend(['validate'], { cwd: root });
    expect(local.code, local.stderr).toBe(0);
    expect(local.stdout.split('\n')[0]).toBe(
      "project shop: environment local, namespace shop-apps (provider kubernetes's namespace; the environment's is shop-local), providers kubernetes, exec",
    );
    const same = await runTend(['validate', '--env', 'same'], { cwd: root });
    expect(same.stdout.split('\n')[0]).toBe(
      'project shop: environment same, namespace shop-same, providers kubernetes, exec',
    );
  });
});
