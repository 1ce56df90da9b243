/**
 * The exec plugin's handlers with real processes: outputs, environment, working directory,
 * timeouts, failures, persistent deploys (readiness, early exit, SIGTERM then SIGKILL), and
 * Ctrl-C stopping what run/test actions started.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { executeCommand } from '../../src/commands/execute.js';
import { isAlive } from '../../src/plugins/exec/deploy.js';
import { freePort, makeProject, removeProjects, runTend, tendBin, waitFor } from '../helpers/project.js';

const projectYaml = `kind: Project
name: exectest
defaultEnvironment: dev
variables: { greeting: hello }
environments:
  - name: dev
    defaultNamespace: exectest-dev
providers:
  - name: exec
`;

function project(actions: string): string {
  return makeProject({ 'tend.yml': projectYaml + '---\n' + actions, 'sub/marker.txt': 'here' });
}

afterEach(removeProjects);

describe('exec Build/Test/Run', () => {
  it('runs the command in its cwd with env, and collects outputs from spec and ::output lines', async () => {
    const root = project(`kind: Build
type: exec
name: b
spec:
  command: [sh, -c, 'echo "::output seen=$(cat marker.txt)"; echo "::output greet=$GREET $TEND_NAMESPACE"']
  cwd: sub
  env: { GREET: '\${var.greeting}' }
  outputs: { fixed: yes }
`);
    const result = await executeCommand('build', [], { root });
    expect(result.exitCode).toBe(0);
    expect(result.data.actions[0]!.outputs).toEqual({
      fixed: 'yes',
      seen: 'here',
      greet: 'hello exectest-dev',
      // Garden's outputs of an exec command (its ::output lines are not part of them).
      log: '',
      stdout: '',
      stderr: '',
    });
  });

  it('reports a non-zero exit with the output tail, and does not cache the failure', async () => {
    const root = project(`kind: Test
type: exec
name: t
spec: { command: [sh, -c, 'echo checking; echo broken >&2; exit 3'] }
`);
    const first = await executeCommand('test', [], { root });
    expect(first.exitCode).toBe(1);
    expect(first.data.actions[0]!.error?.message).toMatch(/exited with code 3/);
    expect(first.human).toMatch(/broken/);
    const second = await executeCommand('test', [], { root });
    expect(second.data.actions[0]!.state).toBe('failed');
  });

  it('fails a one-shot Deploy whose command exits non-zero, and a Build likewise', async () => {
    const root = project(`kind: Build
type: exec
name: b
spec: { command: [sh, -c, 'exit 4'] }
---
kind: Deploy
type: exec
name: d
spec: { command: [sh, -c, 'echo no database >&2; exit 2'] }
`);
    const built = await executeCommand('build', [], { root });
    expect(built.data.actions[0]!.error?.message).toMatch(/build\.b exited with code 4/);
    const deployed = await executeCommand('deploy', ['d'], { root });
    expect(deployed.exitCode).toBe(1);
    expect(deployed.data.actions[0]).toMatchObject({ ref: 'deploy.d', state: 'failed' });
    expect(deployed.human).toMatch(/no database/);
  });

  it('runs a Run every time unless cacheResult asks to reuse it; a Test is reused unless cacheResult: false', async () => {
    const count = (name: string) =>
      `kind: ${name === 'seed' || name === 'seed-once' ? 'Run' : 'Test'}
type: exec
name: ${name}
${name === 'seed-once' ? 'cacheResult: true\n' : name === 'check-always' ? 'cacheResult: false\n' : ''}spec: { command: [sh, -c, 'echo x >> ${name}.count'] }
`;
    const root = project(['seed', 'seed-once', 'check', 'check-always'].map(count).join('---\n'));
    const lines = (name: string) =>
      readFileSync(path.join(root, `${name}.count`), 'utf8').split('\n').length - 1;
    const states = async (verb: 'run' | 'test') =>
      Object.fromEntries(
        (await executeCommand(verb, [], { root })).data.actions.map((a) => [a.ref, a.state]),
      );
    expect(await states('run')).toEqual({ 'run.seed': 'ready', 'run.seed-once': 'ready' });
    expect(await states('run')).toEqual({ 'run.seed': 'ready', 'run.seed-once': 'cached' });
    expect([lines('seed'), lines('seed-once')]).toEqual([2, 1]);
    expect(await states('test')).toEqual({ 'test.check': 'ready', 'test.check-always': 'ready' });
    expect(await states('test')).toEqual({ 'test.check': 'cached', 'test.check-always': 'ready' });
    expect([lines('check'), lines('check-always')]).toEqual([1, 2]);
  });

  it('rejects cacheResult on a Build or Deploy', async () => {
    const root = project(`kind: Build
type: exec
name: b
cacheResult: false
spec: { command: [true] }
`);
    await expect(executeCommand('build', [], { root })).rejects.toThrow(
      /cacheResult applies to Test and Run actions, not to Build/,
    );
  });

  it('refuses an environment variable or output name that a shell could not use, at its key', async () => {
    const root = project(`kind: Build
type: exec
name: b
spec:
  command: ['true']
  env: { OK_NAME: x, BAD-NAME: y }
  outputs: { "a b": z }
`);
    const error = await executeCommand('build', [], { root }).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(error?.message.split('\n')).toEqual([
      'invalid key "BAD-NAME" in spec.env: expected a string matching /^[A-Za-z_][A-Za-z0-9_]*$/',
      'tend.yml:17:14: invalid key "a b" in spec.outputs: expected a string matching /^[A-Za-z_][A-Za-z0-9_.-]*$/',
      '(2 configuration errors)',
    ]);
  });

  it('stops a command that runs past its timeout', async () => {
    const root = project(`kind: Run
type: exec
name: slow
timeout: 300ms
spec: { command: [sleep, '30'] }
`);
    const started = Date.now();
    const result = await executeCommand('run', [], { root });
    expect(result.data.actions[0]!.error?.code).toBe('TEND_EXEC_TIMEOUT');
    expect(Date.now() - started).toBeLessThan(20_000);
  });

  it('says which command was not found', async () => {
    const root = project(`kind: Run
type: exec
name: missing
spec: { command: [no-such-program-xyz] }
`);
    const result = await executeCommand('run', [], { root });
    expect(result.data.actions[0]!.error?.message).toMatch(/command not found: no-such-program-xyz/);
  });
});

describe('exec persistent Deploy', () => {
  it('a readiness URL answered by another process does not make it ready; its crash fails the deploy with its log', async () => {
    // Another environment's server already holds the port (here: this test process).
    const port = await freePort();
    let answered = 0;
    const other = http.createServer((_req, res) => {
      answered++;
      res.end('the other environment');
    });
    await new Promise<void>((resolve) => other.listen(port, '127.0.0.1', resolve));
    try {
      // The deploy's server binds only once the test says so: until then the other one answers.
      const root = project(`kind: Deploy
type: exec
name: web
spec:
  command: [node, -e, "const fs = require('fs'); const t = setInterval(() => { if (fs.existsSync('go')) { clearInterval(t); require('http').createServer().listen(${port}, '127.0.0.1'); } }, 20);"]
  persistent: true
  readiness: { url: 'http://127.0.0.1:${port}/', timeout: 60 }
`);
      const deploying = executeCommand('deploy', [], { root });
      await waitFor(() => answered > 0, 'the readiness URL to be answered by the other process');
      writeFileSync(path.join(root, 'go'), '');
      const result = await deploying;
      expect(result.exitCode).toBe(1);
      const action = result.data.actions[0]!;
      expect(action).toMatchObject({ ref: 'deploy.web', state: 'failed' });
      expect(action.error?.message).toMatch(/exited before it was ready \(log .*deploys\/web\.log\)/);
      expect(result.human).toMatch(/EADDRINUSE/);
      const status = await runTend(['status', '--json'], { cwd: root });
      expect(JSON.parse(status.stdout).actions[0]).toMatchObject({
        ref: 'deploy.web',
        state: 'not-ready',
        logFile: '.tend/envs/exectest-dev/deploys/web.log',
      });
    } finally {
      other.close();
    }
  });

  it('tend status says why a deploy is not ready and where its log is: a dead process, a reused pid', async () => {
    const root = project(`kind: Deploy
type: exec
name: svc
spec:
  command: [sh, -c, 'echo started; exec sleep 60']
  persistent: true
`);
    expect((await executeCommand('deploy', [], { root })).exitCode).toBe(0);
    const file = path.join(root, '.tend/envs/exectest-dev/deploys/svc.json');
    const state = JSON.parse(readFileSync(file, 'utf8'));
    expect(state.readyAt).toEqual(expect.any(String));
    const ready = await runTend(['status', '--json'], { cwd: root });
    expect(JSON.parse(ready.stdout).actions[0]).toMatchObject({
      state: 'ready',
      logFile: '.tend/envs/exectest-dev/deploys/svc.log',
    });

    process.kill(-state.pid, 'SIGKILL');
    await waitFor(() => !isAlive(state), 'the process to die');
    const dead = await runTend(['status'], { cwd: root });
    expect(dead.code, dead.stderr).toBe(0);
    expect(dead.stdout).toMatch(
      new RegExp(
        `deploy\\.svc: its process \\(pid ${state.pid}\\) is not running any more: it exited or was killed; ` +
          'log: \\.tend/envs/exectest-dev/deploys/svc\\.log',
      ),
    );

    // The pid now names another live process (this one), started at another time.
    writeFileSync(file, JSON.stringify({ ...state, pid: process.pid }));
    const reused = await runTend(['status', '--json'], { cwd: root });
    const action = JSON.parse(reused.stdout).actions[0];
    expect(action).toMatchObject({ ref: 'deploy.svc', state: 'not-ready' });
    expect(action.reason).toMatch(/that pid is now another process/);
    const redeployed = await executeCommand('deploy', [], { root });
    expect(redeployed.data.actions[0]!.state).toBe('ready');
    expect(isAlive({ pid: process.pid })).toBe(true); // tend did not stop the process that reused the pid
    const redeployedState = JSON.parse(readFileSync(file, 'utf8'));
    expect((await runTend(['cleanup', 'deploy', 'svc'], { cwd: root })).code).toBe(0);
    await waitFor(() => !isAlive(redeployedState), 'the redeployed process to stop');
  });

  it('waits for a readiness command and is ready only while the process lives', async () => {
    const root = project(`kind: Deploy
type: exec
name: svc
spec:
  command: [sh, -c, 'touch ready.flag; exec sleep 60']
  persistent: true
  readiness: { command: [test, -f, ready.flag], timeout: 10 }
`);
    expect((await executeCommand('deploy', [], { root })).exitCode).toBe(0);
    const state = JSON.parse(
      readFileSync(path.join(root, '.tend/envs/exectest-dev/deploys/svc.json'), 'utf8'),
    );
    expect(isAlive(state)).toBe(true);
    const cached = await executeCommand('deploy', [], { root });
    expect(cached.data.actions[0]!.state).toBe('cached');
    process.kill(-state.pid, 'SIGKILL');
    await waitFor(() => !isAlive(state), 'the process to die');
    const redeployed = await executeCommand('deploy', [], { root });
    expect(redeployed.data.actions[0]!.state).toBe('ready');
    expect((await runTend(['cleanup', 'deploy', 'svc'], { cwd: root })).code).toBe(0);
    const after = JSON.parse(JSON.stringify(state));
    expect(isAlive(after)).toBe(false);
  });

  it('fails with the log tail when the process exits before it is ready', async () => {
    const root = project(`kind: Deploy
type: exec
name: crash
spec:
  command: [sh, -c, 'echo cannot bind port >&2; exit 1']
  persistent: true
  readiness: { url: 'http://127.0.0.1:9/never', timeout: 10 }
`);
    const result = await executeCommand('deploy', [], { root });
    expect(result.exitCode).toBe(1);
    expect(result.data.actions[0]!.error?.message).toMatch(/exited before it was ready/);
    expect(result.human).toMatch(/cannot bind port/);
    expect(existsSync(path.join(root, '.tend/envs/exectest-dev/deploys/crash.json'))).toBe(false);
  });

  it('sends SIGKILL after the grace period to a process that ignores SIGTERM', async () => {
    const root = project(`kind: Deploy
type: exec
name: stubborn
spec:
  command: [sh, -c, 'trap "" TERM; while true; do sleep 0.1; done']
  persistent: true
  stopGracePeriod: 0.5
`);
    expect((await executeCommand('deploy', [], { root })).exitCode).toBe(0);
    const state = JSON.parse(
      readFileSync(path.join(root, '.tend/envs/exectest-dev/deploys/stubborn.json'), 'utf8'),
    );
    const cleaned = await runTend(['cleanup', 'env'], { cwd: root });
    expect(cleaned.code, cleaned.stderr).toBe(0);
    expect(isAlive(state)).toBe(false);
    expect(existsSync(path.join(root, '.tend/envs/exectest-dev'))).toBe(false);
  });
});

/** The `tend` CLI started in `root`, its stdout and stderr collected, and its exit awaited. */
function startTend(root: string, args: string[]) {
  const child = spawn(process.execPath, [tendBin, ...args], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, CI: 'true', TEND_SERVER_URL: '', TEND_TOKEN: '' },
  });
  const out = { stdout: '', stderr: '' };
  child.stdout.on('data', (d) => (out.stdout += d));
  child.stderr.on('data', (d) => (out.stderr += d));
  const exited = new Promise<number | null>((resolve) => child.once('close', resolve));
  return { child, out, exited };
}

/** The pid a command wrote to `file` in `root`, once it is there. */
function pidFrom(root: string, file: string): Promise<number> {
  const pidFile = path.join(root, file);
  return waitFor(
    () => existsSync(pidFile) && Number(readFileSync(pidFile, 'utf8').trim()),
    `${file} to be written`,
    20_000,
  );
}

async function latestEvents(root: string, type: string) {
  const events = await runTend(['events', 'latest', '--type', type, '--json'], { cwd: root });
  return JSON.parse(events.stdout) as { payload: Record<string, unknown> }[];
}

describe('Ctrl-C', () => {
  it('stops the processes of running actions, exits 130 and ends the session as interrupted', async () => {
    const root = project(`kind: Run
type: exec
name: forever
spec: { command: [sh, -c, 'echo $$ > pid.txt; exec sleep 60'] }
`);
    const tend = startTend(root, ['run']);
    const pid = await pidFrom(root, 'pid.txt');
    tend.child.kill('SIGINT');
    expect(await tend.exited).toBe(130);
    expect(tend.out.stdout).toMatch(/1 aborted/);
    expect(isAlive({ pid })).toBe(false);
    const states = (await latestEvents(root, 'actionStatus')).map((e) => e.payload.state);
    expect(states.at(-1)).toBe('aborted');
    const ended = await latestEvents(root, 'sessionFailed');
    expect(ended.at(-1)!.payload.error).toMatchObject({ code: 'TEND_INTERRUPTED' });
  });

  it('a build that exits 0 on SIGTERM is aborted, not ready, and not cached next time', async () => {
    const root = project(`kind: Build
type: exec
name: polite
exclude: ['*.txt']
spec:
  command: [sh, -c, 'echo run >> runs.txt; trap "exit 0" TERM; echo $$ > pid.txt; while :; do sleep 0.1; done']
`);
    const tend = startTend(root, ['build']);
    await pidFrom(root, 'pid.txt');
    tend.child.kill('SIGINT');
    expect(await tend.exited).toBe(130);
    const states = (await latestEvents(root, 'actionStatus')).map((e) => e.payload.state);
    expect(states).toEqual(['getting-status', 'processing', 'aborted']);
    // Not cached: the next run runs the command again (and is stopped again here).
    const next = startTend(root, ['build']);
    await waitFor(
      () => readFileSync(path.join(root, 'runs.txt'), 'utf8') === 'run\nrun\n',
      'the build to run again',
      20_000,
    );
    next.child.kill('SIGINT');
    expect(await next.exited).toBe(130);
  });

  it('a build that ignores SIGTERM gets SIGKILL; it is never ready, and the next run builds it again', async () => {
    // The first run ignores SIGTERM and never ends on its own; later runs finish at once.
    const root = project(`kind: Build
type: exec
name: stubborn
exclude: ['*.txt', built-once] # what the command writes does not change its version
spec:
  command: [sh, -c, 'if [ -f built-once ]; then echo again >> built.txt; exit 0; fi; trap "" TERM; echo $$ > pid.txt; touch built-once; while :; do sleep 0.1; done']
`);
    const tend = startTend(root, ['build']);
    const pid = await pidFrom(root, 'pid.txt');
    tend.child.kill('SIGINT');
    // Without SIGKILL after the grace period the shell would keep tend waiting for ever.
    expect(await tend.exited).toBe(130);
    expect(isAlive({ pid })).toBe(false);
    expect(tend.out.stderr).toMatch(/stopping started processes/);
    const states = (await latestEvents(root, 'actionStatus')).map((e) => e.payload.state);
    expect(states).not.toContain('ready');
    expect(states.at(-1)).toBe('aborted');

    const again = await runTend(['build', '--json'], { cwd: root });
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout).actions[0]).toMatchObject({ ref: 'build.stubborn', state: 'ready' });
    expect(readFileSync(path.join(root, 'built.txt'), 'utf8')).toBe('again\n');
  });

  it('a deploy whose tend was killed before it got ready is not ready, though its process lives', async () => {
    const root = project(`kind: Deploy
type: exec
name: half
exclude: ['*.txt', '*.flag'] # what the command and the test write do not change its version
spec:
  command: [sh, -c, 'echo $$ >> pids.txt; exec sleep 60']
  persistent: true
  readiness: { command: [test, -f, ready.flag], timeout: 600 }
`);
    const tend = startTend(root, ['deploy']);
    const pid = await pidFrom(root, 'pids.txt');
    const stateFile = path.join(root, '.tend/envs/exectest-dev/deploys/half.json');
    await waitFor(() => existsSync(stateFile), 'tend to record the process');
    tend.child.kill('SIGKILL'); // no Ctrl-C handling: the process is left behind, never checked
    await tend.exited;
    expect(isAlive({ pid })).toBe(true);
    const status = await runTend(['status', '--json'], { cwd: root });
    const action = JSON.parse(status.stdout).actions[0];
    expect(action).toMatchObject({ ref: 'deploy.half', state: 'not-ready' });
    expect(action.reason).toBe(`its process (pid ${pid}) never passed its readiness check`);

    writeFileSync(path.join(root, 'ready.flag'), '');
    const redeployed = await executeCommand('deploy', [], { root });
    expect(redeployed.data.actions[0]!.state).toBe('ready');
    await waitFor(() => !isAlive({ pid }), 'the unchecked process to be stopped');
    const pids = readFileSync(path.join(root, 'pids.txt'), 'utf8').trim().split('\n').map(Number);
    expect(pids).toHaveLength(2);
    expect(isAlive({ pid: pids[1]! })).toBe(true);
    expect((await runTend(['cleanup', 'env'], { cwd: root })).code).toBe(0);
  });

  it('a second Ctrl-C exits at once with 130 and kills what is still stopping', async () => {
    // A deploy that never gets ready and ignores SIGTERM, with a 10-minute grace period.
    const root = project(`kind: Deploy
type: exec
name: slow
spec:
  command: [sh, -c, 'trap "" TERM; echo $$ > pid.txt; while :; do sleep 0.1; done']
  persistent: true
  readiness: { command: [test, -f, never], timeout: 600 }
  stopGracePeriod: 600
`);
    const tend = startTend(root, ['deploy']);
    const pid = await pidFrom(root, 'pid.txt');
    tend.child.kill('SIGINT');
    await waitFor(() => /stopping started processes/.test(tend.out.stderr), 'the first Ctrl-C to be taken');
    tend.child.kill('SIGINT');
    // Within the test's timeout, not the 10-minute grace period.
    expect(await tend.exited).toBe(130);
    await waitFor(() => !isAlive({ pid }), 'the deploy process to be killed');
    const status = await runTend(['status', '--json'], { cwd: root });
    expect(status.code, status.stderr).toBe(0);
    const action = JSON.parse(status.stdout).actions[0];
    expect(action).toMatchObject({ ref: 'deploy.slow', state: 'not-ready' });
    expect(action.reason).toMatch(/not running any more/);
  });
});
