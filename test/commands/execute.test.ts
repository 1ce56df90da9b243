/**
 * `tend build|deploy|test|run` checks the templates of every action it is going to run before it
 * runs anything: an unknown variable in a Deploy spec fails `tend deploy` with its position
 * (exit 2) before the build it depends on has run, and before a session is recorded.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { cleanupDeployCommand } from '../../src/commands/cleanup.js';
import { executeCommand } from '../../src/commands/execute.js';
import { makeProject, removeProjects, runTend } from '../helpers/project.js';
import { streamEnv } from '../stream/helpers.js';

afterEach(removeProjects);

const project = () =>
  makeProject({
    'tend.yml': `kind: Project
name: templates
defaultEnvironment: dev
environments:
  - name: dev
    defaultNamespace: templates-dev
variables:
  port: 8080
providers:
  - name: exec
`,
    'app.tend.yml': `kind: Build
type: exec
name: app
spec:
  command: [sh, -c, "touch built"]
---
kind: Deploy
type: exec
name: app
dependencies: [build.app]
spec:
  command: [sh, -c, "echo \${var.port} \${actions.build.app.outputs.missing}"]
  env:
    PORT: "\${var.nope}"
`,
  });

describe('templates are checked before anything runs', () => {
  it('${var.nope} in a Deploy spec: exit 2 with file:line:col, the build has not run, no session', async () => {
    const root = project();
    const run = await runTend(['deploy'], { cwd: root, env: streamEnv(undefined, undefined) });
    expect(run.code, run.stdout).toBe(2);
    expect(run.stderr).toContain('app.tend.yml:14:11: unknown variable "var.nope"');
    expect(existsSync(path.join(root, 'built'))).toBe(false);
    expect(existsSync(path.join(root, '.tend', 'events'))).toBe(false);
  });

  it('an action that is not going to run is not checked', async () => {
    const root = project();
    const run = await runTend(['build'], { cwd: root, env: streamEnv(undefined, undefined) });
    expect(run.code, run.stderr).toBe(0);
    expect(existsSync(path.join(root, 'built'))).toBe(true);
  });
});

describe('nothing to run', () => {
  it('tend run in a project without Run actions says so and how to declare one, and exits 0', async () => {
    const root = project();
    const run = await runTend(['run'], { cwd: root, env: streamEnv(undefined, undefined) });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toBe(
      'No Run actions in project templates: nothing to run (it declares 1 Build, 1 Deploy).\n' +
        'Declare one in a *.tend.yml file: kind: Run, type: exec (the Run types of this ' +
        "environment's providers), name, spec — see docs/configuration.md.\n",
    );
    const json = await runTend(['test', '--json'], { cwd: root, env: streamEnv(undefined, undefined) });
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({
      namespace: 'templates-dev',
      nothingToRun: [expect.stringMatching(/^No Test actions in project templates/), expect.any(String)],
      actions: [],
    });
    // A name that does not exist is still an error.
    const named = await runTend(['run', 'seed'], { cwd: root, env: streamEnv(undefined, undefined) });
    expect(named.code).toBe(2);
    expect(named.stderr).toContain('no Run action named "seed"; defined: (none)');
  });
});

describe('a literal ${ (written $${) reaches the command as ${', () => {
  const literal = () =>
    makeProject({
      'tend.yml': `kind: Project
name: literal
defaultEnvironment: dev
environments:
  - name: dev
    defaultNamespace: literal-dev
variables:
  port: 8080
  text: $\${y}
providers:
  - name: exec
`,
      'app.tend.yml': `kind: Run
type: exec
name: show
spec:
  command: [echo, "$\${HOME}", "\${var.text}", "$\${x} \${var.port}"]
---
kind: Deploy
type: exec
name: app
spec:
  command: [sh, -c, "true"]
  cleanupCommand: [sh, -c, "echo '$\${HOME}' > cleaned"]
`,
    });

  it('in a Run, as written or through a variable, with an expression beside it or not', async () => {
    const root = literal();
    const result = await executeCommand('run', ['show'], { root });
    expect(result.exitCode).toBe(0);
    expect(result.data.actions[0]?.outputs?.log).toBe('${HOME} ${y} ${x} 8080');
  });

  it("in a Deploy's cleanupCommand, run by `tend cleanup deploy`", async () => {
    const root = literal();
    expect((await executeCommand('deploy', ['app'], { root })).exitCode).toBe(0);
    const result = await cleanupDeployCommand(['app'], { root });
    expect(result.exitCode).toBe(0);
    expect(readFileSync(path.join(root, 'cleaned'), 'utf8')).toBe('${HOME}\n');
  });
});
