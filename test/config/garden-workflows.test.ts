/**
 * Garden's Workflows and custom Commands as `tend validate` reads them: listed, with notes for
 * what tend accepts and ignores, every bad step an error at its file:line, and one that runs a
 * Garden command tend does not have listed and not run; and the order in
 * which steps run (`when`), as Garden decides it.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { customCommand } from '../../src/commands/custom-command.js';
import { validateCommand } from '../../src/commands/validate.js';
import { workflowCommand } from '../../src/commands/workflow.js';
import { isDropped } from '../../src/commands/steps.js';
import { tendCommandLine } from '../../src/config/garden/step-commands.js';
import type { TendError } from '../../src/errors.js';
import { makeProject, removeProjects } from '../helpers/project.js';

afterAll(removeProjects);

const project = `apiVersion: garden.io/v2
kind: Project
name: wf
environments:
  - name: local
`;

async function errors(files: Record<string, string>): Promise<string[]> {
  try {
    await validateCommand({ root: makeProject({ 'project.garden.yml': project, ...files }), var: [] });
  } catch (error) {
    const detail = (error as TendError).detail as {
      errors: { code: string; message: string; location: { file: string; line: number; column: number } }[];
    };
    return detail.errors.map(
      (e) => `${e.code} ${e.location.file}:${e.location.line}:${e.location.column} ${e.message}`,
    );
  }
  return [];
}

describe('tend validate with Workflows and Commands', () => {
  it('lists them, with notes for Garden Cloud keys, a name of a tend command and a Command outside the root', async () => {
    const root = makeProject({
      'project.garden.yml': project,
      'workflows.garden.yml': `kind: Workflow
name: ci
limits: { cpu: 1000 }
triggers:
  - environment: local
    events: [pull-request]
steps:
  - command: [deploy]
  - command: [run, "\${var.task}"]
  - command: [get, status]
  - script: echo hi
---
kind: Command
name: status
description: { short: collides }
exec: { command: [echo] }
---
kind: Command
name: hello
description: { short: greets }
steps:
  - gardenCommand: [hello-again]
  - script: echo hi
---
kind: Command
name: hello-again
description: { short: greets again }
gardenCommand: [workflow, ci]
`,
      'sub/garden.yml': `kind: Command
name: elsewhere
description: { short: not at the root }
exec: { command: [echo] }
`,
    });
    const result = await validateCommand({ root, var: [] });
    expect(result.exitCode).toBe(0);
    expect(result.data.workflows).toEqual([{ name: 'ci', steps: 4, file: 'workflows.garden.yml', line: 1 }]);
    expect(result.data.commands?.map((c) => `${c.name}: ${c.runAs}`)).toEqual([
      'status: tend command status',
      'hello: tend hello',
      'hello-again: tend hello-again',
    ]);
    expect(result.data.notes?.map((n) => `${n.file}:${n.line}: ${n.message}`)).toEqual([
      'sub/garden.yml:1: Command elsewhere: custom commands are read from the files at the project root only (as Garden reads them); not offered',
      'workflows.garden.yml:14: Command status has the name of a tend command: it runs as `tend command status` only',
      'workflows.garden.yml:3: Workflow ci: limits and triggers are for Garden Cloud; accepted and ignored',
    ]);
    expect(result.human).toContain('workflow ci: 4 step(s), workflows.garden.yml:1 (tend workflow ci)');
    expect(result.human).toContain('command status: workflows.garden.yml:13 (tend command status)');
  });

  it("skips a Command named like one of Garden's commands, unchecked, with a note (Garden's custom-commands)", async () => {
    const ignored = (name: string) => `kind: Command
name: ${name}
exec:
  command: [echo, oops!]
`;
    const root = makeProject({
      'project.garden.yml': project,
      'commands.garden.yml': [ignored('plugins'), ignored('plugin'), ignored('deploy')].join('---\n'),
    });
    const result = await validateCommand({ root, var: [] });
    expect(result.exitCode).toBe(0);
    expect(result.data.commands ?? []).toEqual([]);
    expect(result.data.notes?.map((n) => `${n.file}:${n.line}: ${n.message}`)).toEqual(
      ['plugins', 'plugin', 'deploy'].map(
        (name, i) =>
          `commands.garden.yml:${2 + 5 * i}: Command ${name}: the name of one of Garden's own commands (Garden ignores the Command); not offered`,
      ),
    );
  });

  it('a bad step is an error at its file:line: command and script both, a command not a list, a bad when', async () => {
    expect(
      await errors({
        'workflows.garden.yml': `kind: Workflow
name: ci
steps:
  - command: [deploy, api]
  - command: [deploy]
    script: echo both
  - command: deploy
  - script: echo fine
    when: sometimes
  - {}
---
kind: Workflow
name: files
files:
  - path: ../outside
    data: x
steps:
  - script: echo
---
kind: Command
name: bare
exec: { command: echo }
`,
      }),
    ).toEqual([
      'TEND_CONFIG_INVALID workflows.garden.yml:6:5 Workflow ci: a step has command and script: give exactly one of command and script',
      'TEND_CONFIG_INVALID workflows.garden.yml:7:5 Workflow ci: command must be a list of words, e.g. [deploy] or [run, my-task] (got the string "deploy")',
      'TEND_CONFIG_INVALID workflows.garden.yml:9:5 Workflow ci: when must be one of onSuccess, onError, always, never',
      'TEND_CONFIG_INVALID workflows.garden.yml:10:5 Workflow ci: a step needs one of command and script',
      'TEND_CONFIG_INVALID workflows.garden.yml:15:5 Workflow files: ../outside is not inside the project root',
      'TEND_CONFIG_INVALID workflows.garden.yml:20:1 Command bare: needs description.short',
      'TEND_CONFIG_INVALID workflows.garden.yml:22:1 Command bare: exec needs command: a list, the program and its arguments (e.g. [sh, -c, "…"])',
    ]);
  });
});

describe('a Workflow or Command with a Garden command tend does not run', () => {
  it('is listed, not run: a note at the step, never a validate error; running it is the error, the others run', async () => {
    const root = makeProject({
      'project.garden.yml': project,
      'workflows.garden.yml': `kind: Workflow
name: ci
steps:
  - script: echo first
  - command: [publish, --all]
---
kind: Workflow
name: fine
steps:
  - script: echo fine
---
kind: Command
name: test-lib
description: { short: tests the library in the running app }
gardenCommand: [exec, app, /bin/sh, test]
`,
    });
    const result = await validateCommand({ root, var: [] });
    expect(result.exitCode).toBe(0);
    const reason =
      'Garden command "publish --all" is not one tend runs; a step runs build, deploy, test, run, validate, logs, workflow, get status, get workflows, cleanup namespace, cleanup deploy, delete environment, delete env, delete namespace, delete deploy and delete service, or a custom command of the project (test-lib); use a script step for anything else';
    expect(result.data.workflows).toEqual([
      { name: 'ci', steps: 2, file: 'workflows.garden.yml', line: 1, notRun: `Workflow ci: ${reason}` },
      { name: 'fine', steps: 1, file: 'workflows.garden.yml', line: 7 },
    ]);
    expect(result.data.commands?.map((c) => c.notRun)).toEqual([
      expect.stringMatching(
        /^Command test-lib: Garden command "exec app \/bin\/sh test" is not one tend runs/,
      ),
    ]);
    expect(result.data.notes?.map((n) => `${n.file}:${n.line}:${n.column}: ${n.message}`)).toEqual([
      expect.stringMatching(
        /^workflows\.garden\.yml:15:17: Command test-lib is listed, not run: Garden command "exec/,
      ),
      `workflows.garden.yml:5:15: Workflow ci is listed, not run: ${reason}`,
    ]);
    expect(result.human).toContain('workflow ci: 2 step(s), workflows.garden.yml:1 (not run: see its note)');
    expect(result.human).toContain('workflow fine: 1 step(s), workflows.garden.yml:7 (tend workflow fine)');
    expect(result.human).toContain('command test-lib: workflows.garden.yml:12 (not run: see its note)');

    const refused = (await workflowCommand('ci', { root, var: [] }).catch((e: unknown) => e)) as TendError;
    expect([refused.code, refused.message, refused.location]).toEqual([
      'TEND_CONFIG_UNSUPPORTED',
      `Workflow ci: ${reason}`,
      { file: 'workflows.garden.yml', line: 5, column: 15 },
    ]);
    const command = (await customCommand('test-lib', [], { root, var: [] }).catch(
      (e: unknown) => e,
    )) as TendError;
    expect(command.code).toBe('TEND_CONFIG_UNSUPPORTED');
    const fine = await workflowCommand('fine', { root, var: [] });
    expect([fine.exitCode, (fine.data as { succeeded: boolean }).succeeded]).toEqual([0, true]);
  });
});

describe('a Workflow a ConfigTemplate renders', () => {
  it("is listed, its steps kept for the run (they read the project's contexts)", async () => {
    const root = makeProject({
      'project.garden.yml': `${project}---
kind: ConfigTemplate
name: wft
configs:
  - kind: Workflow
    name: \${parent.name}-wf
    steps:
      - script: echo "\${var.v}"
---
kind: RenderTemplate
name: r1
template: wft
`,
    });
    const result = await validateCommand({ root, var: [] });
    expect(result.data.workflows).toEqual([
      { name: 'r1-wf', steps: 1, file: 'project.garden.yml', line: 10 },
    ]);
  });

  it('its steps, envVars and files read inputs, parent and template, as Garden gives them there', async () => {
    const root = makeProject({
      'project.garden.yml': `${project}---
kind: ConfigTemplate
name: workflows
configs:
  - kind: Workflow
    name: \${parent.name}-\${inputs.name}
    envVars: { FROM: "\${template.name}" }
    files: [{ path: "\${inputs.name}.txt", data: "\${parent.name}" }]
    steps:
      - script: echo "\${inputs.name} \${parent.name} $FROM $(cat \${inputs.name}.txt)" > out.txt
---
kind: RenderTemplate
template: workflows
name: foo
inputs:
  name: test
`,
    });
    expect((await validateCommand({ root, var: [] })).exitCode).toBe(0);
    const ran = await workflowCommand('foo-test', { root, var: [] });
    expect([ran.exitCode, (ran.data as { steps: unknown[] }).steps]).toEqual([
      0,
      [expect.objectContaining({ name: 'step-1', state: 'succeeded' })],
    ]);
    expect(readFileSync(path.join(root, 'out.txt'), 'utf8')).toBe('test foo workflows foo\n');
  });

  it("an unknown key in a step lists what steps read: not actions, nor a template's inputs outside one", async () => {
    const root = makeProject({
      'project.garden.yml': `${project}---
kind: Workflow
name: plain
steps:
  - script: echo "\${inputs.name}"
`,
    });
    const ran = await workflowCommand('plain', { root, var: [] });
    expect((ran.data as { steps: { reason?: string }[] }).steps.map((s) => s.reason)).toEqual([
      'project.garden.yml:10:13: unknown key "inputs.name"; available: project, environment, var, local, git, datetime, steps',
    ]);
  });
});

describe("Garden's commands as tend's", () => {
  it.each<[string[], string[] | string]>([
    [
      ['deploy', 'api', '--force'],
      ['deploy', 'api', '--force'],
    ],
    [
      ['run', 'db-clear'],
      ['run', 'db-clear'],
    ],
    [['get', 'status'], ['status']],
    [
      ['cleanup', 'namespace'],
      ['cleanup', 'env'],
    ],
    [
      ['delete', 'service', 'api'],
      ['cleanup', 'deploy', 'api'],
    ],
    [['deploy', '--log-level', 'debug', '--silent'], ['deploy']],
    [
      ['my-command', 'x'],
      ['command', 'my-command', 'x'],
    ],
    [['publish'], 'Garden command "publish" is not one tend runs'],
    // Garden 0.12's spellings, which Garden 0.14 still runs.
    [
      ['run', 'task', 'seed-volume-lib'],
      ['run', 'seed-volume-lib'],
    ],
    [
      ['run', 'test', 'unit'],
      ['test', 'unit'],
    ],
    [
      ['run', 'workflow', 'full-test'],
      ['workflow', 'full-test'],
    ],
    [['run', 'module', 'api'], 'Garden command "run module" was removed in Garden 0.13'],
    [['run', 'service', 'api'], 'Garden command "run service" was removed in Garden 0.13'],
  ])('%j', (words, expected) => {
    const line = tendCommandLine(words, ['my-command']);
    if (typeof expected === 'string') expect('problem' in line && line.problem).toContain(expected);
    else expect(line).toEqual({ argv: expected });
  });
});

describe('which steps run (when), as Garden decides', () => {
  // Garden's guide: my-task fails; the two onError after it run, deploy and test do not, the
  // onError after test does not (its failure is an earlier sequence's), always runs.
  const steps = (
    ['onSuccess', 'onError', 'onError', 'onSuccess', 'onSuccess', 'onError', 'always'] as const
  ).map((when) => ({ when }));
  it('after a failure of the first step', () => {
    const errors = new Set([0]);
    expect(steps.map((_, i) => (isDropped(i, steps, errors) ? 'dropped' : 'runs'))).toEqual([
      'runs', // (it ran: a failure counts for the steps after it)
      'runs',
      'runs',
      'dropped',
      'dropped',
      'dropped',
      'runs',
    ]);
  });
  it('without failures: onError and never are left out', () => {
    const all = [...steps, { when: 'never' as const }];
    expect(all.map((_, i) => isDropped(i, all, new Set()))).toEqual([
      false,
      true,
      true,
      false,
      false,
      true,
      false,
      true,
    ]);
  });
});
