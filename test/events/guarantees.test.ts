/**
 * The framework's event guarantees end to end: namespaces recorded even when resolution fails
 * or only builds run, no listener growth over many calls, a readable log and outbox after
 * SIGKILL, and a torn last line that is skipped, never fatal.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { appendFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { executeCommand } from '../../src/commands/execute.js';
import { openProject, resolveAction, startSession } from '../../src/commands/context.js';
import type { TendEvent } from '../../src/events/catalog.js';
import { listSessionLogs, readSessionLog } from '../../src/events/local-log.js';
import { readPending } from '../../src/outbox/read.js';
import { listSegmentIds } from '../../src/outbox/segments.js';
import { ActionGraph } from '../../src/graph/graph.js';
import { computeVersions } from '../../src/graph/version.js';
import { createNoopPlugin } from '../fixtures/noop-plugin.js';
import { makeProject, removeProjects, runTend, tendBin, waitFor } from '../helpers/project.js';

const project = (extra = '') => `kind: Project
name: guarantees
defaultEnvironment: dev
environments:
  - name: dev
    defaultNamespace: guarantees-dev
providers:
  - name: exec
---
kind: Build
type: exec
name: a
spec: { command: ["true"] }
${extra}`;

function sessionEvents(root: string): TendEvent[] {
  const [latest] = listSessionLogs(path.join(root, '.tend', 'events'));
  return readSessionLog(latest!.file).events;
}

afterEach(removeProjects);

describe('namespace recording', () => {
  it('records the namespace when resolving an action fails after the providers were prepared', async () => {
    const root = makeProject({
      'tend.yml': project(`---
kind: Deploy
type: exec
name: b
spec: { command: ["echo", "\${actions.build.a.outputs.nothing}"] }
`),
    });
    const result = await executeCommand('deploy', [], { root });
    // A missing output key is the configuration's fault: exit 2, as docs/errors.md says.
    expect(result.exitCode).toBe(2);
    expect(result.data.actions.find((a) => a.ref === 'deploy.b')?.error?.message).toMatch(/nothing/);
    const events = sessionEvents(root);
    const ns = events.filter((e) => e.type === 'namespaceStatus');
    // Prepared (created), then observed by build.a; deploy.b failed before touching it.
    expect(ns.map((e) => [e.payload.namespaceName, e.payload.state, e.payload.cause])).toEqual([
      ['guarantees-dev', 'ready', 'created'],
      ['guarantees-dev', 'ready', 'observed'],
    ]);
    expect(events.at(-1)?.type).toBe('sessionCompleted');
  });

  it('records the namespace in a session that only runs builds', async () => {
    const root = makeProject({ 'tend.yml': project() });
    const result = await executeCommand('build', [], { root });
    expect(result.exitCode).toBe(0);
    const ns = sessionEvents(root).filter((e) => e.type === 'namespaceStatus');
    expect(ns.map((e) => e.payload.cause)).toEqual(['created', 'observed']);
    for (const e of ns)
      expect(e.payload).toMatchObject({ namespaceName: 'guarantees-dev', role: 'app', state: 'ready' });
  });
});

describe('listeners', () => {
  it('10,000 handler calls leave the number of listeners unchanged', async () => {
    const root = makeProject({
      'tend.yml': `kind: Project
name: listeners
defaultEnvironment: dev
environments: [{ name: dev, defaultNamespace: listeners-dev }]
providers: [{ name: noop }]
---
kind: Build
type: noop
name: a
spec: {}
`,
    });
    const noop = createNoopPlugin({ emits: ['log', 'namespaceStatus'] });
    const opened = await openProject({ root }, [noop.plugin]);
    const s = startSession(opened, 'listeners', []);
    const graph = new ActionGraph(opened.actions);
    const versions = computeVersions(graph, ['build.a']);
    const action = resolveAction(opened, graph, versions, 'build.a', {});
    await s.router.initProviders();
    await s.router.callAction(action, 'getStatus', { force: false });
    const before = {
      bus: s.session.bus.listenerCount(),
      sigint: process.listenerCount('SIGINT'),
      inFlight: s.router.describeInFlight().length,
    };
    for (let i = 0; i < 10_000; i++) await s.router.callAction(action, 'getStatus', { force: false });
    const after = {
      bus: s.session.bus.listenerCount(),
      sigint: process.listenerCount('SIGINT'),
      inFlight: s.router.describeInFlight().length,
    };
    await s.close({});
    expect(noop.calls).toHaveLength(10_001);
    expect(after).toEqual(before);
  });
});

describe('crashes', () => {
  it('a CLI killed with SIGKILL mid-run leaves a readable log and outbox', async () => {
    const root = makeProject({
      'tend.yml': project(`---
kind: Run
type: exec
name: slow
spec: { command: ["node", "-e", "console.log('started'); setTimeout(() => {}, 2000)"] }
`),
    });
    const child = spawn(process.execPath, [tendBin, 'run', 'slow'], { cwd: root, stdio: 'ignore' });
    const eventsDir = path.join(root, '.tend', 'events');
    await waitFor(
      () =>
        listSessionLogs(eventsDir)[0] &&
        readSessionLog(listSessionLogs(eventsDir)[0]!.file).events.some(
          (e) =>
            e.type === 'actionStatus' &&
            e.payload.actionRef === 'run.slow' &&
            e.payload.state === 'processing',
        ),
      'run.slow to start processing',
      20_000,
    );
    child.kill('SIGKILL');
    await new Promise((resolve) => child.once('close', resolve));

    const { events, skipped } = readSessionLog(listSessionLogs(eventsDir)[0]!.file);
    expect(skipped).toBe(0);
    expect(events[0]!.type).toBe('sessionStarted');
    expect(events.some((e) => e.type === 'namespaceStatus')).toBe(true);
    expect(events.some((e) => e.type === 'sessionCompleted' || e.type === 'sessionFailed')).toBe(false);

    const outboxDir = path.join(root, '.tend', 'outbox');
    const segments = listSegmentIds(outboxDir);
    expect(segments).toHaveLength(1);
    const pending = readPending(outboxDir, segments[0]!);
    expect(pending.skipped).toBe(0);
    const streamed = pending.events.map((e) => e.type);
    expect(streamed).toContain('sessionStarted');
    expect(streamed).toContain('namespaceStatus');
    expect(streamed).toContain('actionStatus');
    expect(streamed).not.toContain('log');

    const listed = await runTend(['events', '--json'], { cwd: root });
    expect(listed.code).toBe(0);
    expect(JSON.parse(listed.stdout)[0].outcome).toBe('running or interrupted');
  });

  it('skips a torn last line of a session log with a warning', async () => {
    const root = makeProject({ 'tend.yml': project() });
    expect((await runTend(['build'], { cwd: root })).code).toBe(0);
    const eventsDir = path.join(root, '.tend', 'events');
    const [file] = readdirSync(eventsDir);
    appendFileSync(path.join(eventsDir, file!), '{"id":"01J0000000000000000000000","type":"log","sess');
    const shown = await runTend(['events', 'latest', '--type', 'namespaceStatus', '--json'], { cwd: root });
    expect(shown.code).toBe(0);
    expect(shown.stderr).toMatch(/skipped 1 unreadable line/);
    expect(JSON.parse(shown.stdout)).toHaveLength(2); // created by prepare, observed by the build
  });

  it('rejects an unknown event type filter with a usage error', async () => {
    const root = makeProject({ 'tend.yml': project() });
    expect((await runTend(['build'], { cwd: root })).code).toBe(0);
    const shown = await runTend(['events', 'latest', '--type', 'nope'], { cwd: root });
    expect(shown.code).toBe(2);
    expect(shown.stderr).toMatch(/unknown event type "nope"/);
  });
});
