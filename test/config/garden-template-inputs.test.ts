/**
 * When what a rendered config reads is resolved. A RenderTemplate's `inputs` that read what is
 * known only later (provider outputs, another action's outputs) are resolved where they are used,
 * when that place is: as Garden resolves inputs lazily (core/src/config/template-contexts/render.ts),
 * and exactly as the same expression written in place. An input that reads a key nothing has is
 * an error at the input's line. A template's module is resolved key by key and value by value:
 * what reads only `inputs`, `parent` and `template` when the configuration is read (a task's name),
 * the rest when its action runs, those roots included; as Garden resolves a templated module's
 * core keys when it renders it and the rest in its ModuleConfigContext (render-template.ts).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { executeCommand } from '../../src/commands/execute.js';
import { validateCommand } from '../../src/commands/validate.js';
import type { TendError } from '../../src/errors.js';
import { makeProject, removeProjects } from '../helpers/project.js';

afterEach(removeProjects);

/** `tend run <name>`: the Run's state, error and log. */
async function runOutcome(root: string, name: string): Promise<unknown[]> {
  const result = await executeCommand('run', [name], { root });
  const ran = result.data.actions.find((a) => a.ref === `run.${name}`);
  return [ran?.state, ran?.error?.message, ran?.outputs?.log];
}

const project = `apiVersion: garden.io/v2
kind: Project
name: inputs-later
environments: [{ name: local }]
providers:
  - name: exec
    initScript: echo from-init
`;

const template = `kind: ConfigTemplate
name: tpl
configs:
  - kind: Run
    type: exec
    name: \${parent.name}
    dependencies: [run.first]
    spec:
      command: [echo, "\${inputs.log}", "\${inputs.first}"]
`;

/** The RenderTemplate: its inputs at lines 5 and 6 of render.garden.yml. */
const render = (log: string) => `kind: RenderTemplate
template: tpl
name: via-input
inputs:
  log: ${log}
  first: \${actions.run.first.outputs.log}
---
kind: Run
type: exec
name: first
spec:
  command: [echo, first-log]
`;

describe('an input that reads what is known only later', () => {
  it('validates, and the Run prints the provider output and the action output its inputs read', async () => {
    const root = makeProject({
      'project.garden.yml': project,
      'templates.garden.yml': template,
      'render.garden.yml': render('${providers.exec.outputs.initScript.log}'),
    });
    const validated = await validateCommand({ root, var: [] });
    expect(validated.exitCode).toBe(0);
    expect(validated.data.actions.map((a) => a.ref)).toEqual(['run.via-input', 'run.first']);
    expect(await runOutcome(root, 'via-input')).toEqual(['ready', undefined, 'from-init first-log']);
  });

  it("an input that reads a key nothing has is an error at the input's line", async () => {
    const root = makeProject({
      'project.garden.yml': project,
      'templates.garden.yml': template,
      'render.garden.yml': render('${var.nope}'),
    });
    const error = (await validateCommand({ root, var: [] }).catch((e: unknown) => e)) as TendError;
    const errors = (
      error.detail as { errors: { message: string; location: { file: string; line: number } }[] }
    ).errors;
    expect(errors.map((e) => `${e.location.file}:${e.location.line} ${e.message.split(';')[0]}`)).toEqual([
      'render.garden.yml:5 in input "inputs.log": unknown variable "var.nope"',
    ]);
  });
});

const moduleProject = `apiVersion: garden.io/v2
kind: Project
name: module-tpl
environments: [{ name: local }]
providers: [{ name: exec }]
variables:
  greeting: hello
---
kind: ConfigTemplate
name: tpl
modules:
  - type: exec
    name: \${parent.name}-module
    tasks:
      - name: \${parent.name}-task
        command: [echo, "\${var.greeting}", "\${parent.name} \${var.greeting}"]
---
kind: RenderTemplate
template: tpl
name: one
---
kind: RenderTemplate
template: tpl
name: two
`;

describe("a ConfigTemplate's module", () => {
  it('names its tasks from parent.name beside a command that reads variables; the task prints both', async () => {
    const root = makeProject({ 'project.garden.yml': moduleProject });
    const validated = await validateCommand({ root, var: [] });
    expect(validated.exitCode).toBe(0);
    expect(validated.data.actions.map((a) => a.ref).filter((ref) => ref.startsWith('run.'))).toEqual([
      'run.one-task',
      'run.two-task',
    ]);
    expect(await runOutcome(root, 'two-task')).toEqual(['ready', undefined, 'hello two hello']);
  });
});
