/**
 * The delivery loop in-process against a small fake server: batch limits, a server that takes
 * smaller batches than we send (413), a corrupt line in a segment, order, and the report.
 */
import http from 'node:http';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { monotonicFactory } from 'ulidx';
import { afterEach, describe, expect, it } from 'vitest';
import { describeOutbox, pushOutbox } from '../../src/stream/push.js';
import { listQuarantine } from '../../src/outbox/quarantine.js';
import { listSegmentIds } from '../../src/outbox/segments.js';

const ulid = monotonicFactory();
const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
});

/** A fake ingest: answers 413 above `maxEvents`, 400 when the body is not JSON, else stores. */
async function fakeServer(maxEvents = Infinity) {
  const batches: string[][] = [];
  const statuses: number[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      let events: { id: string }[];
      try {
        events = (JSON.parse(Buffer.concat(chunks).toString()) as { events: { id: string }[] }).events;
      } catch {
        statuses.push(400);
        res
          .writeHead(400)
          .end(JSON.stringify({ error: { code: 'TEND_SERVER_BAD_REQUEST', message: 'bad JSON' } }));
        return;
      }
      if (events.length > maxEvents) {
        statuses.push(413);
        res
          .writeHead(413)
          .end(JSON.stringify({ error: { code: 'TEND_SERVER_PAYLOAD_TOO_LARGE', message: 'too many' } }));
        return;
      }
      statuses.push(200);
      batches.push(events.map((e) => e.id));
      res.end(JSON.stringify({ accepted: events.length, duplicates: 0 }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, batches, statuses };
}

/** An outbox with one ended session of `n` actionStatus events; returns its dir and event ids. */
function outboxWith(n: number, corruptAt?: number) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tend-streamer-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const sessionId = ulid();
  const ids: string[] = [];
  const lines: string[] = [];
  for (let i = 0; i < n; i++) {
    const id = ulid();
    const type = i === n - 1 ? 'sessionCompleted' : 'actionStatus';
    const payload =
      type === 'sessionCompleted'
        ? { durationMs: 1, succeeded: 1, cached: 0, failed: 0, aborted: 0 }
        : { actionRef: `build.a${i}`, kind: 'Build', version: 'v-1', state: 'ready' };
    const line = JSON.stringify({ id, type, sessionId, timestamp: new Date().toISOString(), payload });
    // A damaged line that still looks like an event from its start and end.
    lines.push(i === corruptAt ? line.replace('"payload":', '"payload":,') : line);
    if (i !== corruptAt) ids.push(id);
  }
  writeFileSync(path.join(dir, `${sessionId}.jsonl`), lines.join('\n') + '\n');
  return { dir, ids };
}

describe('the delivery loop', () => {
  it('sends in order, in batches of at most 500 events, and empties the outbox', async () => {
    const server = await fakeServer();
    const { dir, ids } = outboxWith(1_234);
    const { report } = await pushOutbox({
      outboxDir: dir,
      connection: { url: server.url },
      timeoutMs: 10_000,
    });
    expect(server.batches.map((b) => b.length)).toEqual([500, 500, 234]);
    expect(server.batches.flat()).toEqual(ids);
    expect(report).toMatchObject({ delivered: 1_234, batches: 3, waiting: 0, quarantined: 0 });
    expect(listSegmentIds(dir)).toEqual([]);
  });

  it('halves its batches when the server takes fewer events than it sends (413)', async () => {
    const server = await fakeServer(200);
    const { dir, ids } = outboxWith(700);
    const { report } = await pushOutbox({
      outboxDir: dir,
      connection: { url: server.url },
      timeoutMs: 10_000,
    });
    expect(server.statuses.slice(0, 3)).toEqual([413, 413, 200]);
    expect(Math.max(...server.batches.map((b) => b.length))).toBeLessThanOrEqual(200);
    expect(server.batches.flat()).toEqual(ids);
    expect(report.quarantined).toBe(0);
  });

  it('skips a corrupt line the server cannot read, and sends the rest', async () => {
    const server = await fakeServer();
    const { dir, ids } = outboxWith(20, 7);
    const { report } = await pushOutbox({
      outboxDir: dir,
      connection: { url: server.url },
      timeoutMs: 10_000,
    });
    expect(server.statuses).toEqual([400, 200]);
    expect(server.batches.flat()).toEqual(ids);
    expect(report).toMatchObject({ skipped: 1, quarantined: 0, waiting: 0 });
    // Not sent, and not dropped silently: kept beside the outbox with its position.
    const kept = listQuarantine(dir);
    expect(kept).toHaveLength(1);
    expect(kept[0]!.unreadable?.lines).toHaveLength(1);
    expect(kept[0]!.unreadable?.lines[0]!.text).toContain('"payload":,');
  });

  it('reports the lines of a segment that are not events (and a torn last line) instead of deleting them unseen', async () => {
    const server = await fakeServer();
    const { dir, ids } = outboxWith(5);
    const [segment] = listSegmentIds(dir);
    const file = path.join(dir, `${segment}.jsonl`);
    const lines = readFileSync(file, 'utf8').split('\n');
    lines.splice(2, 0, 'not an event at all', '[]');
    writeFileSync(file, lines.join('\n') + '{"id":"torn');
    const warnings: string[] = [];
    const { report } = await pushOutbox({
      outboxDir: dir,
      connection: { url: server.url },
      timeoutMs: 10_000,
      warn: (m) => warnings.push(m),
    });
    expect(server.batches.flat()).toEqual(ids);
    expect(report).toMatchObject({ skipped: 3, waiting: 0 });
    expect(listSegmentIds(dir)).toEqual([]);
    expect(warnings.join('')).toContain(file);
    const texts = listQuarantine(dir).flatMap((q) => q.unreadable?.lines.map((l) => l.text) ?? []);
    expect(texts.sort()).toEqual(['[]', 'not an event at all', '{"id":"torn'].sort());
  });

  it('a directory named *.jsonl in the outbox is skipped and named; the segments after it are sent', async () => {
    const server = await fakeServer();
    const { dir, ids } = outboxWith(5);
    const strange = path.join(dir, '00000000000000000000000000.jsonl');
    mkdirSync(strange);
    const warnings: string[] = [];
    const { report } = await pushOutbox({
      outboxDir: dir,
      connection: { url: server.url },
      timeoutMs: 10_000,
      warn: (m) => warnings.push(m),
    });
    expect(server.batches.flat()).toEqual(ids);
    expect(report).toMatchObject({ delivered: 5, waiting: 0 });
    expect(warnings.join('')).toContain(`skipping ${strange}`);
    expect(describeOutbox(dir)).toMatchObject({ events: 0, segments: [], notSegments: [strange] });
  });
});

describe('the quarantine', () => {
  it('names a refused event without a sessionId after its segment, never "undefined"', async () => {
    const server = http.createServer((req, res) => {
      req.resume();
      req.on('end', () =>
        res.writeHead(400).end(
          JSON.stringify({
            error: { code: 'TEND_EVENT_INVALID', message: 'no sessionId', detail: { index: 0 } },
          }),
        ),
      );
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const dir = mkdtempSync(path.join(os.tmpdir(), 'tend-streamer-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const segment = ulid();
    const id = ulid();
    const line = JSON.stringify({
      id,
      type: 'sessionCompleted',
      timestamp: new Date().toISOString(),
      payload: {},
    });
    writeFileSync(path.join(dir, `${segment}.jsonl`), line + '\n');
    const { report } = await pushOutbox({
      outboxDir: dir,
      connection: { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` },
      timeoutMs: 10_000,
      warn: () => undefined,
    });
    expect(report.quarantined).toBe(1);
    expect(listQuarantine(dir).map((q) => path.basename(q.file))).toEqual([`${segment}-${id}.json`]);
  });
});
