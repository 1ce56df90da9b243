/**
 * One bad event never stops the stream: a batch the server keeps failing (500 after its retries,
 * or 400 naming no event) is split until the event that fails alone is found; that event is
 * quarantined with the server's answer and the rest is delivered. Through the real CLI and the
 * real server, behind a proxy that answers for the server the way PostgreSQL made it answer for
 * a NUL character in `user` (500), or the way a server refusing one event without naming it
 * does (400). A server failing for everything quarantines nothing.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { TendEvent } from '../../src/events/catalog.js';
import { removeProjects, runTend } from '../helpers/project.js';
import { FaultProxy } from './fault-proxy.js';
import {
  busyProject,
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

const tend = (root: string, args: string[]) =>
  runTend(args, { cwd: root, env: streamEnv(proxy.url, stream.server.tokens.ingest) });

const quarantineDir = (root: string) => path.join(root, '.tend', 'outbox', 'quarantine');
function quarantined(root: string): {
  file: string;
  content: { status: number; error: { message: string }; events: TendEvent[]; isolated?: boolean };
}[] {
  let names: string[];
  try {
    names = readdirSync(quarantineDir(root));
  } catch {
    return [];
  }
  return names.map((name) => ({
    file: name,
    content: JSON.parse(readFileSync(path.join(quarantineDir(root), name), 'utf8')),
  }));
}

const postgresNul = JSON.stringify({
  error: { code: 'TEND_INTERNAL', message: 'invalid byte sequence for encoding "UTF8": 0x00' },
});

/** A project whose events wait in the outbox (the server was down while it ran). */
async function waitingEvents(name: string): Promise<{ root: string; events: TendEvent[] }> {
  const root = busyProject(4, name);
  proxy.upstream = undefined;
  const run = await tend(root, ['build']);
  expect(run.code, run.stderr).toBe(0);
  proxy.upstream = stream.server.current!.url;
  const events = recordedStreamedEvents(root);
  expect(events.length).toBeGreaterThan(8);
  return { root, events };
}

function expectStoredExactly(ids: string[]): void {
  const stored = stream.server.eventIds();
  expect(repeated(stored)).toEqual([]);
  const set = new Set(stored);
  expect(ids.filter((id) => !set.has(id))).toEqual([]);
}

describe('an event the server keeps failing', () => {
  it('500 after its retries: splits the batch, quarantines the event that fails alone, delivers the rest', async () => {
    const { root, events } = await waitingEvents('poison-middle');
    const bad = events[Math.floor(events.length / 2)]!;
    proxy.plan = (_index, record) =>
      record.eventIds.includes(bad.id)
        ? { kind: 'status', status: 500, body: postgresNul }
        : { kind: 'pass' };

    const push = await tend(root, ['events', 'push']);
    expect(push.code, push.stderr).toBe(1); // the server refused an event: it is in the quarantine
    expect(push.stderr).toMatch(/splitting it to find the event that fails alone/);
    expect(push.stdout).toMatch(/1 event\(s\) kept failing alone/);

    const others = events.filter((e) => e.id !== bad.id).map((e) => e.id);
    expectStoredExactly(others);
    expect(stream.server.eventIds()).not.toContain(bad.id);
    const kept = quarantined(root);
    expect(kept).toHaveLength(1);
    expect(kept[0]!.content).toMatchObject({
      status: 500,
      isolated: true,
      error: { message: 'invalid byte sequence for encoding "UTF8": 0x00' },
    });
    expect(kept[0]!.content.events.map((e) => e.id)).toEqual([bad.id]);
    expect(outboxFiles(root)).toEqual([]);

    const outbox = await tend(root, ['events', 'outbox', '--json']);
    expect(JSON.parse(outbox.stdout)).toMatchObject({
      events: 0,
      quarantined: [
        {
          events: 1,
          status: 500,
          code: 'TEND_INTERNAL',
          message: 'invalid byte sequence for encoding "UTF8": 0x00',
          isolated: { id: bad.id, type: bad.type },
        },
      ],
    });
    const human = await tend(root, ['events', 'outbox']);
    expect(human.stdout).toContain(`${bad.type} ${bad.id} failed alone; the rest of its batch was delivered`);

    // Once the server takes it, it is sent on request.
    proxy.plan = () => ({ kind: 'pass' });
    const retried = await tend(root, ['events', 'push', '--retry-quarantined']);
    expect(retried.code, retried.stderr).toBe(0);
    expectStoredExactly(events.map((e) => e.id));
  });

  it('the first event of the segment (sessionStarted with a NUL in user) fails alone: the rest goes through', async () => {
    const { root, events } = await waitingEvents('poison-first');
    const bad = events.find((e) => e.type === 'sessionStarted')!;
    proxy.plan = (_index, record) =>
      record.eventIds.includes(bad.id)
        ? { kind: 'status', status: 500, body: postgresNul }
        : { kind: 'pass' };

    const push = await tend(root, ['events', 'push']);
    expect(push.code, push.stderr).toBe(1);
    expectStoredExactly(events.filter((e) => e.id !== bad.id).map((e) => e.id));
    expect(quarantined(root).map((q) => q.content.events.map((e) => e.id))).toEqual([[bad.id]]);
  });

  it('400 naming no event: splits the batch and quarantines only the event refused alone', async () => {
    const { root, events } = await waitingEvents('refused-unnamed');
    const bad = events[events.length - 2]!;
    const body = JSON.stringify({
      error: { code: 'TEND_SERVER_BAD_REQUEST', message: 'user: contains NUL' },
    });
    proxy.plan = (_index, record) =>
      record.eventIds.includes(bad.id) ? { kind: 'status', status: 400, body } : { kind: 'pass' };

    const push = await tend(root, ['events', 'push']);
    expect(push.code, push.stderr).toBe(1);
    expectStoredExactly(events.filter((e) => e.id !== bad.id).map((e) => e.id));
    const kept = quarantined(root);
    expect(kept.map((q) => q.content.events.map((e) => e.id))).toEqual([[bad.id]]);
    expect(kept[0]!.content).toMatchObject({
      status: 400,
      isolated: true,
      error: { message: 'user: contains NUL' },
    });
  });

  it('a server failing every batch with 500 quarantines nothing: everything waits', async () => {
    const { root, events } = await waitingEvents('broken-server');
    proxy.plan = () => ({ kind: 'status', status: 500 });
    const push = await tend(root, ['events', 'push', '--timeout', '4', '--json']);
    expect(push.code).toBe(1);
    expect(JSON.parse(push.stdout).error.code).toBe('TEND_SERVER');
    expect(quarantined(root)).toEqual([]);
    expect(stream.server.eventIds().filter((id) => events.some((e) => e.id === id))).toEqual([]);

    proxy.plan = () => ({ kind: 'pass' });
    const pushed = await tend(root, ['events', 'push']);
    expect(pushed.code, pushed.stderr).toBe(0);
    expectStoredExactly(events.map((e) => e.id));
  });
});
