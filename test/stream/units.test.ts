/**
 * The stream's pure decisions and its files: Retry-After and backoff, which events the bound
 * drops, segment locks (stale, foreign, released), reading segments and moving the ack offset.
 */
import { spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import type { EventType } from '../../src/events/catalog.js';
import { dropOrder, planDrops } from '../../src/outbox/bound.js';
import { tryLock } from '../../src/outbox/lock.js';
import { SegmentCursor } from '../../src/outbox/cursor.js';
import { readEvents } from '../../src/outbox/read.js';
import { readAckState, segmentFile } from '../../src/outbox/segments.js';
import { defaultBackoff, parseRetryAfter, retryDelay } from '../../src/stream/transport.js';

const dirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tend-stream-unit-'));
  dirs.push(dir);
  return dir;
}
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** The pid of a process that has exited. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], {
    encoding: 'utf8',
  });
  return Number(child.stdout);
}

describe('Retry-After and backoff', () => {
  it('reads Retry-After as seconds or as an HTTP date', () => {
    const now = Date.parse('2025-01-01T00:00:00Z');
    expect(parseRetryAfter('1', now)).toBe(1000);
    expect(parseRetryAfter(' 2.5 ', now)).toBe(2500);
    expect(parseRetryAfter('Wed, 01 Jan 2025 00:00:07 GMT', now)).toBe(7000);
    expect(parseRetryAfter('Tue, 31 Dec 2024 23:00:00 GMT', now)).toBe(0);
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
  });

  it('grows exponentially with jitter, within the cap, never before Retry-After', () => {
    fc.assert(
      fc.property(
        fc.nat(60),
        fc.option(fc.nat(1_000_000), { nil: undefined }),
        fc.double({ min: 0, max: 0.999999, noNaN: true }),
        (attempt, retryAfter, r) => {
          const delay = retryDelay(attempt, retryAfter, defaultBackoff, () => r);
          const ceiling = Math.min(defaultBackoff.capMs, defaultBackoff.baseMs * 2 ** attempt);
          const honoured = Math.min(retryAfter ?? 0, defaultBackoff.maxRetryAfterMs);
          expect(delay).toBeGreaterThanOrEqual(Math.max(Math.floor(ceiling / 2), honoured));
          expect(delay).toBeLessThanOrEqual(Math.max(ceiling, honoured));
        },
      ),
    );
    expect(retryDelay(0, undefined, defaultBackoff, () => 0)).toBe(125);
    expect(retryDelay(3, undefined, defaultBackoff, () => 0.999999)).toBe(2000);
    expect(retryDelay(20, undefined, defaultBackoff, () => 0)).toBe(15_000);
  });
});

describe('the outbox bound', () => {
  const ev = (id: string, type: EventType, bytes = 100) => ({ id, type, bytes });

  it('drops log first, then actionStatus, oldest first, and stops when enough is freed', () => {
    const plan = planDrops(
      [
        {
          id: 's1',
          events: [ev('a', 'sessionStarted'), ev('b', 'actionStatus'), ev('c', 'namespaceStatus')],
        },
        { id: 's2', events: [ev('d', 'actionStatus'), ev('e', 'log'), ev('f', 'actionStatus')] },
      ],
      250,
    );
    expect([...plan.drop.entries()].map(([id, set]) => [id, [...set]])).toEqual([
      ['s2', ['e', 'd']],
      ['s1', ['b']],
    ]);
    expect(plan.dropped).toEqual({ log: 1, actionStatus: 2 });
    expect(plan.freedBytes).toBe(300);
  });

  it('never drops namespaceStatus or session events, whatever the excess', () => {
    const types: EventType[] = [
      'namespaceStatus',
      'sessionStarted',
      'sessionCompleted',
      'sessionFailed',
      'sessionHeartbeat',
      'actionStatus',
      'log',
    ];
    fc.assert(
      fc.property(
        fc.array(
          fc.array(fc.record({ type: fc.constantFrom(...types), bytes: fc.integer({ min: 1, max: 500 }) })),
          {
            maxLength: 5,
          },
        ),
        fc.nat(20_000),
        (segments, excess) => {
          let n = 0;
          const input = segments.map((events, s) => ({
            id: `s${s}`,
            events: events.map((e) => ({ ...e, id: `e${n++}` })),
          }));
          const plan = planDrops(input, excess);
          const all = input.flatMap((s) => s.events);
          const droppedIds = new Set([...plan.drop.values()].flatMap((set) => [...set]));
          const dropped = all.filter((e) => droppedIds.has(e.id));
          for (const e of dropped) expect(dropOrder).toContain(e.type);
          const droppable = all
            .filter((e) => dropOrder.includes(e.type))
            .reduce((sum, e) => sum + e.bytes, 0);
          expect(plan.freedBytes).toBeGreaterThanOrEqual(Math.min(excess, droppable));
          // No actionStatus goes while a log could have gone instead.
          if (dropped.some((e) => e.type === 'actionStatus')) {
            expect(all.filter((e) => e.type === 'log').every((e) => dropped.includes(e))).toBe(true);
          }
        },
      ),
    );
  });
});

describe('segment locks', () => {
  it('is held by one taker at a time and released only by its holder', () => {
    const file = path.join(tempDir(), 'a.lock');
    const first = tryLock(file);
    expect(first.acquired).toBe(true);
    const second = tryLock(file);
    expect(second).toMatchObject({ acquired: false, heldBy: { pid: process.pid } });
    if (!first.acquired) return;
    first.lock.release();
    const third = tryLock(file, { writer: true });
    expect(third.acquired).toBe(true);
    first.lock.release(); // a second release of the old lock leaves the new one alone
    expect(JSON.parse(readFileSync(file, 'utf8'))).toMatchObject({ pid: process.pid, writer: true });
  });

  it('breaks the lock of a process that is gone, and says whose it was', () => {
    const file = path.join(tempDir(), 'b.lock');
    const pid = deadPid();
    writeFileSync(file, JSON.stringify({ pid, host: os.hostname(), acquiredAt: 'then', writer: true }));
    const attempt = tryLock(file);
    expect(attempt).toMatchObject({ acquired: true, broke: { pid, writer: true } });
    expect(existsSync(`${file}.break`)).toBe(false);
  });

  it.runIf(process.platform === 'linux')('tells a reused pid apart by its start time', () => {
    const file = path.join(tempDir(), 'd.lock');
    writeFileSync(
      file,
      JSON.stringify({ pid: process.pid, host: os.hostname(), acquiredAt: 'then', start: '1' }),
    );
    expect(tryLock(file)).toMatchObject({ acquired: true, broke: { pid: process.pid } });
  });

  it("respects another host's lock, which it cannot check", () => {
    const file = path.join(tempDir(), 'c.lock');
    writeFileSync(file, JSON.stringify({ pid: deadPid(), host: 'another-host', acquiredAt: 'then' }));
    expect(tryLock(file)).toMatchObject({ acquired: false, heldBy: { host: 'another-host' } });
  });
});

describe('segments', () => {
  const line = (id: string, type = 'actionStatus', extra = '') =>
    JSON.stringify({ id, type, sessionId: 'S', timestamp: 't', payload: { m: extra } }) + '\n';

  it('reads complete lines only, with byte offsets, skipping corrupt ones', () => {
    const dir = tempDir();
    const file = segmentFile(dir, 'S');
    const a = line('A', 'actionStatus', 'héllo ☃');
    writeFileSync(file, a + 'not json\n' + line('B') + '{"id":"C","ty');
    const read = readEvents(file, 0);
    expect(read.events.map((e) => [e.id, e.start, e.end])).toEqual([
      ['A', 0, Buffer.byteLength(a)],
      ['B', Buffer.byteLength(a) + 9, Buffer.byteLength(a) + 9 + Buffer.byteLength(line('B'))],
    ]);
    expect(read.skipped).toBe(1);
    expect(read.next).toBe(read.events[1]!.end);
    appendFileSync(file, 'pe":"log"}\n');
    expect(readEvents(file, read.next).events.map((e) => e.id)).toEqual(['C']);
  });

  it('resumes from the ack offset and deletes the segment once answered to its end', () => {
    const dir = tempDir();
    writeFileSync(
      segmentFile(dir, 'S'),
      line('A', 'sessionStarted') + line('B') + line('C', 'sessionCompleted'),
    );
    const take = () => {
      const attempt = tryLock(path.join(dir, 'S.lock'));
      if (!attempt.acquired) throw new Error('not acquired');
      return new SegmentCursor(dir, 'S', attempt.lock);
    };
    const first = take();
    first.fill();
    expect(first.batch(2, 1 << 20).map((e) => e.id)).toEqual(['A', 'B']);
    first.acknowledge(2);
    expect(readAckState(dir, 'S').offset).toBe(first.peek(0)!.start);
    first.release();

    const second = take();
    second.fill();
    expect(second.batch(500, 1 << 20).map((e) => e.id)).toEqual(['C']);
    expect(second.retireIfDone()).toBe(false);
    second.acknowledge(1);
    expect(second.retireIfDone()).toBe(true);
    expect(existsSync(segmentFile(dir, 'S'))).toBe(false);
    expect(existsSync(path.join(dir, 'S.ack'))).toBe(false);
    expect(existsSync(path.join(dir, 'S.lock'))).toBe(false);
  });

  it('keeps a segment whose writer may still append, however far it is answered', () => {
    const dir = tempDir();
    writeFileSync(segmentFile(dir, 'S'), line('A', 'sessionStarted'));
    const attempt = tryLock(path.join(dir, 'S.lock'));
    if (!attempt.acquired) throw new Error('not acquired');
    const cursor = new SegmentCursor(dir, 'S', attempt.lock);
    cursor.fill();
    cursor.acknowledge(1);
    expect(cursor.retireIfDone()).toBe(false);
    expect(existsSync(segmentFile(dir, 'S'))).toBe(true);
  });

  it('a batch respects the count and byte limits, with at least one event', () => {
    const dir = tempDir();
    const big = line('A', 'actionStatus', 'x'.repeat(2000));
    writeFileSync(segmentFile(dir, 'S'), big + line('B') + line('C') + line('D'));
    const attempt = tryLock(path.join(dir, 'S.lock'));
    if (!attempt.acquired) throw new Error('not acquired');
    const cursor = new SegmentCursor(dir, 'S', attempt.lock);
    cursor.fill();
    expect(cursor.batch(500, 100).map((e) => e.id)).toEqual(['A']);
    cursor.acknowledge(1);
    expect(cursor.batch(2, 1 << 20).map((e) => e.id)).toEqual(['B', 'C']);
  });
});
