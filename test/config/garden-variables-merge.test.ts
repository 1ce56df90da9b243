/**
 * `$merge` directly in a `variables` map (Garden's variable-crossreferences and
 * variable-crossreferences-merge projects): the mapping it resolves to gives its keys to that
 * level's variables, keys written after it win and keys written before it lose (Garden's
 * ObjectSpreadLazyValue), and `${var.…}` in it reads the levels below (Garden's "merge in
 * variables from a lower precedence level"). Another `$` key there is still refused.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { configureAt, failure, specCommand } from '../helpers/configure.js';
import { removeProjects, writeProject, yaml } from './fixtures/project.js';

afterAll(removeProjects);

const command = (root: string) => specCommand(root, 'run.show');

const showVar = yaml`
  kind: Run
  type: exec
  name: show
  spec:
    command: ["\${jsonEncode(var)}"]
`;

const projectWith = (environmentVariables: string, projectVariables: string) =>
  yaml`
    apiVersion: garden.io/v2
    kind: Project
    name: merge
    environments:
      - name: local
        variables:
  ` +
  environmentVariables +
  yaml`
    providers: [{ name: exec }]
    variables:
  ` +
  projectVariables;

const indent = (spaces: number, text: string) =>
  text
    .split('\n')
    .map((line) => (line ? ' '.repeat(spaces) + line : line))
    .join('\n');

async function resolvedVar(files: Record<string, string>): Promise<unknown> {
  const [text] = (await command(await writeProject(files))) as [string];
  return JSON.parse(text);
}

describe('$merge directly in variables', () => {
  it("an environment's merges a project variable in (Garden's variable-crossreferences-merge)", async () => {
    const vars = await resolvedVar({
      'project.garden.yml': projectWith(
        indent(6, '$merge: ${var.patch}\npatch:\n  bar: baz\n'),
        indent(2, 'patch:\n  foo: bar\n'),
      ),
      'garden.yml': showVar,
    });
    expect(vars).toEqual({ patch: { foo: 'bar', bar: 'baz' }, foo: 'bar' });
  });

  it('a key written after it wins, as in Garden (keys of the project below are merged too)', async () => {
    const vars = await resolvedVar({
      'project.garden.yml': projectWith(
        indent(6, '$merge: ${var.patch}\nc: c-env-override\n'),
        indent(2, 'patch: { a: a-val }\nc: c-val\n'),
      ),
      'garden.yml': showVar,
    });
    expect(vars).toEqual({ patch: { a: 'a-val' }, a: 'a-val', c: 'c-env-override' });
  });

  it("an action's merges another action's variables; written before it loses, after it wins", async () => {
    const root = await writeProject({
      'project.garden.yml': projectWith(indent(6, 'level: env\n'), indent(2, 'p: 1\n')),
      'garden.yml': yaml`
        kind: Build
        type: exec
        name: base
        variables:
          foo0: bar0
          before: from-base
          after: from-base
        ---
        kind: Run
        type: exec
        name: show
        variables:
          before: own
          $merge: \${actions.build.base.var}
          after: own
          extra: x
        spec:
          command: ["\${var.foo0}", "\${var.before}", "\${var.after}", "\${var.extra}"]
      `,
    });
    expect(await command(root)).toEqual(['bar0', 'from-base', 'own', 'x']);
  });

  it("a 0.12 module's and a YAML varfile's merge the same way", async () => {
    const root = await writeProject({
      'project.garden.yml': yaml`
        apiVersion: garden.io/v1
        kind: Project
        name: modmerge
        environments:
          - name: local
            varfiles: [env.yaml]
        providers: [{ name: exec }]
        variables:
          common: { a: from-common, b: from-common }
          fromProject: { c: from-varfile }
      `,
      'env.yaml': '$merge: ${var.fromProject}\n',
      'm/garden.yml': yaml`
        kind: Module
        type: exec
        name: m
        variables:
          $merge: \${var.common}
          b: own
        tasks:
          - name: show
            command: [echo, "\${var.a} \${var.b} \${var.c}"]
      `,
    });
    // A module's task runs in a shell, as Garden 0.12's did.
    expect(((await command(root)) as string[]).at(-1)).toContain('from-common own from-varfile');
  });

  it('a $merge that is not a mapping is an error at its line', async () => {
    const root = await writeProject({
      'project.garden.yml': projectWith(indent(6, '$merge: ${var.name}\n'), indent(2, 'name: plain\n')),
      'garden.yml': showVar,
    });
    const error = await failure(command(root));
    expect(error.message).toMatch(
      /\$merge in environment local's variables needs a mapping \(got (a )?string\)/,
    );
    expect(error.location).toMatchObject({ file: 'project.garden.yml', line: 7 });
  });

  it('another $ key in variables is still refused, naming what is allowed', async () => {
    const root = await writeProject({
      'project.garden.yml': projectWith(indent(6, '$concat: [a]\n'), indent(2, 'p: 1\n')),
      'garden.yml': showVar,
    });
    const error = await failure(configureAt(root));
    expect(error.message).toContain('invalid key "$concat" in environments[0].variables');
    expect(error.message).toContain('$merge');
  });
});
