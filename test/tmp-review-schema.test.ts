import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Type } from 'typebox';
import { checkEvent, checkPayload } from '../src/events/catalog.js';
import { schemaCheck, schemaProblems } from '../src/schema-check.js';
import { checkSchema } from '../src/config/diagnostics.js';
import { ProjectSchema } from '../src/config/schema.js';
import { createTestServer, postEvents, session, getJson, type TestServer } from './server/helpers.js';

const log = (label: string, res: { statusCode: number; body: string }) =>
  console.log(`${label}: ${res.statusCode} ${res.body.length}B ${res.body.slice(0, 300)}`);

describe.skip('units', () => {
  it('checkEvent with 8 unknown envelope keys', () => {
    const a = session();
    const e = { ...a.started(), payload: { nope: 1 } } as Record<string, unknown>;
    for (let i = 0; i < 8; i++) e[`x${i}`] = i;
    console.log('checkEvent 8 unknown:', JSON.stringify(checkEvent(e)), schemaCheck(Type.Object({})).Check(e));
    const p: Record<string, unknown> = { state: 'bogus' };
    for (let i = 0; i < 8; i++) p[`x${i}`] = i;
    console.log('checkPayload namespaceStatus 8 unknown:', JSON.stringify(checkPayload('namespaceStatus', p)));
    const det: Record<string, unknown> = { ['k'.repeat(300)]: 1 };
    console.log('detail long key:', JSON.stringify(checkPayload('namespaceStatus', { ...a.ns('ready').payload, detail: det })));
  });
  it('checkSchema union in record, two instances', () => {
    const locate = (p: unknown[]) => ({ file: 'tend.yml', line: 1, column: 1, path: p.join('.') }) as never;
    const v = { kind: 'Project', name: 'p', environments: [{ name: 'dev', varfiles: [{ path: 'a', bogus: 1 }, { path: 'b', other: 2 }, 5] }] };
    console.log(JSON.stringify(checkSchema(ProjectSchema, v, { basePath: [], rootLabel: 'Project', locate }).map((p) => p.message)));
    const w = { kind: 'Project', name: 'p', variables: { a: [1], b: {}, c: null }, environments: [{ name: 'dev' }] };
    console.log(JSON.stringify(checkSchema(ProjectSchema, w, { basePath: [], rootLabel: 'Project', locate }).map((p) => p.message)));
    const many = Array.from({ length: 2000 }, (_, i) => [`bad key ${i}`, 1]);
    const big = { kind: 'Project', name: 'p', variables: Object.fromEntries(many), environments: [{ name: 'dev' }] };
    const t = performance.now();
    const n = checkSchema(ProjectSchema, big, { basePath: [], rootLabel: 'Project', locate }).length;
    console.log('2000 bad keys:', n, 'problems', (performance.now() - t).toFixed(1), 'ms');
  });
});

describe('http', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await createTestServer('sqlite', { logger: { level: 'error' } } as never);
  });
  afterAll(async () => s.close());

  it('events with 8 unknown envelope keys and a bad payload', async () => {
    const a = session({ user: 'u8' });
    const bad = { ...a.started(), payload: { command: 42 } } as Record<string, unknown>;
    for (let i = 0; i < 8; i++) bad[`x${i}`] = i;
    log('envelope 8 unknown + bad sessionStarted payload', await postEvents(s, [bad]));
    const b = session({ user: 'u9' });
    await postEvents(s, [b.started()]);
    const ns = b.ns('ready', { uid: 'u-9' }) as { payload: Record<string, unknown> };
    const p: Record<string, unknown> = { ...ns.payload, state: 'bogus', target: 'x', namespaceName: 7 };
    for (let i = 0; i < 8; i++) p[`x${i}`] = i;
    log('namespaceStatus payload 8 unknown + bad fields', await postEvents(s, [{ ...ns, payload: p }]));
    const envs = await getJson(s, '/api/v1/environments');
    console.log('environments after:', JSON.stringify(envs.body).slice(0, 600));
  });

  it.skip('detail keys and big echo', async () => {
    const a = session({ user: 'dk' });
    log('detail key 300', await postEvents(s, [a.started(), a.ns('ready', { detail: { ['k'.repeat(300)]: 1 } })]));
    const keys = Object.fromEntries(Array.from({ length: 5 }, (_, i) => [`${i}`.padEnd(150_000, 'k'), 1]));
    log('detail 5 keys of 150k', await postEvents(s, [a.started(), a.ns('ready', { detail: keys })]));
    const env = { ...a.started() } as Record<string, unknown>;
    env['u'.repeat(500_000)] = 1;
    log('envelope unknown key 500k', await postEvents(s, [env]));
  });

  it.skip('admin routes', async () => {
    const post = (url: string, payload: unknown, token = s.tokens.admin) =>
      s.app.inject({ method: 'POST', url, headers: s.auth(token), payload: payload as object });
    log('token NUL name', await post('/api/v1/tokens', { name: 'a\u0000b' }));
    log('token bad scope', await post('/api/v1/tokens', { name: 'ok1', scope: 'root' }));
    log('token lone surrogate project', await post('/api/v1/tokens', { name: 'ok2', project: '\ud800' }));
    log('token 9 unknown keys', await post('/api/v1/tokens', Object.fromEntries([['name', 'ok3'], ...Array.from({ length: 9 }, (_, i) => [`z${i}`, 1])])));
    log('token huge number name', await post('/api/v1/tokens', { name: 1e308 }));
    log('webhook bad event', await post('/api/v1/webhooks', { url: 'http://x', events: ['nope'] }));
    log('webhook format bad', await post('/api/v1/webhooks', { url: 'http://x', events: ['cleanup.deleted'], format: 'xml' }));
    log('webhook 9 unknown', await post('/api/v1/webhooks', Object.fromEntries([['url', 'http://x'], ['events', ['cleanup.deleted']], ...Array.from({ length: 9 }, (_, i) => [`z${i}`, 1])])));
    const raw = (url: string, body: string, method = 'POST') =>
      s.app.inject({ method: method as 'POST', url, headers: { ...s.auth(s.tokens.admin), 'content-type': 'application/json' }, payload: body });
    log('token deep raw body', await raw('/api/v1/tokens', '{"name":"x","z":' + '['.repeat(10_000) + ']'.repeat(10_000) + '}'));
    log('keep-alive for huge', await post('/api/v1/environments/nope/keep-alive', { for: '9'.repeat(400) + 'd' }));
    log('keep-alive nul id', await post('/api/v1/environments/a%00b/keep-alive', {}));
    log('cleanup now nul id', await post('/api/v1/environments/a%00b/cleanup', {}));
    log('protect lone surrogate id', await post('/api/v1/environments/%ED%A0%80/protect', {}));
  });

  it.skip('GET routes with hostile queries', async () => {
    for (const url of [
      '/api/v1/environments?limit=1e400',
      '/api/v1/environments?limit=Infinity',
      '/api/v1/environments?limit=99999999999999999999999',
      '/api/v1/environments?state=%00',
      '/api/v1/environments?project=%ED%A0%80',
      '/api/v1/environments/%00',
      '/api/v1/cleanup/report?since=1e400d',
      '/api/v1/cleanup/report?since=99999999999999999999d',
      '/api/v1/cleanup/report?project=%00',
      '/api/v1/cleanup/plan?project=%00',
      '/api/v1/cleanup/jobs?state=x&limit=1e999',
      '/metrics',
    ]) {
      const res = await s.app.inject({ method: 'GET', url, headers: s.auth(s.tokens.admin) });
      log(url, res);
    }
  });
});
