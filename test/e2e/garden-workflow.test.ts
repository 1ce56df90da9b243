/**
 * Garden's Workflows (`tend workflow`), custom Commands (`tend command`, `tend <name>`) and an
 * exec Deploy's cleanupCommand, through the CLI on exec-only Garden projects: real processes
 * for every step (scripts, and child `tend` processes for Garden commands).
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { tendCommandNames } from '../../src/commands/runnables.js';
import { makeProject, removeProjects, runTend, startTend } from '../helpers/project.js';

afterAll(removeProjects);

const project = `apiVersion: garden.io/v2
kind: Project
name: wf
environments:
  - name: local
variables:
  greeting: hello
`;

const web = `kind: Deploy
type: exec
name: web
spec:
  deployCommand: [sh, -c, "echo deployed"]
  cleanupCommand: [sh, -c, "echo \\"web $TEND_ACTION $GREETING\\" >> cleaned.txt"]
  env: { GREETING: hi }
`;

const workflow = `kind: Workflow
name: ci
description: the whole thing
envVars:
  WF: from-workflow
files:
  - path: out/config.txt
    data: "\${var.greeting} file"
triggers:
  - environment: local
steps:
  - name: first
    script: echo "first $WF $STEP \${var.greeting} \${environment.name}"
    envVars: { STEP: own }
  - name: deploy
    description: deploy everything
    command: [deploy]
  - name: report
    script: echo "log [\${steps.first.log}] web \${steps.deploy.outputs.deploy.web.state} \${steps.first.outputs.exitCode}"
  - name: allowed
    script: exit 3
    continueOnError: true
  - name: skipped
    script: echo should-not-run
    skip: \${environment.name == "local"}
  - name: breaks
    script: exit 4
  - name: after
    script: echo should-not-run
  - name: rescue
    script: echo "rescued after \${steps.breaks.outputs.exitCode}"
    when: onError
  - name: ignored
    script: echo should-not-run
    when: never
  - name: last
    script: echo always-runs
    when: always
`;

describe('tend workflow', () => {
  it("runs a Workflow's steps as Garden does: scripts, a Garden command as tend's, when/skip/continueOnError, envVars, files, step logs", async () => {
    const root = makeProject({
      'project.garden.yml': project,
      'web.garden.yml': web,
      'workflows.garden.yml': workflow,
    });
    const listed = await runTend(['workflow'], { cwd: root });
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toMatch(/^ci\s+10\s+workflows\.garden\.yml:1\s+the whole thing$/m);

    const run = await runTend(['workflow', 'ci'], { cwd: root, timeoutMs: 60_000 });
    expect(run.code, run.stderr).toBe(1);
    const out = run.stdout.split('\n');
    expect(out).toContain('first from-workflow own hello local');
    expect(out).toContain('log [first from-workflow own hello local] web ready 0');
    expect(out).toContain('rescued after 4');
    expect(out).toContain('always-runs');
    expect(run.stdout).not.toContain('should-not-run');
    // The Garden command ran as `tend deploy`: its own summary and progress.
    expect(run.stderr).toContain('tend deploy');
    expect(run.stdout).toMatch(/1 action\(s\): 1 ready/);
    const table = Object.fromEntries(
      out
        .filter((l) => /^[a-z-]+\s+(succeeded|failed|skipped|not run)/.test(l))
        .map((l) => l.split(/\s+/).slice(0, 2)),
    );
    expect(table).toEqual({
      first: 'succeeded',
      deploy: 'succeeded',
      report: 'succeeded',
      allowed: 'failed',
      skipped: 'skipped',
      breaks: 'failed',
      after: 'not', // not run
      rescue: 'succeeded',
      ignored: 'not',
      last: 'succeeded',
    });
    expect(run.stdout).toContain('workflow ci failed in');
    expect(readFileSync(path.join(root, 'out', 'config.txt'), 'utf8')).toBe('hello file');

    const json = await runTend(['workflow', 'ci', '--json'], { cwd: root, timeoutMs: 60_000 });
    expect(json.code).toBe(1);
    const data = JSON.parse(json.stdout) as {
      workflow: string;
      succeeded: boolean;
      steps: { name: string; state: string; exitCode?: number; durationMs?: number; continued?: boolean }[];
    };
    expect(data.workflow).toBe('ci');
    expect(data.succeeded).toBe(false);
    expect(data.steps.map((s) => [s.name, s.state, s.exitCode])).toEqual([
      ['first', 'succeeded', 0],
      ['deploy', 'succeeded', 0],
      ['report', 'succeeded', 0],
      ['allowed', 'failed', 3],
      ['skipped', 'skipped', undefined],
      ['breaks', 'failed', 4],
      ['after', 'not run', undefined],
      ['rescue', 'succeeded', 0],
      ['ignored', 'not run', undefined],
      ['last', 'succeeded', 0],
    ]);
    expect(data.steps[3]!.continued).toBe(true);
    expect(data.steps[0]!.durationMs).toBeGreaterThan(0);
  }, 120_000);

  it('exits 0 when every step succeeds; an unknown name and a file outside the project are errors', async () => {
    const root = makeProject({
      'project.garden.yml': `${project}  escape: ../outside.txt\n  nul: "in\\0side.txt"\n`,
      'workflows.garden.yml': `kind: Workflow
name: ok
steps:
  - script: echo fine
---
kind: Workflow
name: escapes
files:
  - path: \${var.escape}
    data: x
steps:
  - script: echo should-not-run
---
kind: Workflow
name: nul
files:
  - path: \${var.nul}
    data: x
steps:
  - script: echo should-not-run
`,
    });
    const ok = await runTend(['workflow', 'ok'], { cwd: root });
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toContain('workflow ok completed');
    const unknown = await runTend(['workflow', 'nope'], { cwd: root });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('no Workflow named "nope"; defined: ok, escapes, nul');
    const escapes = await runTend(['workflow', 'escapes'], { cwd: root });
    expect(escapes.code).toBe(2);
    expect(escapes.stderr).toContain(
      'workflows.garden.yml:9:11: files: ../outside.txt is not inside the project root',
    );
    expect(escapes.stdout).not.toContain('should-not-run');
    expect(existsSync(path.join(root, '..', 'outside.txt'))).toBe(false);
    // A NUL in the path: the same clear error, not the file system's exception.
    const nul = await runTend(['workflow', 'nul'], { cwd: root });
    expect(nul.code, nul.stderr).toBe(2);
    expect(nul.stderr).toContain('workflows.garden.yml:17:11: files: in');
    expect(nul.stderr).toContain('is not inside the project root');
    expect(nul.stdout).not.toContain('should-not-run');
  }, 60_000);

  it('Ctrl-C stops the running step and the rest are not run (exit 130)', async () => {
    const root = makeProject({
      'project.garden.yml': project,
      'workflows.garden.yml': `kind: Workflow
name: slow
steps:
  - name: wait
    script: echo started; sleep 30; echo finished
  - name: next
    script: echo should-not-run
  - name: finally
    script: echo should-not-run-either
    when: always
`,
    });
    const running = startTend(['workflow', 'slow', '--json'], { cwd: root });
    await running.waitForOutput(/step 1\/3 wait/, 'the first step to start');
    running.signal('SIGINT');
    const done = await running.exited;
    expect(done.code).toBe(130);
    const data = JSON.parse(done.stdout) as {
      interrupted: boolean;
      steps: { name: string; state: string }[];
    };
    expect(data.interrupted).toBe(true);
    expect(data.steps.map((s) => `${s.name} ${s.state}`)).toEqual([
      'wait interrupted',
      'next not run',
      'finally not run',
    ]);
  }, 60_000);
});

const commands = `kind: Command
name: hello
description:
  short: says hello
  long: Says hello to someone, then shows the status.
args:
  - name: who
    description: whom to greet
    required: true
opts:
  - name: times
    description: how many times
    type: integer
  - name: loud
    description: shout
    type: boolean
variables:
  punct: "!"
steps:
  - script: echo "hello \${args.who} x\${opts.times}\${var.punct} loud=\${opts.loud} rest=\${join(args.$rest, ',')} all=\${join(args.$all, ',')}"
  - gardenCommand: [get, status]
---
kind: Command
name: legacy
description:
  short: exec then a Garden command
exec:
  command: [sh, -c, "echo exec-ran $GREETING"]
  env: { GREETING: "\${var.greeting}" }
gardenCommand: [deploy, web]
---
kind: Command
name: schema
description:
  short: has the name of a tend command
exec:
  command: [echo, the custom schema]
---
kind: Command
name: deploy
exec:
  command: [echo, "Garden ignores a Command named like one of its commands"]
`;

describe('custom Commands', () => {
  it('run as tend <name> and tend command <name>, with declared args and opts; one named like a tend command only as tend command', async () => {
    const root = makeProject({
      'project.garden.yml': project,
      'web.garden.yml': web,
      'commands.garden.yml': commands,
    });
    const listed = await runTend(['command'], { cwd: root });
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout.split('\n').map((l) => l.split(/\s{2,}/))).toEqual([
      ['COMMAND', 'RUN AS', 'DESCRIPTION'],
      ['hello', 'tend hello', 'says hello'],
      ['legacy', 'tend legacy', 'exec then a Garden command'],
      ['schema', 'tend command schema', 'has the name of a tend command'],
      [''],
    ]);

    const hello = await runTend(['hello', 'bob', 'extra', '--times', '3', '--loud', '--other', 'x'], {
      cwd: root,
      timeoutMs: 60_000,
    });
    expect(hello.code, hello.stderr).toBe(0);
    expect(hello.stdout).toContain(
      'hello bob x3! loud=true rest=extra,--other,x all=bob,extra,--times,3,--loud,--other,x',
    );
    expect(hello.stderr).toContain('tend status');
    expect(hello.stdout).toContain('command hello completed');
    // The same through tend command.
    const again = await runTend(['command', 'hello', 'ann', '--times=2'], { cwd: root, timeoutMs: 60_000 });
    expect(again.stdout).toContain('hello ann x2! loud=false');

    const missing = await runTend(['hello'], { cwd: root });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('hello needs the argument <who> (whom to greet)');
    const help = await runTend(['hello', '--help'], { cwd: root });
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Usage: tend hello <who> [options]');
    expect(help.stdout).toContain('Says hello to someone, then shows the status.');
    expect(help.stdout).toMatch(/--times <integer>\s+how many times/);

    const legacy = await runTend(['legacy', '--json'], { cwd: root, timeoutMs: 60_000 });
    expect(legacy.code, legacy.stderr).toBe(0);
    const data = JSON.parse(legacy.stdout) as { steps: { name: string; state: string }[] };
    expect(data.steps.map((s) => `${s.name} ${s.state}`)).toEqual([
      'exec succeeded',
      'gardenCommand succeeded',
    ]);

    // `tend deploy` stays tend's, and Garden's name leaves the Command out.
    const builtin = await runTend(['deploy', '--json'], { cwd: root, timeoutMs: 60_000 });
    expect(builtin.code, builtin.stderr).toBe(0);
    expect((JSON.parse(builtin.stdout) as { actions: { ref: string }[] }).actions.map((a) => a.ref)).toEqual([
      'deploy.web',
    ]);
    expect((await runTend(['command', 'deploy'], { cwd: root })).code).toBe(2);
    // `tend schema` stays tend's; the Command runs as `tend command schema`.
    expect((await runTend(['schema'], { cwd: root })).stdout).toContain('"$schema"');
    const custom = await runTend(['command', 'schema'], { cwd: root });
    expect(custom.stdout).toContain('the custom schema');
    const unknown = await runTend(['nope'], { cwd: root });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("error: unknown command 'nope'");
  }, 120_000);

  it("tend's list of its own command names is its argument table's", async () => {
    const help = await runTend(['--help']);
    const section = help.stdout.slice(help.stdout.indexOf('Commands:'), help.stdout.indexOf('Examples:'));
    const names = [...section.matchAll(/^ {2}([a-z-]+)(?:\|([a-z-]+))?/gm)].flatMap((m) =>
      m.slice(1).filter(Boolean),
    );
    expect(new Set(names)).toEqual(new Set(tendCommandNames));
  });

  it('a Command whose step runs itself stops, 8 deep', async () => {
    const root = makeProject({
      'project.garden.yml': `${project}---
kind: Command
name: loop
description: { short: runs itself }
gardenCommand: [loop]
`,
    });
    const run = await runTend(['loop'], { cwd: root, timeoutMs: 60_000 });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(
      'tend command loop: Workflows and Commands run one another 8 deep; is one running itself?',
    );
  }, 60_000);
});

describe("an exec Deploy's cleanupCommand", () => {
  it('runs on tend cleanup deploy and tend cleanup env, in the environment of its deploy command; a failing one is reported', async () => {
    const root = makeProject({
      'project.garden.yml': project,
      'web.garden.yml': web,
      'api.garden.yml': `kind: Deploy
type: exec
name: api
spec:
  shell: true
  persistent: true
  deployCommand: [sleep, "30"]
  cleanupCommand: [echo, api-cleaned, ">>", cleaned.txt, "&&", exit, "5"]
`,
    });
    const cleaned = () => readFileSync(path.join(root, 'cleaned.txt'), 'utf8');
    expect((await runTend(['deploy'], { cwd: root, timeoutMs: 60_000 })).code).toBe(0);
    const one = await runTend(['cleanup', 'deploy', 'web'], { cwd: root });
    expect(one.code, one.stderr).toBe(0);
    expect(cleaned()).toBe('web deploy.web hi\n');

    expect((await runTend(['deploy'], { cwd: root, timeoutMs: 60_000 })).code).toBe(0);
    const all = await runTend(['cleanup', 'env'], { cwd: root });
    expect(all.code, all.stderr).toBe(0);
    expect(all.stdout).toContain('deploy.api: its cleanupCommand exited with code 5');
    expect(all.stdout).toMatch(/stopped 1 process\(es\) and removed \.tend\/envs\//);
    expect(cleaned()).toBe('web deploy.web hi\napi-cleaned\nweb deploy.web hi\n');
  }, 120_000);

  it('a Deploy with an empty deployCommand, only cleaning up, is ready at once as in Garden; its cleanupCommand runs', async () => {
    const root = makeProject({
      'project.garden.yml': `${project}---
kind: Deploy
type: exec
name: cleanup-only
spec:
  shell: true
  deployCommand: []
  cleanupCommand: [echo, cleaned-only, ">>", cleaned.txt]
`,
    });
    const deploy = await runTend(['deploy', '--json'], { cwd: root, timeoutMs: 60_000 });
    expect(deploy.code, deploy.stderr).toBe(0);
    expect(JSON.parse(deploy.stdout)).toMatchObject({
      actions: [{ ref: 'deploy.cleanup-only', state: 'ready' }],
    });
    const cleanup = await runTend(['cleanup', 'deploy', 'cleanup-only'], { cwd: root });
    expect(cleanup.code, cleanup.stderr).toBe(0);
    expect(readFileSync(path.join(root, 'cleaned.txt'), 'utf8')).toBe('cleaned-only\n');
  }, 120_000);
});
