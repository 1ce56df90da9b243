/**
 * Garden's optional suffix `${…}?` read as the project's apiVersion has it (as Garden 0.13 does:
 * the Project's apiVersion decides for every file): without one, garden.io/v0 and v1 (and 0.12's
 * modules) every `${…}?` is optional, within a string too; garden.io/v2 the `?` is text. A
 * tend.yml project keeps tend's own reading: only a whole value is optional.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { TendError } from '../../src/errors.js';
import { configure, loadProjectConfig } from '../../src/config/pipeline.js';
import { resolveTemplates } from '../../src/config/template.js';
import { resolveTemplateText } from '../../src/config/template-text.js';
import { builtinPlugins } from '../../src/plugins/builtin.js';
import { removeProjects, writeProject, yaml } from './fixtures/project.js';

afterAll(removeProjects);

const gardenProject = (apiVersion: string | undefined) =>
  (apiVersion ? `apiVersion: ${apiVersion}\n` : '') +
  yaml`
    kind: Project
    name: q
    environments: [{ name: local }]
    providers: [{ name: exec }]
    variables:
      project: local
      flag: --flag=\${var.nope}?
  `;

const run = yaml`
  kind: Run
  type: exec
  name: show
  spec:
    command: [echo, "--project=\${var.project}?", "\${var.project}?", "--x=\${var.nope}?", "\${var.nope}?", "\${var.flag}"]
`;

const configureAt = (root: string) =>
  configure({ cwd: root, plugins: builtinPlugins(), secrets: () => Promise.resolve(undefined) });

/** The `command` of the spec of `ref`, resolved as it runs (or as `tend validate` resolves it). */
async function command(root: string, ref = 'run.show', keepActionOutputs = false): Promise<unknown> {
  const configuration = await configureAt(root);
  const action = configuration.actions.find((a) => a.ref === ref)!;
  return (configuration.resolveSpec(action, { keepActionOutputs }) as { command: unknown }).command;
}

async function failure(promise: Promise<unknown>): Promise<TendError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof TendError) return error;
    throw error;
  }
  throw new Error('expected a TendError');
}

describe("a Garden project's optional suffix, by its apiVersion", () => {
  it.each([undefined, 'garden.io/v0', 'garden.io/v1'])(
    'with apiVersion %s: every "${…}?" is optional, a missing key giving nothing',
    async (apiVersion) => {
      const root = await writeProject({
        'project.garden.yml': gardenProject(apiVersion),
        'show/garden.yml': run,
      });
      // A whole value whose key is not there is left out, as tend leaves out any value that is none.
      expect(await command(root)).toEqual(['echo', '--project=local', 'local', '--x=', '--flag=']);
    },
  );

  it('with apiVersion garden.io/v2: the "?" is text, and a key that is not there is an error at its line', async () => {
    const root = await writeProject({
      'project.garden.yml': gardenProject('garden.io/v2'),
      'show/garden.yml': run.replace(', "--x=${var.nope}?", "${var.nope}?", "${var.flag}"', ''),
    });
    expect(await command(root)).toEqual(['echo', '--project=local?', 'local?']);
    const missing = await writeProject({
      'project.garden.yml': gardenProject('garden.io/v2'),
      'show/garden.yml': run,
    });
    const error = await failure(command(missing));
    expect(error.code).toBe('TEND_TEMPLATE');
    expect(error.message).toMatch(/^unknown variable "var.nope"/);
    expect(error.location).toMatchObject({ file: 'show/garden.yml', line: 5 });
  });

  it('an unknown context in an optional expression is no value with garden.io/v0 and v1, the error at its line with v2', async () => {
    const unknownContext = run.replace(
      '"${var.flag}"',
      '"${var.flag}", "--y=${deploy.db}?", "${deploy.db}?"',
    );
    for (const apiVersion of [undefined, 'garden.io/v1']) {
      const root = await writeProject({
        'project.garden.yml': gardenProject(apiVersion),
        'show/garden.yml': unknownContext,
      });
      expect(await command(root)).toEqual(['echo', '--project=local', 'local', '--x=', '--flag=', '--y=']);
    }
    const strict = await writeProject({
      'project.garden.yml': gardenProject('garden.io/v2'),
      'show/garden.yml': unknownContext,
    });
    const error = await failure(configureAt(strict));
    expect(error.message).toMatch(/unknown template key "deploy\.db"/);
    expect(error.location).toMatchObject({ file: 'show/garden.yml', line: 5 });
  });

  it("is the Project's apiVersion, not the document's (Garden 0.13 ignores an action's)", async () => {
    const root = await writeProject({
      'project.garden.yml': gardenProject('garden.io/v2'),
      'show/garden.yml': `apiVersion: garden.io/v0\n${run.replace(', "--x=${var.nope}?", "${var.nope}?", "${var.flag}"', '')}`,
    });
    expect(await command(root)).toEqual(['echo', '--project=local?', 'local?']);
  });

  it("reads a 0.12 module's templates as Garden 0.13 does (a project without apiVersion)", async () => {
    const root = await writeProject({
      'project.garden.yml': gardenProject(undefined),
      'tools/garden.yml': yaml`
        kind: Module
        type: exec
        name: tools
        tasks:
          - name: show
            command: [echo, "--project=\${var.project}?", "--x=\${var.nope}?"]
      `,
    });
    // A 0.12 exec module's commands run with `shell: true`, as in Garden.
    expect(await command(root)).toEqual(['sh', '-c', 'echo --project=local --x=']);
  });

  it('keeps what reads action outputs for later, the optional parts beside them resolved (tend validate)', async () => {
    const root = await writeProject({
      'project.garden.yml': gardenProject('garden.io/v1'),
      'show/garden.yml': yaml`
        kind: Run
        type: exec
        name: first
        spec: { command: [echo, first] }
        ---
        kind: Run
        type: exec
        name: show
        dependencies: [run.first]
        spec:
          command: [echo, "--x=\${var.nope}?-\${actions.run.first.outputs.log}?-\${var.project}?"]
      `,
    });
    expect(await command(root, 'run.show', true)).toEqual([
      'echo',
      '--x=-${actions.run.first.outputs.log}?-local',
    ]);
  });

  it("resolves a RenderTemplate's keys, a Command's steps and templated files with the project's reading", async () => {
    const root = await writeProject({
      'project.garden.yml': gardenProject('garden.io/v1'),
      'templates.garden.yml': yaml`
        kind: ConfigTemplate
        name: runner
        configs:
          - kind: Run
            type: exec
            name: \${parent.name}\${inputs.suffix}?
            spec: { command: [echo, "\${inputs.suffix}?"] }
        ---
        kind: RenderTemplate
        template: runner
        name: rendered
        ---
        kind: Command
        name: say
        description: { short: say }
        exec: { command: [echo, "--project=\${var.project}?", "--x=\${var.nope}?"] }
      `,
    });
    expect(await command(root, 'run.rendered')).toEqual(['echo']);
    const configuration = await configureAt(root);
    const say = configuration.runnables.find((r) => r.value.name === 'say')!;
    const exec = (say.value as { exec: { command: unknown } }).exec;
    expect(resolveTemplates(exec.command, configuration.templateContext, () => say.locate([]))).toEqual([
      'echo',
      '--project=local',
      '--x=',
    ]);
    const text = resolveTemplateText(
      'name: ${var.project}?\nother: "${var.nope}?"\n',
      configuration.templateContext,
      {
        file: 'manifest.yaml',
        hint: 'list it under manifestFiles',
      },
    );
    expect(text).toBe('name: local\nother: ""\n');
  });
});

describe("tend's own reading (a tend.yml project, which has no apiVersion)", () => {
  it('is optional as a whole value only; after an expression within a string the "?" is text', async () => {
    const root = await writeProject({
      'tend.yml': gardenProject(undefined).replace('--flag=${var.nope}?', 'plain'),
      'show/show.tend.yml': run.replace(', "--x=${var.nope}?"', ''),
    });
    expect(await command(root)).toEqual(['echo', '--project=local?', 'local', 'plain']);
    const garden = await writeProject({
      'tend.yml': gardenProject(undefined).replace('--flag=${var.nope}?', 'plain'),
      'show/garden.yml': run,
    });
    const error = await failure(command(garden));
    expect(error.message).toMatch(/^unknown variable "var.nope"/);
    expect(error.location).toMatchObject({ file: 'show/garden.yml', line: 5 });
  });
});

describe('bad input', () => {
  it.each([undefined, 'garden.io/v2'])(
    'refuses "${if …}?" and an empty "${}?" at their file:line (apiVersion %s)',
    async (apiVersion) => {
      const root = await writeProject({
        'project.garden.yml': gardenProject(apiVersion),
        'show/garden.yml': yaml`
          kind: Run
          type: exec
          name: show
          spec:
            command: [echo, "\${if var.project}?yes\${endif}"]
            env:
              X: "a \${}?"
        `,
      });
      const error = await failure(loadProjectConfig({ cwd: root, plugins: builtinPlugins() }));
      expect(error.location).toEqual({ file: 'show/garden.yml', line: 5, column: 19 });
      expect(error.message).toContain(
        'invalid template expression "${if var.project}?": an ${if ...} cannot have the optional suffix "?"; remove the "?"',
      );
      expect(error.message).toContain(
        'show/garden.yml:7:8: invalid template expression "${}"; expected a value (a key, a literal, a function call or "("), found "}" at offset 2',
      );
    },
  );

  it('reads "${if …}?" in a tend.yml project as it always has: the "?" is text', async () => {
    const root = await writeProject({
      'tend.yml': gardenProject(undefined),
      'show/show.tend.yml': yaml`
        kind: Run
        type: exec
        name: show
        spec:
          command: [echo, "\${if var.project}?yes\${endif}"]
      `,
    });
    expect(await command(root)).toEqual(['echo', '?yes']);
  });
});
