/**
 * `--force-build` on `tend run|test|deploy`, as Garden's: every Build the command needs is built
 * again even when it is ready for its version. A Workflow step with Garden's `run task X --force
 * --force-build` runs.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { executeCommand } from '../../src/commands/execute.js';
import { makeProject, removeProjects, runTend } from '../helpers/project.js';
import { streamEnv } from '../stream/helpers.js';

afterEach(removeProjects);

const project = () =>
  makeProject({
    'project.garden.yml': `apiVersion: garden.io/v1
kind: Project
name: force-build
environments:
  - name: local
providers:
  - name: exec
---
kind: Build
type: exec
name: tools
spec:
  command: [sh, -c, "echo built >> builds.log"]
---
kind: Run
type: exec
name: hello
dependencies: [build.tools]
spec:
  command: [sh, -c, "echo ran >> runs.log"]
---
kind: Deploy
type: exec
name: app
dependencies: [build.tools]
spec:
  deployCommand: [sh, -c, "true"]
---
kind: Workflow
name: full
steps:
  - command: [run, task, hello, --force, --force-build]
`,
  });

const lines = (root: string, file: string) =>
  readFileSync(path.join(root, file), 'utf8').split('\n').length - 1;

describe('--force-build', () => {
  it('builds a ready Build again for run and deploy; without it the Build is reused', async () => {
    const root = project();
    expect((await executeCommand('run', ['hello'], { root })).exitCode).toBe(0);
    const reused = await executeCommand('run', ['hello'], { root });
    expect(reused.data.actions.find((a) => a.ref === 'build.tools')?.state).toBe('cached');
    expect(lines(root, 'builds.log')).toBe(1);

    const forced = await executeCommand('run', ['hello'], { root, forceBuild: true });
    expect(forced.exitCode).toBe(0);
    expect(forced.data.actions.find((a) => a.ref === 'build.tools')?.state).toBe('ready');
    expect(lines(root, 'builds.log')).toBe(2);

    const deployed = await executeCommand('deploy', ['app'], { root, forceBuild: true });
    expect(deployed.data.actions.map((a) => `${a.ref} ${a.state}`).sort()).toEqual([
      'build.tools ready',
      'deploy.app ready',
    ]);
    expect(lines(root, 'builds.log')).toBe(3);
  });

  it("a Workflow step's run task X --force --force-build runs (tend validate passed it)", async () => {
    const root = project();
    const env = streamEnv(undefined, undefined);
    const validated = await runTend(['validate'], { cwd: root, env });
    expect(validated.code, validated.stderr).toBe(0);
    const run = await runTend(['workflow', 'full'], { cwd: root, env, timeoutMs: 60_000 });
    expect(run.code, run.stderr).toBe(0);
    expect([lines(root, 'builds.log'), lines(root, 'runs.log')]).toEqual([1, 1]);
    const again = await runTend(['workflow', 'full'], { cwd: root, env, timeoutMs: 60_000 });
    expect(again.code, again.stderr).toBe(0);
    expect([lines(root, 'builds.log'), lines(root, 'runs.log')]).toEqual([2, 2]);
  });
});
