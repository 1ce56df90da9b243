/**
 * A ConfigTemplate whose `configs` are made with `$concat` and `$forEach` (Garden's
 * config-templates-with-templating project): expanded as Garden evaluates the list
 * (core/src/config/render-template.ts), `${item.*}`, `inputs`, `parent` and `template` read in
 * each config, its spec included; an item that has no kind once expanded says so, at its line.
 * Every error about a rendered config names what rendered it, once (its lines are the template's,
 * shared by each rendering): found as it loads, once its expressions resolve (by `tend validate`,
 * or as it runs with its dependencies' outputs), and across actions.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { validateCommand } from '../../src/commands/validate.js';
import { configureAt, configureError, failure, specCommand } from '../helpers/configure.js';
import { removeProjects, writeProject, yaml } from './fixtures/project.js';

afterAll(removeProjects);

const project = yaml`
  apiVersion: garden.io/v2
  kind: Project
  name: structured
  environments: [{ name: local }]
  providers: [{ name: exec }]
  variables:
    greeting: hi
`;

const render = yaml`
  kind: RenderTemplate
  template: runs
  name: my-runs
  inputs:
    names: ["run-a", "run-b", "skipped"]
`;

/** `file:line message` of each problem the error lists. */
const listed = (error: { detail?: Record<string, unknown> }) =>
  (error.detail as { errors: { message: string; location: { file: string; line: number } }[] }).errors.map(
    (e) => `${e.location.file}:${e.location.line} ${e.message}`,
  );

/** A project whose ConfigTemplate `runs` has these `configs` (indented by 2), rendered by `my-runs`. */
const withConfigs = (configs: string) =>
  writeProject({
    'project.garden.yml': project,
    'template.garden.yml':
      yaml`
        kind: ConfigTemplate
        name: runs
        inputs:
          names: { type: array }
        configs:
      ` + configs,
    'runs.garden.yml': render,
  });

describe("a ConfigTemplate's configs made with $concat and $forEach", () => {
  it('renders one config per item, each reading ${item.*} and the other contexts in its spec', async () => {
    const root = await withConfigs(yaml`
      - kind: Build
        type: exec
        name: \${parent.name}-base
      - $concat:
          $forEach: \${inputs.names}
          $filter: \${item.value != "skipped"}
          $return:
            kind: Run
            type: exec
            name: "\${item.value}"
            dependencies: ["build.\${parent.name}-base"]
            spec:
              command: ["echo", "\${item.value}", "\${item.key}", "\${var.greeting}", "\${template.name}"]
    `);
    const configuration = await configureAt(root);
    expect(configuration.actions.map((a) => a.ref).sort()).toEqual([
      'build.my-runs-base',
      'run.run-a',
      'run.run-b',
    ]);
    expect(await specCommand(root, 'run.run-a')).toEqual(['echo', 'run-a', 0, 'hi', 'runs']);
    expect(await specCommand(root, 'run.run-b')).toEqual(['echo', 'run-b', 1, 'hi', 'runs']);
  });

  it('an item that has no kind once expanded (a $forEach not in a $concat) says so at its line', async () => {
    const root = await withConfigs(yaml`
      - $forEach: \${inputs.names}
        $return:
          kind: Run
          type: exec
          name: "\${item.value}"
    `);
    const error = await failure(configureAt(root));
    expect(error.message).toContain('has no kind');
    expect(error.message).not.toContain('kind undefined');
    expect(error.location).toMatchObject({ file: 'template.garden.yml', line: 6 });
  });

  it('a $concat that does not give a list is an error at its line', async () => {
    const root = await withConfigs('  - $concat: ${parent.name}\n');
    const error = await failure(configureAt(root));
    expect(error.message).toMatch(/\$concat needs a list \(got (a )?string\)/);
    expect(error.location).toMatchObject({ file: 'template.garden.yml', line: 6 });
  });
});

describe('an error in a rendered config', () => {
  const template = yaml`
    kind: ConfigTemplate
    name: tpl
    configs:
      - kind: Run
        type: exec
        name: NAME
        spec:
          command: [echo, hi]
          bogus: 1
  `;
  const renders = yaml`
    kind: RenderTemplate
    template: tpl
    name: one
    ---
    kind: RenderTemplate
    template: tpl
    name: two
  `;

  it('is said once per RenderTemplate, at the template line, naming the RenderTemplate and its line', async () => {
    const root = await writeProject({
      'project.garden.yml': project,
      'template.garden.yml': template.replace('NAME', '${parent.name}-run'),
      'renders.garden.yml': renders,
    });
    const error = await failure(configureAt(root));
    const lines = error.message.split('\n').slice(0, -1);
    expect(lines).toEqual([
      'unknown key "bogus" in spec; expected one of: command, cwd, env, outputs (in ConfigTemplate tpl rendered by RenderTemplate one at renders.garden.yml:1:1)',
      'template.garden.yml:9:7: unknown key "bogus" in spec; expected one of: command, cwd, env, outputs (in ConfigTemplate tpl rendered by RenderTemplate two at renders.garden.yml:5:1)',
    ]);
    expect(error.location).toMatchObject({ file: 'template.garden.yml', line: 9 });
  });

  it('a key read as it loads that reads another context names the template and the RenderTemplate with its line', async () => {
    const root = await writeProject({
      'project.garden.yml': project,
      'template.garden.yml': template
        .replace('NAME', '${parent.name}-run\n    disabled: ${var.greeting}')
        .replace('      bogus: 1\n', ''),
      'renders.garden.yml': renders,
    });
    const because =
      'unknown key "var.greeting"; available: inputs, parent, template; a templated config\'s disabled is read when tend loads the configuration, so it may use inputs, parent and template only';
    expect(listed(await configureError(root))).toEqual([
      `template.garden.yml:7 ${because} (in ConfigTemplate tpl rendered by RenderTemplate one at renders.garden.yml:1:1)`,
      `template.garden.yml:7 ${because} (in ConfigTemplate tpl rendered by RenderTemplate two at renders.garden.yml:5:1)`,
    ]);
  });

  it('a config two RenderTemplates render under one name is a duplicate naming both', async () => {
    const root = await writeProject({
      'project.garden.yml': project,
      'template.garden.yml': template.replace('NAME', 'task').replace('      bogus: 1\n', ''),
      'renders.garden.yml': renders,
    });
    const error = await failure(configureAt(root));
    expect(error.message).toBe(
      'duplicate action run.task: RenderTemplate two at renders.garden.yml:5:1 renders it from template.garden.yml:6:11, as RenderTemplate one at renders.garden.yml:1:1 does; put ${parent.name} in the name of the config',
    );
  });

  it('one RenderTemplate rendering a config twice says so', async () => {
    const root = await writeProject({
      'project.garden.yml': project,
      'template.garden.yml': yaml`
        kind: ConfigTemplate
        name: tpl
        configs:
          - { kind: Run, type: exec, name: task, spec: { command: [a] } }
          - { kind: Run, type: exec, name: task, spec: { command: [b] } }
      `,
      'renders.garden.yml': 'kind: RenderTemplate\ntemplate: tpl\nname: one\n',
    });
    const error = await failure(configureAt(root));
    expect(error.message).toBe(
      'duplicate action run.task: RenderTemplate one at renders.garden.yml:1:1 renders it twice, from template.garden.yml:4:36 and template.garden.yml:5:36',
    );
  });

  it("a templated module's problem names the templated module that rendered it", async () => {
    const root = await writeProject({
      'project.garden.yml': project,
      'modules.garden.yml': yaml`
        kind: ModuleTemplate
        name: gen
        modules:
          - type: exec
            name: \${parent.name}-m
            generateFiles: [{ sourcePath: a.txt, targetPath: b.log }]
        ---
        kind: Module
        type: templated
        template: gen
        name: ma
      `,
    });
    const error = await failure(configureAt(root));
    expect(error.message).toContain(
      '(in template gen rendered by templated module ma at modules.garden.yml:8:1)',
    );
  });
});

const twoRenders = yaml`
  kind: RenderTemplate
  template: svc
  name: one
  inputs: { grace: 2 }
  ---
  kind: RenderTemplate
  template: svc
  name: two
  inputs: { grace: many }
`;

/** A project whose ConfigTemplate `svc` has this one config (indented by 2), rendered by `one` and `two`. */
const renderedTwice = (config: string, files: Record<string, string> = {}, projectFile = project) =>
  writeProject({
    'project.garden.yml': projectFile,
    'template.garden.yml': `kind: ConfigTemplate\nname: svc\nconfigs:\n${config}`,
    'renders.garden.yml': twoRenders,
    ...files,
  });

/** Its config a Deploy named `${parent.name}` depending on `run.gen`, this added to its spec (indented by 6). */
const withSpec = (spec: string, dependencies = '[run.gen]') =>
  renderedTwice(
    `  - kind: Deploy\n    type: exec\n    name: \${parent.name}\n    dependencies: ${dependencies}\n` +
      `    spec:\n      deployCommand: [echo]\n${spec}`,
    { 'gen.garden.yml': 'kind: Run\ntype: exec\nname: gen\nspec:\n  command: [echo, many]\n' },
  );

/** `file:line message` of each problem `tend validate` finds. */
const validationProblems = async (root: string) => listed(await failure(validateCommand({ root, var: [] })));

describe('an error about a rendered config found once it resolves, or across actions', () => {
  it('a value of the wrong type once resolved names the RenderTemplate (tend validate)', async () => {
    const root = await withSpec('      stopGracePeriod: ${inputs.grace}\n');
    const error = await failure(validateCommand({ root, var: [] }));
    expect(error.code).toBe('TEND_CONFIG_INVALID');
    expect(listed(error)).toEqual([
      'template.garden.yml:10 invalid value for spec.stopGracePeriod: expected a number, got "many" (after resolving template expressions) (in ConfigTemplate svc rendered by RenderTemplate two at renders.garden.yml:6:1)',
    ]);
  });

  it('a value of the wrong type once the outputs of other actions resolve (as it runs) names the RenderTemplate', async () => {
    const root = await withSpec('      stopGracePeriod: ${actions.run.gen.outputs.log}\n');
    const configuration = await configureAt(root);
    const deploy = configuration.actions.find((a) => a.ref === 'deploy.one')!;
    const resolved = configuration.resolveSpec(deploy, { dependencyOutputs: { 'run.gen': { log: 'many' } } });
    let error: unknown;
    try {
      configuration.checkSpec(deploy, resolved);
    } catch (caught) {
      error = caught;
    }
    expect(error).toMatchObject({
      code: 'TEND_CONFIG_INVALID',
      location: { file: 'template.garden.yml', line: 10 },
      message:
        'invalid value for spec.stopGracePeriod: expected a number, got "many" (after resolving template expressions) (in ConfigTemplate svc rendered by RenderTemplate one at renders.garden.yml:1:1)',
    });
  });

  it("a templated module's value of the wrong type once resolved names the templated module", async () => {
    const root = await writeProject({
      'project.garden.yml': project.replace('name: exec', 'name: local-kubernetes'),
      'modules.garden.yml': yaml`
        kind: ModuleTemplate
        name: gen
        modules:
          - type: container
            name: \${parent.name}-m
            image: nginx:alpine
            services:
              - name: \${parent.name}-s
                replicas: \${var.greeting}
        ---
        kind: Module
        type: templated
        template: gen
        name: ma
      `,
    });
    expect(await validationProblems(root)).toEqual([
      'modules.garden.yml:9 invalid value for spec.replicas: expected a whole number, got "hi" (after resolving template expressions) (in template gen rendered by templated module ma at modules.garden.yml:11:1)',
    ]);
  });

  it('a variable nothing declares is a note, as for an action written by hand', async () => {
    const root = await withSpec('      env: { GREETING: "${var.nothere}" }\n');
    const { exitCode, data } = await validateCommand({ root, var: [] });
    expect(exitCode).toBe(0);
    expect(data.notes?.map((n) => `${n.file}:${n.line} ${n.message}`)).toEqual([
      'template.garden.yml:10 deploy.one reads variable "nothere", which nothing declares: it runs only when given one (--var nothere=…)',
      'template.garden.yml:10 deploy.two reads variable "nothere", which nothing declares: it runs only when given one (--var nothere=…)',
    ]);
  });

  it('an unknown action among its dependencies names the RenderTemplate', async () => {
    const root = await withSpec('', '[run.gen, run.nope]');
    const error = await configureError(root);
    expect(listed(error)).toEqual([
      'template.garden.yml:7 unknown dependency "run.nope" of deploy.one; run actions: run.gen (in ConfigTemplate svc rendered by RenderTemplate one at renders.garden.yml:1:1)',
      'template.garden.yml:7 unknown dependency "run.nope" of deploy.two; run actions: run.gen (in ConfigTemplate svc rendered by RenderTemplate two at renders.garden.yml:6:1)',
    ]);
  });

  it('a problem of a file its type templates (manifestTemplates) names the RenderTemplate', async () => {
    const root = await renderedTwice(
      '  - { kind: Deploy, type: kubernetes, name: "${parent.name}", spec: { manifestTemplates: [config.yaml] } }\n',
      {
        'config.yaml':
          'apiVersion: v1\nkind: ConfigMap\nmetadata: { name: c }\ndata:\n  a: ${var.greeting.x}\n',
      },
      project.replace('name: exec', 'name: local-kubernetes'),
    );
    const problems = await validationProblems(root);
    expect(problems.map((line) => line.slice(0, line.indexOf(':', 'config.yaml:'.length)))).toEqual([
      'config.yaml:5 ConfigMap c',
      'config.yaml:5 ConfigMap c',
    ]);
    expect(problems.map((line) => line.slice(line.lastIndexOf(' (in ')))).toEqual([
      ' (in ConfigTemplate svc rendered by RenderTemplate one at renders.garden.yml:1:1)',
      ' (in ConfigTemplate svc rendered by RenderTemplate two at renders.garden.yml:6:1)',
    ]);
  });

  it('an action type whose provider the environment does not use names the RenderTemplate', async () => {
    const root = await renderedTwice(
      '  - { kind: Deploy, type: container, name: "${parent.name}", spec: { image: nginx } }\n',
      {},
      project
        .replace('[{ name: local }]', '[{ name: local }, { name: other }]')
        .replace('[{ name: exec }]', '[{ name: exec }, { name: local-kubernetes, environments: [other] }]'),
    );
    const problems = await validationProblems(root);
    expect(problems).toHaveLength(2);
    for (const [i, parent] of ['one at renders.garden.yml:1:1', 'two at renders.garden.yml:6:1'].entries()) {
      expect(problems[i]).toMatch(
        /^template\.garden\.yml:4 action type "container" comes from provider "kubernetes", which environment "local" does not use: /,
      );
      expect(problems[i]).toContain(
        `limit the action with environments: (in ConfigTemplate svc rendered by RenderTemplate ${parent})`,
      );
    }
  });

  it('a dependency that reads the environment and names no action names the RenderTemplate', async () => {
    const root = await withSpec('', '["run.${var.greeting}"]');
    expect(await configureError(root)).toMatchObject({
      code: 'TEND_CONFIG_INVALID',
      location: { file: 'template.garden.yml', line: 7 },
      message:
        'dependency "run.${var.greeting}" of deploy.one resolves to run.hi, which is not an action of this project (in ConfigTemplate svc rendered by RenderTemplate one at renders.garden.yml:1:1)',
    });
  });

  it("a rendered Workflow's problem names the RenderTemplate", async () => {
    const root = await renderedTwice(
      '  - kind: Workflow\n    name: ${parent.name}-wf\n    steps:\n      - {}\n',
    );
    expect(await validationProblems(root)).toEqual([
      'template.garden.yml:7 Workflow one-wf: a step needs one of command and script (in ConfigTemplate svc rendered by RenderTemplate one at renders.garden.yml:1:1)',
      'template.garden.yml:7 Workflow two-wf: a step needs one of command and script (in ConfigTemplate svc rendered by RenderTemplate two at renders.garden.yml:6:1)',
    ]);
  });

  it('each problem of a varfile whose path reads the environment names the RenderTemplate', async () => {
    const root = await renderedTwice(
      '  - kind: Deploy\n    type: exec\n    name: ${parent.name}\n    varfiles: ["${var.greeting}.yml"]\n' +
        '    spec: { deployCommand: [echo] }\n',
      { 'hi.yml': '- a\n- b\n' },
    );
    const problems = listed(await configureError(root));
    expect(problems.map((line) => line.slice(0, line.indexOf(' ')))).toEqual([
      'hi.yml:1',
      'hi.yml:1',
      'hi.yml:2',
    ]);
    expect(new Set(problems.map((line) => line.slice(line.lastIndexOf(' (in '))))).toEqual(
      new Set([' (in ConfigTemplate svc rendered by RenderTemplate one at renders.garden.yml:1:1)']),
    );
  });
});
