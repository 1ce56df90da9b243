/**
 * An action named on the command line that is disabled in the environment, as Garden's commands
 * treat it: `run X --force` runs a disabled Run (without --force it is noted and not run),
 * `deploy X` notes a disabled Deploy and deploys nothing (--force or not), `test X` and `build X`
 * refuse it. Never "no action named X": the message says it is disabled, where, and what to do.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { executeCommand } from '../../src/commands/execute.js';
import { TendError } from '../../src/errors.js';
import { makeProject, removeProjects, runTend } from '../helpers/project.js';
import { streamEnv } from '../stream/helpers.js';

afterEach(removeProjects);

const project = () =>
  makeProject({
    'project.garden.yml': `kind: Project
name: disabled-named
environments:
  - name: local
  - name: other
providers:
  - name: exec
---
kind: Run
type: exec
name: hello
disabled: true
dependencies: [build.tools, deploy.db]
spec:
  command: [sh, -c, "touch hello-ran"]
---
kind: Build
type: exec
name: tools
disabled: true
spec:
  command: [sh, -c, "touch tools-built"]
---
kind: Deploy
type: exec
name: db
disabled: true
spec:
  deployCommand: [sh, -c, "touch db-deployed"]
---
kind: Test
type: exec
name: e2e
environments: [other]
dependencies: [run.hello]
spec:
  command: [sh, -c, "touch e2e-ran"]
---
kind: Run
type: exec
name: after
dependencies: [run.hello]
spec:
  command: [sh, -c, "touch after-ran"]
`,
  });

const ran = (root: string, file: string) => existsSync(path.join(root, file));

async function refusal(run: Promise<unknown>): Promise<TendError> {
  const error = await run.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(TendError);
  return error as TendError;
}

describe('run <name> of a disabled Run', () => {
  it('with --force runs it, and the disabled Build it needs; its disabled Deploy dependency is left out', async () => {
    const root = project();
    const result = await executeCommand('run', ['hello'], { root, force: true });
    expect(result.exitCode, JSON.stringify(result.data)).toBe(0);
    expect(result.data.actions.map((a) => `${a.ref} ${a.state}`).sort()).toEqual([
      'build.tools ready',
      'run.hello ready',
    ]);
    expect([ran(root, 'hello-ran'), ran(root, 'tools-built'), ran(root, 'db-deployed')]).toEqual([
      true,
      true,
      false,
    ]);
  });

  it('without --force says it is disabled, where, and how to run it; runs nothing, exits 0', async () => {
    const root = project();
    const result = await executeCommand('run', ['hello'], { root });
    expect(result.exitCode).toBe(0);
    const line =
      'run.hello is disabled in environment local (project.garden.yml:12:11); not run: pass --force to run it anyway';
    expect(result.data.notRun).toEqual([line]);
    expect(result.human.split('\n')[0]).toBe(line);
    expect(result.data.actions).toEqual([]);
    expect(ran(root, 'hello-ran')).toBe(false);
  });

  it('an action that depends on it still runs without it, --force or not', async () => {
    const root = project();
    const result = await executeCommand('run', ['after'], { root, force: true });
    expect(result.exitCode).toBe(0);
    expect(result.data.actions.map((a) => a.ref)).toEqual(['run.after']);
    expect(ran(root, 'hello-ran')).toBe(false);
  });

  it('a Run that does not exist is still reported as such', async () => {
    const error = await refusal(executeCommand('run', ['nope'], { root: project(), force: true }));
    expect(error.code).toBe('TEND_ACTION_NOT_FOUND');
    expect(error.message).toBe('no Run action named "nope"; defined: after');
  });

  it('the CLI, as the survey ran it: tend run hello --force', async () => {
    const root = project();
    const run = await runTend(['run', 'hello', '--force'], {
      cwd: root,
      env: streamEnv(undefined, undefined),
    });
    expect(run.code, run.stderr).toBe(0);
    expect(ran(root, 'hello-ran')).toBe(true);
  });
});

describe('deploy, test and build of a disabled action', () => {
  it('deploy <name> notes it and deploys nothing, --force or not (as Garden)', async () => {
    const root = project();
    const result = await executeCommand('deploy', ['db'], { root, force: true });
    expect(result.exitCode).toBe(0);
    expect(result.data.notRun).toEqual([
      'deploy.db is disabled in environment local (project.garden.yml:27:11); not deployed: enable it in this environment to deploy it',
    ]);
    expect(ran(root, 'db-deployed')).toBe(false);
  });

  it('test <name> is refused at its environments: line, with what to do', async () => {
    const root = project();
    const error = await refusal(executeCommand('test', ['e2e'], { root, force: true }));
    expect(error.code).toBe('TEND_ACTION_DISABLED');
    expect(error.message).toBe(
      'test.e2e is disabled in environment local: a disabled Test is not run, --force or not',
    );
    expect(`${error.location?.file}:${error.location?.line}`).toBe('project.garden.yml:34');
    expect(error.detail?.hint).toBe(
      'enable it in environment local (its disabled: or environments:), or choose an environment that enables it with --env',
    );
    expect(ran(root, 'e2e-ran')).toBe(false);
  });

  it('build <name> of a disabled Build no enabled action needs is refused at its disabled: line', async () => {
    const error = await refusal(executeCommand('build', ['tools'], { root: project() }));
    expect(error.code).toBe('TEND_ACTION_DISABLED');
    expect(`${error.location?.file}:${error.location?.line}`).toBe('project.garden.yml:20');
  });
});
