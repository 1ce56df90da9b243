/**
 * A server that is down (nothing listens at its address: the connection is refused) costs a
 * command no wait: the end-of-command wait gives up at the first refused connection, the events
 * stay in the outbox, and stderr says how many wait. `tend events push` still waits its timeout.
 * The waits here are conditions: a wait that did not give up would outlast the test's timeout.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { monotonicFactory } from 'ulidx';
import { afterEach, describe, expect, it } from 'vitest';
import { countOutbox } from '../../src/outbox/read.js';
import { OutboxStreamer } from '../../src/stream/streamer.js';
import { freePort, makeProject, removeProjects, runTend, waitFor } from '../helpers/project.js';
import { outboxEvents, recordedStreamedEvents, streamEnv } from './helpers.js';

const ulid = monotonicFactory();
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  removeProjects();
});

/** An outbox holding one ended session of `n` events. */
function outboxOf(n: number): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tend-refused-'));
  dirs.push(dir);
  const sessionId = ulid();
  const lines = Array.from({ length: n }, (_, i) =>
    JSON.stringify({
      id: ulid(),
      type: 'actionStatus',
      sessionId,
      timestamp: new Date().toISOString(),
      payload: { actionRef: `build.a${i}`, kind: 'Build', version: 'v-1', state: 'ready' },
    }),
  );
  writeFileSync(path.join(dir, `${sessionId}.jsonl`), lines.join('\n') + '\n');
  return dir;
}

/** Longer than any test here may take: a wait that returns did not run into its deadline. */
const forever = 60 * 60_000;
/** Retries an hour apart: a streamer in its backoff would never try again within the test. */
const slowBackoff = { baseMs: forever, capMs: forever, maxRetryAfterMs: forever };

describe('a server that refuses connections', () => {
  it('the exit wait gives up at the first refused connection; the events stay in the outbox', async () => {
    const dir = outboxOf(7);
    const url = `http://127.0.0.1:${await freePort()}`;
    const streamer = new OutboxStreamer({
      outboxDir: dir,
      connection: { url },
      backoff: slowBackoff,
      giveUpWhenRefused: true,
      warn: () => undefined,
    }).start();
    // The first attempt, while the "command" runs, is refused; the streamer backs off for an hour.
    await waitFor(() => streamer.report.lastError, 'the first refused attempt');
    expect(streamer.report.lastError).toMatch(/ECONNREFUSED/);
    const report = await streamer.finish(forever);
    expect(report).toMatchObject({ gaveUpRefused: true, delivered: 0, waiting: 7 });
    expect(countOutbox(dir)).toBe(7);
  });

  it('without giveUpWhenRefused (tend events push) it keeps trying until its deadline', async () => {
    const dir = outboxOf(3);
    const url = `http://127.0.0.1:${await freePort()}`;
    const streamer = new OutboxStreamer({
      outboxDir: dir,
      connection: { url },
      backoff: { baseMs: 1, capMs: 1, maxRetryAfterMs: 1 },
      warn: () => undefined,
    }).start();
    // Retried every millisecond until the deadline; it never gives up on its own.
    const report = await streamer.finish(300);
    expect(report.gaveUpRefused).toBeUndefined();
    expect(report).toMatchObject({ delivered: 0, waiting: 3 });
    expect(report.lastError).toMatch(/ECONNREFUSED/);
    expect(countOutbox(dir)).toBe(3);
  });

  it('tend status against a closed port: exit 0, the events wait in the outbox, stderr says how many', async () => {
    const root = makeProject({
      'tend.yml': `kind: Project
name: refused
defaultEnvironment: dev
environments:
  - name: dev
    defaultNamespace: refused-dev
providers:
  - name: exec
---
kind: Build
type: exec
name: b
spec: { command: ["true"] }
`,
    });
    const url = `http://127.0.0.1:${await freePort()}`;
    const run = await runTend(['status'], { cwd: root, env: streamEnv(url, 'tend_test-token') });
    expect(run.code, run.stderr).toBe(0);
    const recorded = recordedStreamedEvents(root);
    expect(recorded.length).toBeGreaterThan(1);
    const match = /tend: (\d+) event\(s\) wait in \S+ for (\S+) \((.*)\)/.exec(run.stderr);
    expect(match, run.stderr).not.toBeNull();
    expect(Number(match![1])).toBe(recorded.length);
    expect(match![2]).toBe(url);
    expect(match![3]).toMatch(/ECONNREFUSED.*the server is down, so tend did not wait/);
    expect(outboxEvents(root).map((e) => e.id)).toEqual(recorded.map((e) => e.id));
  });
});
