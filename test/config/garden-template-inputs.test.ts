/**
 * A RenderTemplate's `inputs` that read what is known only later (provider outputs, another
 * action's outputs) are resolved where they are used, when that place is: as Garden resolves
 * inputs lazily (core/src/config/template-contexts/render.ts), and exactly as the same expression
 * written in place. An input that reads a key nothing has is an error at the input's line.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { executeCommand } from '../../src/commands/execute.js';
import { validateCommand } from '../../src/commands/validate.js';
import type { TendError } from '../../src/errors.js';
import { makeProject, removeProjects } from '../helpers/project.js';

afterEach(removeProjects);

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
    const result = await executeCommand('run', ['via-input'], { root });
    const ran = result.data.actions.find((a) => a.ref === 'run.via-input');
    expect([ran?.state, ran?.error?.message, ran?.outputs?.log]).toEqual([
      'ready',
      undefined,
      'from-init first-log',
    ]);
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
