/**
 * The outbox's policies through the real CLI and server: the size bound (what is dropped and
 * what never is), quarantine of refused events and sending them again, a refused token, where
 * the server setting comes from; and in-process, that a command without a server does no
 * streaming work and one with a server leaves nothing running behind.
 */
import { mkdtempSync, readdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { executeCommand } from '../../src/commands/execute.js';
import { startServer } from '../../src/server/start.js';
import { pendingOutboxBytes } from '../../src/outbox/bound.js';
import { createNoopPlugin } from '../fixtures/noop-plugin.js';
import { makeProject, removeProjects, runTend } from '../helpers/project.js';
import { FaultProxy } from './fault-proxy.js';
import {
  busyProject,
  outboxEvents,
  outboxFiles,
  recordedStreamedEvents,
  repeated,
  streamEnv,
  useStreamServer,
} from './helpers.js';

const stream = useStreamServer();
let proxy: FaultProxy;

beforeEach(async () => {
  proxy = await FaultProxy.start(stream.server.current!.url);
});

afterEach(async () => {
  await proxy.close();
  removeProjects();
});

const tend = (
  root: string,
  args: string[],
  extra: Record<string, string> = {},
  token = stream.server.tokens.ingest,
) => runTend(args, { cwd: root, env: streamEnv(proxy.url, token, extra) });

function storedOnce(ids: string[]): void {
  const stored = stream.server.eventIds();
  expect(repeated(stored)).toEqual([]);
  const set = new Set(stored);
  expect(ids.filter((id) => !set.has(id))).toEqual([]);
}

const outboxDir = (root: string) => path.join(root, '.tend', 'outbox');
const quarantineFiles = (root: string) => {
  try {
    return readdirSync(path.join(outboxDir(root), 'quarantine'));
  } catch {
    return [];
  }
};

describe('the outbox bound', () => {
  it('drops the oldest actionStatus events first and never namespaceStatus or session events', async () => {
    const root = busyProject(60, 'bounded');
    const extra = { TEND_OUTBOX_MAX_BYTES: '30000' };
    proxy.upstream = undefined;
    const first = await tend(root, ['build'], extra);
    expect(first.code, first.stderr).toBe(0);
    const second = await tend(root, ['build', '--force'], extra);
    expect(second.code, second.stderr).toBe(0);
    expect(second.stderr).toMatch(/over its bound .* dropped the oldest \d+ actionStatus event\(s\)/);

    const recorded = recordedStreamedEvents(root);
    const kept = outboxEvents(root);
    const keptIds = new Set(kept.map((e) => e.id));
    const dropped = recorded.filter((e) => !keptIds.has(e.id));
    expect(dropped.length).toBeGreaterThan(0);
    expect(new Set(dropped.map((e) => e.type))).toEqual(new Set(['actionStatus']));
    // Oldest first: every dropped actionStatus is older than every kept one.
    const keptActions = kept.filter((e) => e.type === 'actionStatus').map((e) => e.id);
    expect(dropped.every((d) => keptActions.every((k) => d.id < k))).toBe(true);
    expect(pendingOutboxBytes(outboxDir(root))).toBeLessThanOrEqual(30000);

    proxy.upstream = stream.server.current!.url;
    const pushed = await tend(root, ['events', 'push']);
    expect(pushed.code, pushed.stderr).toBe(0);
    const undroppable = recorded.filter((e) => e.type !== 'actionStatus');
    expect(undroppable.length).toBeGreaterThanOrEqual(6); // started, namespace, completed, twice
    storedOnce([...keptIds]);
    const stored = new Set(stream.server.eventIds());
    expect(dropped.filter((e) => stored.has(e.id))).toEqual([]);
    expect(outboxFiles(root)).toEqual([]);
  });
});

describe('an outbox over its bound with nothing droppable left', () => {
  it('keeps every namespaceStatus and session event, and says it is still over', async () => {
    const root = busyProject(20, 'overfull');
    // Smaller than one session's undroppable events.
    const extra = { TEND_OUTBOX_MAX_BYTES: '1000' };
    proxy.upstream = undefined;
    for (const args of [['build'], ['build', '--force']]) {
      const run = await tend(root, args, extra);
      expect(run.code, run.stderr).toBe(0);
      expect(run.stderr).toMatch(
        /over its bound .*dropped the oldest \d+ actionStatus event\(s\); .* over remain: namespaceStatus and session events are never dropped/,
      );
    }
    const recorded = recordedStreamedEvents(root);
    const kept = outboxEvents(root);
    const keptIds = new Set(kept.map((e) => e.id));
    // Every droppable event is gone; every other one is still there.
    expect(kept.filter((e) => e.type === 'actionStatus' || e.type === 'log')).toEqual([]);
    const undroppable = recorded.filter((e) => e.type !== 'actionStatus' && e.type !== 'log');
    expect(undroppable.filter((e) => e.type === 'namespaceStatus').length).toBeGreaterThanOrEqual(2);
    expect(undroppable.filter((e) => !keptIds.has(e.id))).toEqual([]);
    expect(pendingOutboxBytes(outboxDir(root))).toBeGreaterThan(1000);

    proxy.upstream = stream.server.current!.url;
    const pushed = await tend(root, ['events', 'push']);
    expect(pushed.code, pushed.stderr).toBe(0);
    storedOnce(undroppable.map((e) => e.id));
  });
});

describe('refused events', () => {
  it('quarantines the one event the server names, sends the rest, and resends it on request', async () => {
    const root = busyProject(3, 'refused');
    let refusedId: string | undefined;
    proxy.plan = (index, record) => {
      if (index > 0) return { kind: 'pass' };
      refusedId = record.eventIds[1];
      return {
        kind: 'status',
        status: 400,
        body: JSON.stringify({
          error: { code: 'TEND_EVENT_INVALID', message: 'events[1]/payload: injected', detail: { index: 1 } },
        }),
      };
    };
    const run = await tend(root, ['build']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toMatch(/refused 1 event\(s\) \(HTTP 400 TEND_EVENT_INVALID/);
    expect(run.stderr).not.toMatch(/wait in/);
    const recorded = recordedStreamedEvents(root).map((e) => e.id);
    const stored = new Set(stream.server.eventIds());
    expect(recorded.filter((id) => !stored.has(id))).toEqual([refusedId]);
    expect(quarantineFiles(root)).toHaveLength(1);

    const listed = await tend(root, ['events', 'outbox', '--json']);
    expect(listed.code, listed.stderr).toBe(0);
    expect(JSON.parse(listed.stdout)).toMatchObject({
      events: 0,
      quarantined: [
        { events: 1, status: 400, code: 'TEND_EVENT_INVALID', message: 'events[1]/payload: injected' },
      ],
    });
    const human = await tend(root, ['events', 'outbox']);
    expect(human.stdout).toMatch(/quarantined/);

    // Not retried on its own…
    const plain = await tend(root, ['events', 'push']);
    expect(plain.code, plain.stderr).toBe(0);
    expect(quarantineFiles(root)).toHaveLength(1);
    // …but on request, once the cause is fixed.
    const retried = await tend(root, ['events', 'push', '--retry-quarantined']);
    expect(retried.code, retried.stderr).toBe(0);
    expect(retried.stdout).toMatch(/Re-sent 1 quarantined event/);
    storedOnce(recorded);
    expect(quarantineFiles(root)).toEqual([]);
    expect(outboxFiles(root)).toEqual([]);
  });

  it('quarantines the whole batch when the server does not name an event; push fails while it refuses', async () => {
    const root = busyProject(2, 'forbidden');
    proxy.plan = () => ({ kind: 'status', status: 403 });
    const run = await tend(root, ['build']);
    expect(run.code, run.stderr).toBe(0);
    const recorded = recordedStreamedEvents(root).map((e) => e.id);
    expect(run.stderr).toMatch(/refused \d+ event\(s\) \(HTTP 403/);
    const listed = JSON.parse((await tend(root, ['events', 'outbox', '--json'])).stdout) as {
      quarantined: { events: number }[];
    };
    expect(listed.quarantined.reduce((n, q) => n + q.events, 0)).toBe(recorded.length);

    const stillRefused = await tend(root, ['events', 'push', '--retry-quarantined']);
    expect(stillRefused.code).toBe(1);
    expect(stillRefused.stdout).toMatch(/refused/);
    expect(quarantineFiles(root).length).toBeGreaterThan(0);

    proxy.plan = () => ({ kind: 'pass' });
    const fixed = await tend(root, ['events', 'push', '--retry-quarantined']);
    expect(fixed.code, fixed.stderr).toBe(0);
    storedOnce(recorded);
    expect(quarantineFiles(root)).toEqual([]);
  });

  it('a refused token stops the stream and keeps every event; push says so and fails', async () => {
    const root = busyProject(2, 'token');
    const run = await tend(root, ['build'], {}, 'tend_not-a-token');
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toMatch(/refused the token/);
    expect(run.stderr).not.toMatch(/tend_not-a-token/);
    expect(proxy.records).toHaveLength(1); // not retried
    const recorded = recordedStreamedEvents(root);
    expect(outboxEvents(root)).toHaveLength(recorded.length);
    expect(quarantineFiles(root)).toEqual([]);

    const refused = await tend(root, ['events', 'push', '--json'], {}, 'tend_not-a-token');
    expect(refused.code).not.toBe(0);
    expect(JSON.parse(refused.stdout).error.code).toBe('TEND_AUTH');
    expect(refused.stdout + refused.stderr).not.toMatch(/tend_not-a-token/);

    const pushed = await tend(root, ['events', 'push']);
    expect(pushed.code, pushed.stderr).toBe(0);
    storedOnce(recorded.map((e) => e.id));
  });
});

describe('tend events push', () => {
  it('fails clearly when the server stays unreachable, and keeps everything', async () => {
    const root = busyProject(2, 'unreachable');
    proxy.upstream = undefined;
    const run = await tend(root, ['build']);
    expect(run.code, run.stderr).toBe(0);
    const waiting = recordedStreamedEvents(root).length;
    const push = await tend(root, ['events', 'push', '--timeout', '1', '--json']);
    expect(push.code).toBe(1);
    const { error } = JSON.parse(push.stdout) as { error: { code: string; message: string } };
    expect(error.code).toBe('TEND_SERVER');
    expect(error.message).toContain(`${waiting} event(s) could not be delivered to ${proxy.url} within 1 s`);
    expect(outboxEvents(root)).toHaveLength(waiting);
  });
});

describe('where the server comes from', () => {
  it("prefers the project's server: over TEND_SERVER_URL", async () => {
    const root = makeProject({
      'tend.yml': `kind: Project
name: configured
defaultEnvironment: dev
environments:
  - name: dev
    defaultNamespace: configured-dev
providers:
  - name: exec
server: ${proxy.url}
---
kind: Build
type: exec
name: a
spec: { command: ["true"] }
`,
    });
    const run = await runTend(['build'], {
      cwd: root,
      env: streamEnv('http://127.0.0.1:9', stream.server.tokens.ingest),
    });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).not.toMatch(/wait in/);
    storedOnce(recordedStreamedEvents(root).map((e) => e.id));
  });

  it('without a server configured, fails push clearly and shows the outbox', async () => {
    const root = busyProject(1, 'nowhere');
    const run = await runTend(['build'], { cwd: root, env: streamEnv(undefined, undefined) });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).not.toMatch(/wait in/);
    expect(outboxFiles(root).filter((f) => !f.endsWith('.jsonl'))).toEqual([]); // no lock, no ack
    const push = await runTend(['events', 'push', '--json'], {
      cwd: root,
      env: streamEnv(undefined, undefined),
    });
    expect(push.code).not.toBe(0);
    expect(JSON.parse(push.stdout).error.message).toMatch(/no tend server configured/);
    const outbox = await runTend(['events', 'outbox', '--json'], {
      cwd: root,
      env: streamEnv(undefined, undefined),
    });
    expect(JSON.parse(outbox.stdout)).toMatchObject({
      server: null,
      events: recordedStreamedEvents(root).length,
    });
  });
});

describe('in-process', () => {
  const projectYaml = (server?: string) => `kind: Project
name: inproc
defaultEnvironment: dev
environments:
  - name: dev
    defaultNamespace: inproc-dev
providers:
  - name: noop
${server ? `server: ${server}\n` : ''}---
kind: Build
type: noop
name: a
spec: {}
`;
  const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
  const saved = { ...process.env };
  beforeEach(() => {
    process.env.TEND_CONFIG_DIR = mkdtempSync(path.join(os.tmpdir(), 'tend-no-login-'));
    delete process.env.TEND_SERVER_URL;
    delete process.env.TEND_TOKEN;
  });
  afterEach(() => {
    process.env = { ...saved };
  });

  it('without a server: no lock, no ack, no timer left', async () => {
    const root = makeProject({ 'tend.yml': projectYaml() });
    const before = timers();
    const result = await executeCommand('build', [], { root }, [createNoopPlugin().plugin]);
    expect(result.exitCode).toBe(0);
    // None of its own left (the test runner's own timers may have ended meanwhile).
    expect(timers()).toBeLessThanOrEqual(before);
    expect(outboxFiles(root).filter((f) => !f.endsWith('.jsonl'))).toEqual([]);
  });

  it('without a server: the outbox still records every session, within its bound', async () => {
    const actions = Array.from(
      { length: 40 },
      (_, i) => `---\nkind: Build\ntype: noop\nname: b${i}\nspec: {}\n`,
    );
    const root = makeProject({ 'tend.yml': projectYaml() + actions.join('') });
    process.env.TEND_OUTBOX_MAX_BYTES = '20000';
    for (let i = 0; i < 3; i++) {
      const result = await executeCommand('build', [], { root, force: true }, [createNoopPlugin().plugin]);
      expect(result.exitCode).toBe(0);
    }
    expect(pendingOutboxBytes(path.join(root, '.tend', 'outbox'))).toBeLessThanOrEqual(20_000);
    const kept = outboxEvents(root).map((e) => e.type);
    // What cleanup needs is never dropped: every session's start and end, every namespace event.
    expect(kept.filter((t) => t === 'sessionStarted')).toHaveLength(3);
    expect(kept.filter((t) => t === 'sessionCompleted')).toHaveLength(3);
    expect(kept.filter((t) => t === 'actionStatus').length).toBeLessThan(3 * 40 * 3);
  });

  it('with a server: the events are stored when the command returns, and nothing keeps running', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'tend-inproc-server-'));
    const running = await startServer({ sqliteFile: path.join(dir, 'tend.db'), port: 0, logLevel: 'silent' });
    try {
      const { TokenRepository } = await import('../../src/server/db/repositories/tokens.js');
      const { migrateToLatest, openDatabase } = await import('../../src/server/db/database.js');
      const db = await openDatabase({ sqliteFile: path.join(dir, 'tend.db') });
      await migrateToLatest(db);
      process.env.TEND_TOKEN = (
        await new TokenRepository(db.db).create({ name: 'cli', scope: 'ingest' })
      ).token;
      await db.close();
      const root = makeProject({ 'tend.yml': projectYaml(running.url) });
      const before = timers();
      const result = await executeCommand('build', [], { root }, [createNoopPlugin().plugin]);
      expect(result.exitCode).toBe(0);
      expect(timers()).toBe(before);
      expect(outboxFiles(root)).toEqual([]);
      const check = await openDatabase({ sqliteFile: path.join(dir, 'tend.db') });
      const rows = await check.db.selectFrom('events').select('id').execute();
      await check.close();
      expect(rows.map((r) => r.id).sort()).toEqual(
        recordedStreamedEvents(root)
          .map((e) => e.id)
          .sort(),
      );
    } finally {
      await running.close();
    }
  });
});
