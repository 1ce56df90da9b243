/**
 * A plugin's own event type end to end: test/fixtures/plugin-events (a plugin outside src/
 * declaring `buckets.bucketCreated`) deployed with the real CLI through the real router and
 * stream to a real server on 127.0.0.1; the event is in `tend events` and in the API, filtered by
 * type. The server keeps a plugin type it never loaded and answers a malformed event per item,
 * as it always has.
 */
import { cpSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runTend, waitFor } from '../helpers/project.js';
import { createTestServer, getJson, postEvents, session, type TestServer } from '../server/helpers.js';
import { streamEnv } from '../stream/helpers.js';

const repoRoot = path.resolve(import.meta.dirname, '../..');
const projects: string[] = [];
let server: TestServer;
let url: string;

beforeEach(async () => {
  server = await createTestServer('sqlite');
  url = await server.app.listen({ port: 0, host: '127.0.0.1' });
});
afterEach(() => server.close());
afterAll(() => {
  for (const dir of projects) rmSync(dir, { recursive: true, force: true });
});

function fixtureProject(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tend-plugin-events-'));
  projects.push(dir);
  cpSync(path.join(repoRoot, 'test/fixtures/plugin-events'), dir, { recursive: true });
  symlinkSync(path.join(repoRoot, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
  return dir;
}

interface EventItem {
  type: string;
  summary: string;
  payload: Record<string, unknown>;
}

describe("a plugin's own event type", () => {
  it('is validated, stamped, streamed, stored, listed by type and shown by tend events', async () => {
    const project = fixtureProject();
    const deploy = await runTend(['deploy', '--json'], {
      cwd: project,
      env: streamEnv(url, server.tokens.ingest),
    });
    expect(deploy.code, deploy.stderr).toBe(0);

    const environments = await waitFor(async () => {
      const { body } = await getJson<{ items: { id: string }[] }>(server, '/api/v1/environments');
      return body.items.length > 0 ? body.items : undefined;
    }, 'the environment on the server');
    const id = environments[0]!.id;
    const query = `/api/v1/environments/${id}/events?type=buckets.bucketCreated`;
    const items = await waitFor(async () => {
      const { body } = await getJson<{ items: EventItem[] }>(server, query);
      return body.items.length > 0 ? body.items : undefined;
    }, 'the bucketCreated event on the server');
    // The invalid one was refused alone, the repeated one coalesced: one event.
    expect(items).toHaveLength(1);
    expect(items[0]!.type).toBe('buckets.bucketCreated');
    expect(items[0]!.payload).toMatchObject({
      bucket: 'store-dev',
      region: 'local',
      pluginName: 'buckets',
      providerName: 'buckets',
      handler: 'prepareEnvironment',
      project: 'store',
      environment: 'dev',
    });
    expect(items[0]!.summary).toBe('buckets.bucketCreated: bucket=store-dev region=local');
    // The filter keeps the other types out; without it they are there too.
    const all = await getJson<{ items: EventItem[] }>(server, `/api/v1/environments/${id}/events`);
    expect(new Set(all.body.items.map((e) => e.type))).toEqual(
      new Set(['sessionStarted', 'actionStatus', 'buckets.bucketCreated', 'sessionCompleted']),
    );

    const shown = await runTend(['events', 'latest', '--type', 'buckets.bucketCreated', '--json'], {
      cwd: project,
    });
    expect(shown.code, shown.stderr).toBe(0);
    const local = JSON.parse(shown.stdout) as { type: string; payload: { bucket: string } }[];
    expect(local.map((e) => [e.type, e.payload.bucket])).toEqual([['buckets.bucketCreated', 'store-dev']]);

    const warnings = await runTend(['events', 'latest', '--type', 'log', '--json'], { cwd: project });
    const refused = JSON.parse(warnings.stdout) as { payload: { message: string } }[];
    expect(refused.map((e) => e.payload.message)).toEqual([
      'refused: plugin "buckets" emitted an invalid "buckets.bucketCreated" event from prepareEnvironment: /: must have required properties region',
    ]);
  });

  it('of a plugin the server never loaded is kept; a malformed event is answered per item', async () => {
    const s = session({ project: 'store', environment: 'dev' });
    const known = s.started();
    const unknownPlugin = {
      ...s.heartbeat(),
      type: 'rockets.rocketLaunched',
      payload: { rocket: 'saturn', pluginName: 'rockets', project: 'store' },
    };
    const malformed = { ...s.heartbeat(), type: 'rockets.rocketLaunched', payload: { pluginName: 'other' } };

    const refused = await postEvents(server, [known, unknownPlugin, malformed]);
    expect(refused.statusCode).toBe(400);
    expect(refused.json().error.message).toBe(
      'events[2]/payload/pluginName: must be "rockets", the plugin the type belongs to',
    );

    const stored = await postEvents(server, [known, unknownPlugin]);
    expect(stored.statusCode, stored.body).toBe(200);
    expect(stored.json()).toEqual({ accepted: 2, duplicates: 0 });
    const { body } = await getJson<{ items: { id: string }[] }>(server, '/api/v1/environments');
    const listed = await getJson<{ items: EventItem[] }>(
      server,
      `/api/v1/environments/${body.items[0]!.id}/events?type=rockets.rocketLaunched`,
    );
    expect(listed.body.items.map((e) => e.summary)).toEqual(['rockets.rocketLaunched: rocket=saturn']);
  });

  it('refuses hostile type names at ingest: NUL, a lone surrogate, a huge name, a payload 10,000 deep', async () => {
    const s = session({ project: 'store', environment: 'dev' });
    const deep = '{"deep":'.repeat(10_000) + '{}' + '}'.repeat(10_000);
    for (const [event, message] of [
      [{ ...s.heartbeat(), type: 'rockets.a\u0000b' }, /events\[0\]\/type: contains a NUL/],
      [{ ...s.heartbeat(), type: 'rockets.a\ud800' }, /events\[0\]\/type: contains a lone UTF-16 surrogate/],
      [
        { ...s.heartbeat(), type: `rockets.${'a'.repeat(100_000)}` },
        /events\[0\]: unknown event type "rockets\.a+"$/,
      ],
      [{ ...s.heartbeat(), type: 'rockets.x', payload: { deep: '' } }, /is nested deeper than 32 levels/],
    ] as const) {
      // The deep payload as text: JSON.stringify itself cannot write it.
      const body = JSON.stringify({ events: [event] }).replace('{"deep":""}', deep);
      const res = await server.app.inject({
        method: 'POST',
        url: '/api/v1/events',
        headers: { ...server.auth(server.tokens.ingest), 'content-type': 'application/json' },
        payload: body,
      });
      expect(res.statusCode).toBe(400);
      expect(res.json().error.message).toMatch(message);
    }
  });
});
