/**
 * A ConfigTemplate whose `configs` are made with `$concat` and `$forEach` (Garden's
 * config-templates-with-templating project): expanded as Garden evaluates the list
 * (core/src/config/render-template.ts), `${item.*}`, `inputs`, `parent` and `template` read in
 * each config, its spec included; an item that has no kind once expanded says so, at its line.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { configureAt, failure, specCommand } from './fixtures/configure.js';
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
