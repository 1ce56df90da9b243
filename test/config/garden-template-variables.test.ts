/**
 * The `variables` and `varfiles` of a config a Garden ConfigTemplate renders read the
 * RenderTemplate's `${inputs.*}`, `${parent.name}` and `${template.name}`, as Garden evaluates
 * every key of a rendered config in that context (core/src/config/render-template.ts; its
 * ActionSpecContext resolves an action's variables with its inputs): validated, and the values
 * printed by exec actions. Another action reading such a variable (`actions.<kind>.<name>.var`)
 * gets the owner's inputs.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { executeCommand } from '../../src/commands/execute.js';
import { validateCommand } from '../../src/commands/validate.js';
import type { TendError } from '../../src/errors.js';
import { makeProject, removeProjects } from '../helpers/project.js';

afterEach(removeProjects);

const project = `apiVersion: garden.io/v1
kind: Project
name: tplvars
environments: [{ name: local }]
providers: [{ name: exec }]
variables:
  greeting: hello
`;

/** A template whose config's variables read its inputs, parent and template, and other variables. */
const template = `kind: ConfigTemplate
name: greeter
inputs:
  username: { type: string }
  env: { type: string, default: dev }
configs:
  - kind: Run
    type: exec
    name: \${parent.name}
    variables:
      user: \${inputs.username}
      owner: \${parent.name}
      from: \${template.name}
      line: \${var.greeting} \${var.user}
      unread: \${inputs.username}-unused
    varfiles: ["\${inputs.env}.yaml"]
    spec:
      command: [echo, "\${var.line}", "\${var.owner}", "\${var.from}", "\${var.fromFile}"]
`;

const render = (name: string, username: string) => `kind: RenderTemplate
template: greeter
name: ${name}
inputs:
  username: ${username}
`;

/** The `log` output of each action a run ran, by reference. */
async function runLogs(root: string, name: string): Promise<Record<string, unknown>> {
  const result = await executeCommand('run', [name], { root });
  expect(result.data.actions.map((a) => [a.ref, a.state, a.error?.message])).toContainEqual([
    `run.${name}`,
    'ready',
    undefined,
  ]);
  return Object.fromEntries(result.data.actions.map((a) => [a.ref, a.outputs?.log]));
}

describe("a rendered config's variables read inputs, parent and template", () => {
  it('validates, and the Run prints the values its variables took from the RenderTemplate', async () => {
    const root = makeProject({
      'project.garden.yml': project,
      'templates.garden.yml': template,
      'garden.yml': `${render('alice-run', 'alice')}---\n${render('bob-run', 'bob')}`,
      'dev.yaml': 'fromFile: from-dev\n',
    });
    const validated = await validateCommand({ root, var: [] });
    expect(validated.exitCode).toBe(0);
    expect(validated.data.actions.map((a) => a.ref)).toEqual(['run.alice-run', 'run.bob-run']);
    expect(await runLogs(root, 'alice-run')).toEqual({
      'run.alice-run': 'hello alice alice-run greeter from-dev',
    });
    expect(await runLogs(root, 'bob-run')).toEqual({ 'run.bob-run': 'hello bob bob-run greeter from-dev' });
  });

  it("a varfile path reads the inputs; another action reads a rendered action's variable with that action's inputs", async () => {
    const root = makeProject({
      'project.garden.yml': project,
      'templates.garden.yml': template,
      'garden.yml': `${render('alice-run', 'alice')}---
kind: RenderTemplate
template: greeter
name: carol-run
inputs: { username: carol, env: prod }
---
kind: Run
type: exec
name: reader
dependencies: [run.alice-run]
spec:
  command: [echo, "\${actions.run.alice-run.var.line}", "\${actions.run.carol-run.var.fromFile}"]
`,
      'dev.yaml': 'fromFile: from-dev\n',
      'prod.yaml': 'fromFile: from-prod\n',
    });
    expect((await validateCommand({ root, var: [] })).exitCode).toBe(0);
    expect(await runLogs(root, 'carol-run')).toEqual({
      'run.carol-run': 'hello carol carol-run greeter from-prod',
    });
    expect((await runLogs(root, 'reader'))['run.reader']).toBe('hello alice from-prod');
  });

  it('an action no template rendered may not read inputs in its variables: an error at its line', async () => {
    const root = makeProject({
      'project.garden.yml': project,
      'garden.yml': `kind: Run
type: exec
name: plain
variables:
  user: \${inputs.username}
spec:
  command: [echo, "\${var.user}"]
`,
    });
    let error: TendError | undefined;
    try {
      await validateCommand({ root, var: [] });
    } catch (caught) {
      error = caught as TendError;
    }
    const errors = (
      error?.detail as { errors: { message: string; location: { file: string; line: number } }[] }
    )?.errors;
    expect(errors?.map((e) => `${e.location.file}:${e.location.line} ${e.message.split('\n')[0]}`)).toEqual([
      'garden.yml:5 unknown template key "inputs.username"; available: project, environment, var, local, actions',
    ]);
  });
});

describe('`${var}` and `${variables}` as a whole', () => {
  it('are every variable, resolved, as Garden gives them: contains, jsonEncode, a conditional', async () => {
    const root = makeProject({
      'project.garden.yml': `${project}  cluster-name: formance
  tagged: \${var.greeting}-tag
`,
      'garden.yml': `kind: Run
type: exec
name: dump
spec:
  command:
    - echo
    - '\${variables contains "cluster-name" ? "has-cluster-name" : "no-cluster-name"}'
    - '\${var contains "network" ? "--network " + var.network : "no-network"}'
    - '\${jsonEncode(var)}'
`,
    });
    expect((await validateCommand({ root, var: [] })).exitCode).toBe(0);
    expect(await runLogs(root, 'dump')).toEqual({
      'run.dump':
        'has-cluster-name no-network {"greeting":"hello","cluster-name":"formance","tagged":"hello-tag"}',
    });
  });

  it('a variable that cannot be resolved is the error of the whole, not left out', async () => {
    const root = makeProject({
      'project.garden.yml': `${project}  unset: \${local.env.TEND_TEST_NOT_SET_WHOLE}
`,
      'garden.yml': `kind: Run
type: exec
name: dump
spec:
  command: [echo, '\${jsonEncode(var)}']
`,
    });
    const error = (await validateCommand({ root, var: [] }).catch((e: unknown) => e)) as TendError;
    expect(error.message).toContain('environment variable "TEND_TEST_NOT_SET_WHOLE" is not set');
  });
});
