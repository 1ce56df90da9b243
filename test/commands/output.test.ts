/**
 * What an action printed, through the real CLI: `--show-output` prints the output of passing
 * actions too; a child's stderr lines are labelled `[stderr]` (level `warn`), never `[info]`;
 * `tend events --action <ref>` shows only that action's events.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { makeProject, removeProjects, runTend } from '../helpers/project.js';
import { streamEnv } from '../stream/helpers.js';

afterEach(removeProjects);

const project = () =>
  makeProject({
    'tend.yml': `kind: Project
name: output
defaultEnvironment: dev
environments:
  - name: dev
    defaultNamespace: output-dev
providers:
  - name: exec
`,
    'app.tend.yml': `kind: Build
type: exec
name: app
spec:
  command: [sh, -c, "echo building-app"]
---
kind: Test
type: exec
name: unit
dependencies: [build.app]
spec:
  command: [sh, -c, "echo unit-says-hello; echo unit-complains >&2"]
`,
  });

const env = streamEnv(undefined, undefined);

describe('the output of actions', () => {
  it('tend test --show-output prints what a passing test printed; without it, only the summary', async () => {
    const root = project();
    const quiet = await runTend(['test'], { cwd: root, env });
    expect(quiet.code, quiet.stderr).toBe(0);
    expect(quiet.stdout).not.toContain('unit-says-hello');

    const shown = await runTend(['test', '--force', '--show-output'], { cwd: root, env });
    expect(shown.code, shown.stderr).toBe(0);
    const lines = shown.stdout.split('\n');
    const header = lines.indexOf('── test.unit (passed)');
    expect(header, shown.stdout).toBeGreaterThanOrEqual(0);
    expect(lines.slice(header + 1, header + 3)).toEqual(['unit-says-hello', '[stderr] unit-complains']);
    // The build was not forced: cached, and said so rather than shown empty.
    expect(shown.stdout).toContain('── build.app: cached, not run in this session');

    const json = await runTend(['test', '--force', '--show-output', '--json'], { cwd: root, env });
    const unit = JSON.parse(json.stdout).actions.find((a: { ref: string }) => a.ref === 'test.unit');
    expect(unit.output).toEqual({
      lines: [
        { stream: 'stdout', text: 'unit-says-hello' },
        { stream: 'stderr', text: 'unit-complains' },
      ],
      omitted: 0,
    });
  });

  it('tend events --action shows one action’s events; stderr lines are [stderr] at level warn', async () => {
    const root = project();
    expect((await runTend(['test'], { cwd: root, env })).code).toBe(0);

    const shown = await runTend(['events', '--action', 'test.unit'], { cwd: root, env });
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toContain('[stdout] test.unit: unit-says-hello');
    expect(shown.stdout).toContain('[stderr] test.unit: unit-complains');
    expect(shown.stdout).not.toContain('[info] test.unit: unit-complains');
    expect(shown.stdout).not.toContain('build.app');
    expect(shown.stdout).toMatch(/actionStatus\s+test\.unit ready/);

    const json = await runTend(['events', 'latest', '--action', 'test.unit', '--type', 'log', '--json'], {
      cwd: root,
      env,
    });
    const logs = JSON.parse(json.stdout) as { payload: { level: string; stream: string; message: string } }[];
    expect(logs.map((e) => [e.payload.stream, e.payload.level, e.payload.message])).toEqual([
      ['stdout', 'info', 'unit-says-hello'],
      ['stderr', 'warn', 'unit-complains'],
    ]);
  });

  it('tend events latest --follow --action prints that action’s events and ends with the session', async () => {
    const root = project();
    expect((await runTend(['test'], { cwd: root, env })).code).toBe(0);
    const followed = await runTend(['events', 'latest', '--follow', '--action', 'test.unit'], {
      cwd: root,
      env,
    });
    expect(followed.code, followed.stderr).toBe(0);
    expect(followed.stdout).toContain('[stderr] test.unit: unit-complains');
    expect(followed.stdout).not.toContain('build.app');
  });

  it('a malformed --action, or one with no events, is a usage error (exit 2)', async () => {
    const root = project();
    expect((await runTend(['build'], { cwd: root, env })).code).toBe(0);
    const bad = await runTend(['events', '--action', 'unit'], { cwd: root, env });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--action expects an action reference such as deploy.web');
    const none = await runTend(['events', '--action', 'test.unit'], { cwd: root, env });
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('has events of test.unit');
  });
});
