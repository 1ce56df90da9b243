/**
 * The stream under faults, through the real CLI and the real server behind a fault-injecting
 * proxy: server down, server killed mid-batch, 429 storms, a server that never answers, the CLI
 * killed mid-stream, two CLIs on one outbox. In every case the server ends up with every event
 * the CLI recorded, each exactly once.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { removeProjects, runTend, tendBin, waitFor, type TendRun } from '../helpers/project.js';
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
  if (!stream.server.current) await stream.server.start();
  proxy = await FaultProxy.start(stream.server.current!.url);
});

afterEach(async () => {
  await proxy.close();
  removeProjects();
});

const env = () => streamEnv(proxy.url, stream.server.tokens.ingest);
const tend = (root: string, ...args: string[]) => runTend(args, { cwd: root, env: env() });

/** The number of events the CLI said wait in the outbox, or 0. */
function waitingReported(run: TendRun): number {
  const match = /tend: (\d+) event\(s\) wait in /.exec(run.stderr);
  return match ? Number(match[1]) : 0;
}

/** The server has every event the project recorded, each once, and the outbox is empty. */
function expectExactlyOnce(root: string, expected = recordedStreamedEvents(root).map((e) => e.id)): void {
  const stored = stream.server.eventIds();
  expect(repeated(stored)).toEqual([]);
  const mine = new Set(expected);
  const storedMine = stored.filter((id) => mine.has(id));
  expect(storedMine.length).toBe(mine.size);
  expect(outboxFiles(root)).toEqual([]);
}

describe('the stream under faults', () => {
  it('server down for the whole command: the CLI says what waits; tend events push delivers it once', async () => {
    proxy.upstream = undefined;
    const root = busyProject(40, 'down');
    const run = await tend(root, 'build');
    expect(run.code, run.stderr).toBe(0);
    const recorded = recordedStreamedEvents(root);
    expect(waitingReported(run)).toBe(recorded.length);
    expect(run.stderr).toMatch(/tend events push/);
    expect(outboxEvents(root)).toHaveLength(recorded.length);

    proxy.upstream = stream.server.current!.url;
    const pushed = await tend(root, 'events', 'push', '--json');
    expect(pushed.code, pushed.stderr).toBe(0);
    const data = JSON.parse(pushed.stdout) as { report: { delivered: number; waiting: number } };
    expect(data.report).toMatchObject({ delivered: recorded.length, waiting: 0 });
    expectExactlyOnce(root);

    const again = await tend(root, 'events', 'push');
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toMatch(/Nothing to send/);
  });

  it('server killed mid-batch: the batch is sent again after the restart, stored once', async () => {
    const root = busyProject(300, 'killed');
    let killedBatch: string[] | undefined;
    let restarted: Promise<void> | undefined;
    proxy.onForwarded = (record) => {
      if (killedBatch || record.index < 1) return;
      killedBatch = record.eventIds;
      // SIGKILL while the server handles the batch: it may or may not have stored it.
      const dying = stream.server.current!;
      proxy.upstream = undefined;
      restarted = (async () => {
        await dying.kill('SIGKILL');
        const next = await stream.server.start();
        proxy.upstream = next.url;
      })();
    };
    const run = await tend(root, 'build', '--concurrency', '2');
    expect(run.code, run.stderr).toBe(0);
    await restarted;
    expect(killedBatch?.length).toBeGreaterThan(0);
    const killedRecord = proxy.records.find((r) => r.eventIds === killedBatch)!;
    expect(killedRecord.status).toBeUndefined(); // the CLI never got an answer for it
    if (waitingReported(run) > 0) {
      const pushed = await tend(root, 'events', 'push');
      expect(pushed.code, pushed.stderr).toBe(0);
    }
    // The batch went out again, and was answered.
    const delivered = new Set(proxy.deliveredIds());
    expect(killedBatch!.every((id) => delivered.has(id))).toBe(true);
    expectExactlyOnce(root);
  });

  it('429 storms: Retry-After is honoured, nothing is lost, nothing stored twice', async () => {
    const root = busyProject(60, 'storm');
    // With Retry-After and the growing backoff, more 429s than the command and its 5 s exit wait see.
    const storm = 8;
    proxy.plan = (index) =>
      index < storm ? { kind: 'status', status: 429, retryAfter: '1' } : { kind: 'pass' };
    const run = await tend(root, 'build');
    const cliEnded = performance.now();
    expect(run.code, run.stderr).toBe(0);
    // The exit wait is bounded: the CLI gave up while the storm went on, and said so.
    expect(waitingReported(run)).toBeGreaterThan(0);
    const pushed = await tend(root, 'events', 'push');
    expect(pushed.code, pushed.stderr).toBe(0);
    expect(proxy.records.filter((r) => r.status === 429)).toHaveLength(storm);
    // Within one process (the CLI, then push), a request after a 429 comes at least Retry-After later.
    let checked = 0;
    for (let i = 0; i + 1 < proxy.records.length; i++) {
      const [r, next] = [proxy.records[i]!, proxy.records[i + 1]!];
      if (r.status !== 429 || r.at < cliEnded !== next.at < cliEnded) continue;
      expect(next.at - r.answeredAt!).toBeGreaterThanOrEqual(990);
      checked++;
    }
    expect(checked).toBeGreaterThanOrEqual(storm - 2);
    expectExactlyOnce(root);
  });

  it('a server that never answers: the CLI exits after its bounded wait and says what waits', async () => {
    const root = busyProject(20, 'slow');
    proxy.plan = () => ({ kind: 'hold' });
    const run = await tend(root, 'build', '--json');
    expect(run.signal).toBeNull();
    expect(run.code, run.stderr).toBe(0);
    const recorded = recordedStreamedEvents(root);
    // The batch in flight was never answered: everything still waits, and the CLI said so.
    expect(waitingReported(run)).toBe(recorded.length);
    expect(run.stderr).toMatch(/no answer within 5 s|wait in/);
    expect(proxy.records.length).toBeGreaterThan(0);

    // The held batch reaches the server late; push sends everything; the server keeps each once.
    proxy.plan = () => ({ kind: 'pass' });
    proxy.release();
    const pushed = await tend(root, 'events', 'push', '--json');
    expect(pushed.code, pushed.stderr).toBe(0);
    expectExactlyOnce(root);
  });

  it('a CLI killed with SIGKILL mid-stream: the next command sends what it left', async () => {
    const root = busyProject(400, 'sigkill');
    proxy.plan = () => ({ kind: 'delay', ms: 100 });
    const child = spawn(process.execPath, [tendBin, 'build', '--concurrency', '1'], {
      cwd: root,
      env: { ...process.env, CI: 'true', ...env() },
      stdio: 'ignore',
    });
    await waitFor(
      () => proxy.records.filter((r) => r.status === 200).length >= 2,
      'two batches delivered',
      30_000,
    );
    child.kill('SIGKILL');
    await new Promise((resolve) => child.once('close', resolve));
    // What the killed CLI had written to its outbox (sent or not): lines still buffered in memory
    // at the kill never reached the disk, and were never sent.
    const left = outboxEvents(root);
    expect(left.length).toBeGreaterThan(0);
    const killedSession = left[0]!.sessionId;
    const lockFiles = outboxFiles(root).filter((f) => f.endsWith('.lock'));
    expect(lockFiles).toHaveLength(1); // the dead process's lock

    const outbox = await tend(root, 'events', 'outbox', '--json');
    expect(outbox.code, outbox.stderr).toBe(0);
    const view = JSON.parse(outbox.stdout) as { events: number; segments: { sender?: { alive: boolean } }[] };
    expect(view.events).toBeGreaterThan(0);
    expect(view.segments[0]!.sender?.alive).toBe(false);

    // The next command in the project drains the older segment (breaking the stale lock).
    proxy.plan = () => ({ kind: 'pass' });
    const next = await tend(root, 'build', 'b0');
    expect(next.code, next.stderr).toBe(0);
    expect(waitingReported(next)).toBe(0);
    const others = recordedStreamedEvents(root).filter((e) => e.sessionId !== killedSession);
    expectExactlyOnce(
      root,
      [...left, ...others].map((e) => e.id),
    );
    // And nothing else of the killed session: the server has only what was on disk.
    const leftIds = new Set(left.map((e) => e.id));
    const killedInLog = recordedStreamedEvents(root).filter((e) => e.sessionId === killedSession);
    const stored = new Set(stream.server.eventIds());
    expect(killedInLog.filter((e) => stored.has(e.id) && !leftIds.has(e.id))).toEqual([]);
  });

  it('two CLIs sharing one outbox never send the same batch twice', async () => {
    const root = busyProject(100, 'shared');
    // A backlog first: two commands while the server is down.
    proxy.upstream = undefined;
    for (let i = 0; i < 2; i++) {
      const run = await tend(root, 'build', '--force');
      expect(waitingReported(run)).toBeGreaterThan(0);
    }
    expect(outboxFiles(root).filter((f) => f.endsWith('.jsonl'))).toHaveLength(2);
    proxy.upstream = stream.server.current!.url;
    const from = proxy.records.length;
    const [a, b] = await Promise.all([tend(root, 'build', '--force'), tend(root, 'build', '--force')]);
    expect(a.code, a.stderr).toBe(0);
    expect(b.code, b.stderr).toBe(0);
    expect(waitingReported(a) + waitingReported(b)).toBe(0);
    // Every answered request carried events nobody else sent: the locks kept the CLIs apart.
    const records = proxy.records.slice(from);
    expect(records.every((r) => r.status === 200)).toBe(true);
    expect(repeated(records.flatMap((r) => r.eventIds))).toEqual([]);
    expectExactlyOnce(root);
    expect(existsSync(path.join(root, '.tend', 'outbox', 'quarantine'))).toBe(false);
  });
});
