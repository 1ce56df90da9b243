/**
 * `tend test --watch` through the real CLI: after the first round, a change runs again only what
 * it affects (the actions whose sources or configuration changed and their dependants); a change
 * to a file no action has as a source (excluded) triggers nothing — the next round names only its
 * own change; heartbeats keep the session's environment alive; Ctrl-C exits 130, stops what runs
 * and records the session as stopped (not failed).
 */
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { isAlive } from '../../src/plugins/exec/deploy.js';
import {
  freePort,
  makeProject,
  removeProjects,
  runTend,
  startTend,
  waitFor,
  type RunningTend,
} from '../helpers/project.js';
import { streamEnv } from '../stream/helpers.js';

afterEach(removeProjects);

const env = streamEnv(undefined, undefined);

const files = (testWeb = 'echo tested web') => ({
  'tend.yml': `kind: Project
name: watch
defaultEnvironment: dev
environments:
  - name: dev
    defaultNamespace: watch-dev
providers:
  - name: exec
`,
  'web/web.tend.yml': `kind: Build
type: exec
name: web
exclude: [notes.md]
spec: { command: [sh, -c, "echo built web"] }
`,
  'web/server.js': 'v1\n',
  'web/notes.md': 'notes\n',
  'api/api.tend.yml': `kind: Build
type: exec
name: api
spec: { command: [sh, -c, "echo built api"] }
`,
  'api/main.js': 'v1\n',
  'deploy/deploy.tend.yml': `kind: Deploy
type: exec
name: web
dependencies: [build.web]
spec: { command: [sh, -c, "echo deployed web"] }
`,
  'tests/tests.tend.yml': `kind: Test
type: exec
name: web
dependencies: [deploy.web]
spec: { command: [sh, -c, "${testWeb}"] }
---
kind: Test
type: exec
name: api
dependencies: [build.api]
spec: { command: [sh, -c, "echo tested api"] }
`,
});

interface Round {
  changed: string[];
  actions: { ref: string; state: string }[];
}

const rounds = (tend: RunningTend): Round[] =>
  tend
    .stdout()
    .split('\n')
    .filter((l) => l.startsWith('{"changed"'))
    .map((l) => JSON.parse(l) as Round);

const nthRound = (tend: RunningTend, n: number) =>
  waitFor(() => rounds(tend)[n - 1], `round ${n}\n${tend.stderr()}`, 30_000);

const states = (round: Round) =>
  round.actions.map((a) => [a.ref, a.state]).sort(([a], [b]) => a!.localeCompare(b!));

describe('--watch', () => {
  it('re-runs only what a change affects, ignores excluded files, heartbeats, and exits 130 on Ctrl-C', async () => {
    const root = makeProject(files());
    const tend = startTend(['test', '--watch', '--json'], { cwd: root, env, timeoutMs: 180_000 });
    expect(states(await nthRound(tend, 1))).toEqual([
      ['build.api', 'ready'],
      ['build.web', 'ready'],
      ['deploy.web', 'ready'],
      ['test.api', 'ready'],
      ['test.web', 'ready'],
    ]);
    await tend.waitForOutput(/watch: watching /, 'the watch to start');

    // A source of build.web: it, and what depends on it, run again; the api side does not.
    writeFileSync(path.join(root, 'web', 'server.js'), 'v2\n');
    const second = await nthRound(tend, 2);
    expect(second.changed).toEqual(['web/server.js']);
    expect(states(second)).toEqual([
      ['build.web', 'ready'],
      ['deploy.web', 'ready'],
      ['test.web', 'ready'],
    ]);

    // Excluded from build.web: noticed, and nothing runs.
    writeFileSync(path.join(root, 'web', 'notes.md'), 'more notes\n');
    await tend.waitForOutput(/watch: ignored web\/notes\.md/, 'the excluded change to be ignored');

    // The next round names only its own change: the excluded one started none.
    writeFileSync(path.join(root, 'api', 'main.js'), 'v2\n');
    const third = await nthRound(tend, 3);
    expect(third.changed).toEqual(['api/main.js']);
    expect(states(third)).toEqual([
      ['build.api', 'ready'],
      ['test.api', 'ready'],
    ]);

    // A configuration change: only the action whose document changed.
    writeFileSync(
      path.join(root, 'tests', 'tests.tend.yml'),
      files('echo tested web again')['tests/tests.tend.yml'],
    );
    const fourth = await nthRound(tend, 4);
    expect(fourth.changed).toEqual(['tests/tests.tend.yml']);
    expect(states(fourth)).toEqual([
      ['build.web', 'cached'],
      ['deploy.web', 'cached'],
      ['test.web', 'ready'],
    ]);

    // The session stays open: its heartbeat (every 30 s) keeps the environment's activity alive.
    const eventsDir = path.join(root, '.tend', 'events');
    const [log] = readdirSync(eventsDir);
    await waitFor(
      () => readFileSync(path.join(eventsDir, log!), 'utf8').includes('"type":"sessionHeartbeat"'),
      'a heartbeat',
      45_000,
    );
    expect(readdirSync(eventsDir)).toHaveLength(1);

    tend.signal('SIGINT');
    const ended = await tend.exited;
    expect(ended.code, ended.stderr).toBe(130);
    expect(rounds(tend)).toHaveLength(4);
  }, 120_000);

  it('tend deploy --watch restarts a persistent deploy on a change; after Ctrl-C the service stays up', async () => {
    const port = await freePort();
    const root = makeProject({
      ...files(),
      'deploy/deploy.tend.yml': `kind: Deploy
type: exec
name: web
dependencies: [build.web]
spec:
  persistent: true
  command: [node, server.js]
  env: { PORT: "${port}" }
  readiness: { url: "http://127.0.0.1:${port}/" }
`,
      'deploy/server.js': `require('node:http')
  .createServer((_, res) => res.end(require('node:fs').readFileSync(__dirname + '/message.txt', 'utf8')))
  .listen(Number(process.env.PORT), '127.0.0.1');
`,
      'deploy/message.txt': 'first',
    });
    const answer = () => fetch(`http://127.0.0.1:${port}/`).then((r) => r.text());
    const pidOf = () =>
      (
        JSON.parse(readFileSync(path.join(root, '.tend/envs/watch-dev/deploys/web.json'), 'utf8')) as {
          pid: number;
        }
      ).pid;
    const tend = startTend(['deploy', 'web', '--watch', '--json'], { cwd: root, env });
    await nthRound(tend, 1);
    const first = pidOf();
    expect(await answer()).toBe('first');
    await tend.waitForOutput(/watch: watching /, 'the watch to start');

    writeFileSync(path.join(root, 'deploy', 'message.txt'), 'second');
    const second = await nthRound(tend, 2);
    expect(second.changed).toEqual(['deploy/message.txt']);
    expect(states(second)).toEqual([
      ['build.web', 'cached'],
      ['deploy.web', 'ready'],
    ]);
    expect(pidOf()).not.toBe(first);
    expect(isAlive({ pid: first })).toBe(false);
    expect(await answer()).toBe('second');

    tend.signal('SIGINT');
    expect((await tend.exited).code).toBe(130);
    // Deployed services stay up after the watch, as after tend deploy.
    expect(await answer()).toBe('second');

    // Stopped, not failed: the session ends with TEND_INTERRUPTED, which tend events calls stopped.
    expect((await runTend(['status'], { cwd: root, env })).code).toBe(0);
    const sessions = await runTend(['events', '--json'], { cwd: root, env });
    expect(
      (JSON.parse(sessions.stdout) as { command: string; outcome: string }[]).map((s) => [
        s.command,
        s.outcome,
      ]),
    ).toEqual([
      ['status', 'completed'],
      ['deploy', 'stopped'],
    ]);
    // `latest` passes over the read-only tend status after it, and says which session it shows.
    const latest = await runTend(['events', 'latest', '--json'], { cwd: root, env });
    const events = JSON.parse(latest.stdout) as { type: string; payload: Record<string, unknown> }[];
    expect(events[0]?.payload).toMatchObject({ command: 'deploy', args: ['web'] });
    expect(events.at(-1)).toMatchObject({
      type: 'sessionFailed',
      payload: { error: { code: 'TEND_INTERRUPTED' } },
    });
    expect(latest.stderr).toMatch(
      /^session [0-9A-Z]{26}: `tend deploy web`, started \S+; passed over 1 newer `tend status` session \(--include-read-only\)\n$/,
    );
    const withStatus = await runTend(['events', 'latest', '--include-read-only', '--json'], {
      cwd: root,
      env,
    });
    expect(JSON.parse(withStatus.stdout)[0].payload).toMatchObject({ command: 'status' });
    expect((await runTend(['cleanup', 'env'], { cwd: root, env })).code).toBe(0);
  });

  it('Ctrl-C while a test runs stops its process and exits 130', async () => {
    const root = makeProject(files('echo $$ > ../running.pid; exec sleep 60'));
    const tend = startTend(['test', 'web', '--watch'], { cwd: root, env });
    const pidFile = path.join(root, 'running.pid');
    const pid = await waitFor(
      () => existsSync(pidFile) && Number(readFileSync(pidFile, 'utf8').trim()),
      'the test to start',
      30_000,
    );
    expect(isAlive({ pid })).toBe(true);
    tend.signal('SIGINT');
    const ended = await tend.exited;
    expect(ended.code, ended.stderr).toBe(130);
    await waitFor(() => !isAlive({ pid }), 'the test process to be stopped');
  });
});
