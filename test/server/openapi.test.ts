/**
 * The OpenAPI document lists every status a route answers: each documented operation is driven
 * into each of its answers (success, bad input, no token, too small a scope, unknown id, body too
 * large, not JSON), and every status seen must be in the document. keep-alive's body is optional
 * in the document as in the code.
 */
import { gzipSync } from 'node:zlib';
import { sign } from '@octokit/webhooks-methods';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestServer, dialects, postEvents, session, type TestServer } from './helpers.js';

interface Operation {
  responses: Record<string, unknown>;
  requestBody?: { required?: boolean };
}
type Document = { paths: Record<string, Record<string, Operation>> };

interface Case {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  /** The documented path, `{id}` filled in by `url`. */
  path: string;
  url?: string;
  token?: 'ingest' | 'read' | 'developer' | 'admin' | 'agent' | 'otherProject';
  headers?: Record<string, string>;
  payload?: string | object;
  status: number;
}

describe.each(dialects)('the OpenAPI document on %s', (dialect) => {
  let s: TestServer;
  let envId: string;
  let webhookId: string;
  let doc: Document;
  const githubSecret = 'openapi-test-github-secret';
  let signed: Record<'ping' | 'push' | 'bad', string>;
  beforeAll(async () => {
    s = await createTestServer(dialect, { maxEventsPerBatch: 3, githubSecret });
    signed = {
      ping: await sign(githubSecret, '{"zen":"x"}'),
      push: await sign(githubSecret, '{"ref":"x"}'),
      bad: await sign(githubSecret, '{"action":"closed"}'),
    };
    const a = session();
    await postEvents(s, [a.started(), a.ns('ready', { uid: 'u' })]);
    envId = (await s.database.db.selectFrom('environments').select('id').executeTakeFirstOrThrow()).id;
    await s.app.inject({
      method: 'POST',
      url: '/api/v1/tokens',
      headers: s.auth(s.tokens.admin),
      payload: { name: 'to-revoke' },
    });
    webhookId = (
      await s.app.inject({
        method: 'POST',
        url: '/api/v1/webhooks',
        headers: s.auth(s.tokens.admin),
        payload: { url: 'https://hooks.example.com/x', events: ['cleanup.done'] },
      })
    ).json<{ id: string }>().id;
    doc = (await s.app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json<Document>();
  });
  afterAll(async () => s.close());

  const huge = JSON.stringify({ for: '1h', pad: 'x'.repeat(1024 * 1024 + 1) });
  const notJson = { headers: { 'content-type': 'application/xml' }, payload: '<a/>' };
  /** The archive routes (docs/cleanup.md#undo): the executor's upload and the restore's read. */
  const archiveCases = (env: string): Case[] => {
    const upload = '/api/v1/cleanup/jobs/{id}/archive';
    const gzip = { headers: { 'content-type': 'application/gzip' }, payload: gzipSync('{}') };
    const read = '/api/v1/environments/{id}/archive';
    const restored = '/api/v1/environments/{id}/archive/restored';
    const restore = '/api/v1/environments/{id}/restore';
    const events = '/api/v1/cleanup/jobs/{id}/events';
    const body = { archiveId: 'a1' };
    return [
      {
        method: 'POST',
        path: upload,
        url: '/api/v1/cleanup/jobs/nope/archive?executorId=e1',
        token: 'agent',
        ...gzip,
        status: 404,
      },
      {
        method: 'POST',
        path: upload,
        url: '/api/v1/cleanup/jobs/nope/archive',
        token: 'agent',
        ...gzip,
        status: 400,
      },
      {
        method: 'POST',
        path: upload,
        url: '/api/v1/cleanup/jobs/nope/archive?executorId=e1',
        ...gzip,
        status: 401,
      },
      {
        method: 'POST',
        path: upload,
        url: '/api/v1/cleanup/jobs/nope/archive?executorId=e1',
        token: 'read',
        ...gzip,
        status: 403,
      },
      { method: 'GET', path: read, url: `/api/v1/environments/${env}/archive`, token: 'admin', status: 404 },
      { method: 'GET', path: read, url: `/api/v1/environments/${env}/archive`, status: 401 },
      { method: 'GET', path: read, url: `/api/v1/environments/${env}/archive`, token: 'read', status: 403 },
      {
        method: 'POST',
        path: restored,
        url: `/api/v1/environments/${env}/archive/restored`,
        token: 'admin',
        payload: body,
        status: 404,
      },
      {
        method: 'POST',
        path: restored,
        url: `/api/v1/environments/${env}/archive/restored`,
        token: 'admin',
        payload: {},
        status: 400,
      },
      {
        method: 'POST',
        path: restored,
        url: `/api/v1/environments/${env}/archive/restored`,
        payload: body,
        status: 401,
      },
      {
        method: 'POST',
        path: restored,
        url: `/api/v1/environments/${env}/archive/restored`,
        token: 'read',
        payload: body,
        status: 403,
      },
      // A restore job's session events, the restore job route, and the executor's read of its archive.
      {
        method: 'POST',
        path: events,
        url: '/api/v1/cleanup/jobs/nope/events',
        token: 'agent',
        payload: { executorId: 'e1', events: [{}] },
        status: 404,
      },
      {
        method: 'POST',
        path: events,
        url: '/api/v1/cleanup/jobs/nope/events',
        token: 'agent',
        payload: { executorId: 'e1', events: [] },
        status: 400,
      },
      {
        method: 'POST',
        path: events,
        url: '/api/v1/cleanup/jobs/nope/events',
        payload: { executorId: 'e1', events: [{}] },
        status: 401,
      },
      {
        method: 'POST',
        path: events,
        url: '/api/v1/cleanup/jobs/nope/events',
        token: 'read',
        payload: { executorId: 'e1', events: [{}] },
        status: 403,
      },
      {
        method: 'POST',
        path: restore,
        url: `/api/v1/environments/${env}/restore`,
        token: 'admin',
        status: 404,
      },
      {
        method: 'POST',
        path: restore,
        url: `/api/v1/environments/${env}/restore`,
        token: 'admin',
        payload: { into: 'Not_A_Namespace' },
        status: 400,
      },
      { method: 'POST', path: restore, url: `/api/v1/environments/${env}/restore`, status: 401 },
      {
        method: 'POST',
        path: restore,
        url: `/api/v1/environments/${env}/restore`,
        token: 'read',
        status: 403,
      },
      {
        method: 'GET',
        path: upload,
        url: '/api/v1/cleanup/jobs/nope/archive?executorId=e1',
        token: 'agent',
        status: 404,
      },
      { method: 'GET', path: upload, url: '/api/v1/cleanup/jobs/nope/archive', token: 'agent', status: 400 },
      { method: 'GET', path: upload, url: '/api/v1/cleanup/jobs/nope/archive?executorId=e1', status: 401 },
      {
        method: 'GET',
        path: upload,
        url: '/api/v1/cleanup/jobs/nope/archive?executorId=e1',
        token: 'read',
        status: 403,
      },
    ];
  };

  const cases = (): Case[] => {
    const id = '/api/v1/environments/{id}';
    const changes = ['protect', 'unprotect', 'keep-alive'].flatMap((action): Case[] => {
      const path = `${id}/${action}`;
      const url = `/api/v1/environments/${envId}/${action}`;
      return [
        // keep-alive without a body: the default duration.
        { method: 'POST', path, url, token: 'admin', status: 200 },
        { method: 'POST', path, url: `/api/v1/environments/a%00b/${action}`, token: 'admin', status: 400 },
        { method: 'POST', path, url, status: 401 },
        { method: 'POST', path, url, token: 'read', status: 403 },
        { method: 'POST', path, url: `/api/v1/environments/nope/${action}`, token: 'admin', status: 404 },
        {
          method: 'POST',
          path,
          url,
          token: 'admin',
          headers: { 'content-type': 'application/json' },
          payload: huge,
          status: 413,
        },
        { method: 'POST', path, url, token: 'admin', ...notJson, status: 415 },
      ];
    });
    const a = session();
    return [
      { method: 'GET', path: '/healthz', status: 200 },
      { method: 'GET', path: '/readyz', status: 200 },
      { method: 'GET', path: '/metrics', token: 'read', status: 200 },
      { method: 'GET', path: '/metrics', status: 401 },
      { method: 'GET', path: '/metrics', token: 'ingest', status: 403 },
      { method: 'GET', path: '/metrics', token: 'otherProject', status: 403 },
      { method: 'GET', path: '/api/v1/auth/whoami', token: 'ingest', status: 200 },
      { method: 'GET', path: '/api/v1/auth/whoami', status: 401 },
      { method: 'POST', path: '/api/v1/events', token: 'ingest', payload: { events: [] }, status: 200 },
      { method: 'POST', path: '/api/v1/events', token: 'ingest', payload: { events: [{}] }, status: 400 },
      { method: 'POST', path: '/api/v1/events', payload: { events: [] }, status: 401 },
      {
        method: 'POST',
        path: '/api/v1/events',
        token: 'otherProject',
        payload: { events: [a.started()] },
        status: 403,
      },
      {
        method: 'POST',
        path: '/api/v1/events',
        token: 'ingest',
        payload: { events: [a.heartbeat(), a.heartbeat(), a.heartbeat(), a.heartbeat()] },
        status: 413,
      },
      { method: 'POST', path: '/api/v1/events', token: 'ingest', ...notJson, status: 415 },
      { method: 'GET', path: '/api/v1/environments', token: 'read', status: 200 },
      {
        method: 'GET',
        path: '/api/v1/environments',
        url: '/api/v1/environments?limit=0',
        token: 'read',
        status: 400,
      },
      { method: 'GET', path: '/api/v1/environments', status: 401 },
      { method: 'GET', path: '/api/v1/environments', token: 'ingest', status: 403 },
      { method: 'GET', path: id, url: `/api/v1/environments/${envId}`, token: 'read', status: 200 },
      { method: 'GET', path: id, url: '/api/v1/environments/a%00b', token: 'read', status: 400 },
      { method: 'GET', path: id, url: `/api/v1/environments/${envId}`, status: 401 },
      { method: 'GET', path: id, url: `/api/v1/environments/${envId}`, token: 'ingest', status: 403 },
      { method: 'GET', path: id, url: '/api/v1/environments/nope', token: 'read', status: 404 },
      ...changes,
      ...((): Case[] => {
        const path = `${id}/events`;
        const url = `/api/v1/environments/${envId}/events`;
        return [
          { method: 'GET', path, url, token: 'read', status: 200 },
          {
            method: 'GET',
            path,
            url: `${url}?type=buckets.bucketCreated&limit=5`,
            token: 'read',
            status: 200,
          },
          { method: 'GET', path, url: `${url}?limit=Infinity`, token: 'read', status: 400 },
          { method: 'GET', path, url: `${url}?type=a%00b`, token: 'read', status: 400 },
          { method: 'GET', path, url: '/api/v1/environments/a%00b/events', token: 'read', status: 400 },
          { method: 'GET', path, url, status: 401 },
          { method: 'GET', path, url, token: 'ingest', status: 403 },
          { method: 'GET', path, url: '/api/v1/environments/nope/events', token: 'read', status: 404 },
        ];
      })(),
      { method: 'GET', path: '/api/v1/audit', token: 'read', status: 200 },
      { method: 'GET', path: '/api/v1/audit', url: '/api/v1/audit?limit=0', token: 'read', status: 400 },
      { method: 'GET', path: '/api/v1/audit', status: 401 },
      { method: 'GET', path: '/api/v1/audit', token: 'ingest', status: 403 },
      ...cleanupCases(),
      ...adminCases(),
      ...githubCases(),
    ];
  };

  /** Tokens and webhooks through the API: admin scope, bound to no project. */
  const adminCases = (): Case[] => {
    const refused = (method: Case['method'], path: string, url: string, payload?: object): Case[] => [
      { method, path, url, ...(payload ? { payload } : {}), status: 401 },
      { method, path, url, token: 'read', ...(payload ? { payload } : {}), status: 403 },
      { method, path, url, token: 'otherProject', ...(payload ? { payload } : {}), status: 403 },
    ];
    const posted = (path: string, url = path): Case[] => [
      {
        method: 'POST',
        path,
        url,
        token: 'admin',
        headers: { 'content-type': 'application/json' },
        payload: huge,
        status: 413,
      },
      { method: 'POST', path, url, token: 'admin', ...notJson, status: 415 },
    ];
    const revoke = '/api/v1/tokens/{token}/revoke';
    const webhook = '/api/v1/webhooks/{id}';
    const hook = { url: 'https://hooks.example.com/y', events: ['cleanup.warning'] };
    return [
      { method: 'GET', path: '/api/v1/tokens', token: 'admin', status: 200 },
      ...refused('GET', '/api/v1/tokens', '/api/v1/tokens'),
      { method: 'POST', path: '/api/v1/tokens', token: 'admin', payload: { name: 'openapi' }, status: 201 },
      { method: 'POST', path: '/api/v1/tokens', token: 'admin', payload: { name: 'openapi' }, status: 409 },
      { method: 'POST', path: '/api/v1/tokens', token: 'admin', payload: { name: '' }, status: 400 },
      ...refused('POST', '/api/v1/tokens', '/api/v1/tokens', { name: 'nope' }),
      ...posted('/api/v1/tokens'),
      { method: 'POST', path: revoke, url: '/api/v1/tokens/to-revoke/revoke', token: 'admin', status: 200 },
      { method: 'POST', path: revoke, url: '/api/v1/tokens/a%00b/revoke', token: 'admin', status: 400 },
      { method: 'POST', path: revoke, url: '/api/v1/tokens/nobody/revoke', token: 'admin', status: 404 },
      ...refused('POST', revoke, '/api/v1/tokens/ops/revoke'),
      ...posted(revoke, '/api/v1/tokens/ops/revoke'),
      { method: 'GET', path: '/api/v1/webhooks', token: 'admin', status: 200 },
      ...refused('GET', '/api/v1/webhooks', '/api/v1/webhooks'),
      { method: 'POST', path: '/api/v1/webhooks', token: 'admin', payload: hook, status: 201 },
      { method: 'POST', path: '/api/v1/webhooks', token: 'admin', payload: { url: 'x' }, status: 400 },
      ...refused('POST', '/api/v1/webhooks', '/api/v1/webhooks', hook),
      ...posted('/api/v1/webhooks'),
      { method: 'DELETE', path: webhook, url: `/api/v1/webhooks/${webhookId}`, token: 'admin', status: 200 },
      { method: 'DELETE', path: webhook, url: '/api/v1/webhooks/a%00b', token: 'admin', status: 400 },
      { method: 'DELETE', path: webhook, url: '/api/v1/webhooks/wh_none', token: 'admin', status: 404 },
      ...refused('DELETE', webhook, '/api/v1/webhooks/wh_none'),
    ];
  };

  /** The GitHub route: authenticated by its signature, not a token. */
  const githubCases = (): Case[] => {
    const path = '/api/v1/integrations/github';
    const github = (
      event: string,
      signature: string,
      payload: string,
      status: number,
      delivery = event,
    ): Case => ({
      method: 'POST',
      path,
      headers: {
        'content-type': 'application/json',
        'x-github-event': event,
        'x-github-delivery': `openapi-${delivery}`,
        'x-hub-signature-256': signature,
      },
      payload,
      status,
    });
    return [
      github('ping', signed.ping, '{"zen":"x"}', 200),
      github('push', signed.push, '{"ref":"x"}', 202),
      github('pull_request', signed.bad, '{"action":"closed"}', 400),
      github('pull_request', 'sha256=' + '0'.repeat(64), '{"action":"closed"}', 401, 'forged'),
      {
        method: 'POST',
        path,
        headers: { 'content-type': 'application/json' },
        payload: JSON.stringify({ pad: 'x'.repeat(1024 * 1024 + 1) }),
        status: 413,
      },
    ];
  };

  /** The cleanup routes: the executors' (agent scope), the reads, and the admin switches. */
  const cleanupCases = (): Case[] => {
    const beat = { executorId: 'e1', name: 'e1', kind: 'agent', version: '0.1.0', targets: [] };
    const agent = (path: string, payload: object, url?: string): Case[] => [
      { method: 'POST', path, ...(url ? { url } : {}), token: 'agent', payload: { nope: 1 }, status: 400 },
      { method: 'POST', path, ...(url ? { url } : {}), payload, status: 401 },
      { method: 'POST', path, ...(url ? { url } : {}), token: 'read', payload, status: 403 },
    ];
    const job = '/api/v1/cleanup/jobs/{id}';
    const cleanNow = '/api/v1/environments/{id}/cleanup';
    const resume = '/api/v1/environments/{id}/resume';
    const breaker = '/api/v1/cleanup/breakers/{project}/reset';
    return [
      { method: 'POST', path: '/api/v1/agents/heartbeat', token: 'agent', payload: beat, status: 200 },
      ...agent('/api/v1/agents/heartbeat', beat),
      ...agent('/api/v1/agents/inventory', {}),
      ...agent('/api/v1/cleanup/jobs/claim', {}),
      ...agent(`${job}/start`, { executorId: 'e1' }, '/api/v1/cleanup/jobs/nope/start'),
      ...agent(`${job}/complete`, { executorId: 'e1' }, '/api/v1/cleanup/jobs/nope/complete'),
      ...['/api/v1/cleanup/plan', '/api/v1/cleanup/jobs', '/api/v1/cleanup/status'].flatMap(
        (path): Case[] => [
          { method: 'GET', path, token: 'read', status: 200 },
          { method: 'GET', path, status: 401 },
          { method: 'GET', path, token: 'ingest', status: 403 },
        ],
      ),
      { method: 'GET', path: '/api/v1/cleanup/report', token: 'read', status: 200 },
      { method: 'GET', path: '/api/v1/cleanup/report', status: 401 },
      { method: 'GET', path: '/api/v1/cleanup/report', token: 'ingest', status: 403 },
      {
        method: 'GET',
        path: '/api/v1/cleanup/report',
        url: '/api/v1/cleanup/report?since=Infinity',
        token: 'read',
        status: 400,
      },
      {
        method: 'GET',
        path: '/api/v1/cleanup/notice',
        url: '/api/v1/cleanup/notice?project=shop&environment=dev&namespace=shop-alice',
        token: 'ingest',
        status: 200,
      },
      { method: 'GET', path: '/api/v1/cleanup/notice', token: 'ingest', status: 400 },
      { method: 'GET', path: '/api/v1/cleanup/report', token: 'read', status: 200 },
      { method: 'GET', path: '/api/v1/cleanup/report', status: 401 },
      { method: 'GET', path: '/api/v1/cleanup/report', token: 'ingest', status: 403 },
      {
        method: 'GET',
        path: '/api/v1/cleanup/report',
        url: '/api/v1/cleanup/report?since=Infinity',
        token: 'read',
        status: 400,
      },
      {
        method: 'GET',
        path: '/api/v1/cleanup/notice',
        url: '/api/v1/cleanup/notice?project=shop&environment=dev&namespace=shop-alice',
        status: 401,
      },
      { method: 'GET', path: '/api/v1/cleanup/report', token: 'read', status: 200 },
      { method: 'GET', path: '/api/v1/cleanup/report', status: 401 },
      { method: 'GET', path: '/api/v1/cleanup/report', token: 'ingest', status: 403 },
      {
        method: 'GET',
        path: '/api/v1/cleanup/report',
        url: '/api/v1/cleanup/report?since=Infinity',
        token: 'read',
        status: 400,
      },
      {
        method: 'GET',
        path: '/api/v1/cleanup/notice',
        url: '/api/v1/cleanup/notice?project=shop&environment=dev&namespace=shop-alice',
        token: 'otherProject',
        status: 403,
      },
      ...['/api/v1/cleanup/halt', '/api/v1/cleanup/resume'].flatMap((path): Case[] => [
        { method: 'POST', path, token: 'admin', status: 200 },
        { method: 'POST', path, status: 401 },
        { method: 'POST', path, token: 'read', status: 403 },
      ]),
      { method: 'POST', path: '/api/v1/cleanup/enforce', token: 'admin', payload: { nope: 1 }, status: 400 },
      { method: 'POST', path: '/api/v1/cleanup/enforce', payload: { project: 'shop' }, status: 401 },
      {
        method: 'POST',
        path: '/api/v1/cleanup/enforce',
        token: 'read',
        payload: { project: 'shop' },
        status: 403,
      },
      {
        method: 'POST',
        path: breaker,
        url: '/api/v1/cleanup/breakers/shop/reset',
        token: 'admin',
        status: 409,
      },
      { method: 'POST', path: breaker, url: '/api/v1/cleanup/breakers/shop/reset', status: 401 },
      {
        method: 'POST',
        path: breaker,
        url: '/api/v1/cleanup/breakers/shop/reset',
        token: 'read',
        status: 403,
      },
      { method: 'POST', path: cleanNow, url: `/api/v1/environments/${envId}/cleanup`, status: 401 },
      {
        method: 'POST',
        path: cleanNow,
        url: `/api/v1/environments/${envId}/cleanup`,
        token: 'read',
        status: 403,
      },
      {
        method: 'POST',
        path: cleanNow,
        url: '/api/v1/environments/nope/cleanup',
        token: 'admin',
        status: 404,
      },
      // Resume: developer scope like keep-alive; an environment that is not paused answers 409.
      {
        method: 'POST',
        path: resume,
        url: `/api/v1/environments/${envId}/resume`,
        token: 'developer',
        status: 409,
      },
      { method: 'POST', path: resume, url: `/api/v1/environments/${envId}/resume`, status: 401 },
      {
        method: 'POST',
        path: resume,
        url: `/api/v1/environments/${envId}/resume`,
        token: 'read',
        status: 403,
      },
      {
        method: 'POST',
        path: resume,
        url: '/api/v1/environments/nope/resume',
        token: 'developer',
        status: 404,
      },
      ...archiveCases(envId),
      ...secretCases(),
    ];
  };

  /** The project secrets (this server has no --secrets-key-file: a write is a 503). */
  const secretCases = (): Case[] => {
    const list = '/api/v1/projects/{project}/secrets';
    const one = '/api/v1/projects/{project}/secrets/{name}';
    const values = '/api/v1/projects/{project}/environments/{environment}/secret-values';
    const shopList = '/api/v1/projects/shop/secrets';
    const shopOne = '/api/v1/projects/shop/secrets/DB_PASSWORD';
    const shopValues = '/api/v1/projects/shop/environments/dev/secret-values';
    const value = { value: 'v' };
    return [
      { method: 'GET', path: list, url: shopList, token: 'admin', status: 200 },
      { method: 'GET', path: list, url: shopList, status: 401 },
      { method: 'GET', path: list, url: shopList, token: 'developer', status: 403 },
      { method: 'GET', path: list, url: '/api/v1/projects/Shop!/secrets', token: 'admin', status: 400 },
      { method: 'PUT', path: one, url: shopOne, token: 'admin', payload: value, status: 503 },
      { method: 'PUT', path: one, url: shopOne, payload: value, status: 401 },
      { method: 'PUT', path: one, url: shopOne, token: 'otherProject', payload: value, status: 403 },
      { method: 'PUT', path: one, url: shopOne, token: 'admin', payload: { value: 1, x: 2 }, status: 400 },
      {
        method: 'PUT',
        path: one,
        url: shopOne,
        token: 'admin',
        payload: { value: 'x'.repeat(2 * 1024 * 1024) },
        status: 413,
      },
      { method: 'DELETE', path: one, url: shopOne, token: 'admin', status: 404 },
      { method: 'DELETE', path: one, url: shopOne, status: 401 },
      { method: 'DELETE', path: one, url: shopOne, token: 'developer', status: 403 },
      { method: 'DELETE', path: one, url: `${shopOne}?environment=Bad_Env`, token: 'admin', status: 400 },
      { method: 'GET', path: values, url: shopValues, token: 'developer', status: 200 },
      { method: 'GET', path: values, url: shopValues, status: 401 },
      { method: 'GET', path: values, url: shopValues, token: 'read', status: 403 },
      {
        method: 'GET',
        path: values,
        url: '/api/v1/projects/shop/environments/Bad_Env/secret-values',
        token: 'developer',
        status: 400,
      },
    ];
  };

  it('lists every status each route answers', async () => {
    const exercised = new Set<string>();
    for (const c of cases()) {
      const res = await s.app.inject({
        method: c.method,
        url: c.url ?? c.path,
        headers: { ...(c.token ? s.auth(s.tokens[c.token]) : {}), ...c.headers },
        ...(c.payload !== undefined ? { payload: c.payload } : {}),
      });
      const name = `${c.method} ${c.url ?? c.path}`;
      expect(res.statusCode, `${name}: ${res.body.slice(0, 200)}`).toBe(c.status);
      const operation = doc.paths[c.path]?.[c.method.toLowerCase()];
      expect(operation, name).toBeDefined();
      expect(Object.keys(operation!.responses), `${name} answers ${c.status}`).toContain(String(c.status));
      exercised.add(`${c.method.toLowerCase()} ${c.path}`);
    }
    // Every documented operation is driven here: a new route needs its cases.
    const documented = Object.entries(doc.paths).flatMap(([path, ops]) =>
      Object.keys(ops).map((method) => `${method} ${path}`),
    );
    expect(documented.filter((op) => !exercised.has(op))).toEqual([]);
  });

  it("documents keep-alive's body as optional, as the route treats it", () => {
    const keepAlive = doc.paths['/api/v1/environments/{id}/keep-alive']!.post!;
    expect(keepAlive.requestBody?.required).toBe(false);
    expect(JSON.stringify(doc)).not.toContain('x-optional-body');
    expect(doc.paths['/api/v1/events']!.post!.requestBody?.required).toBe(true);
  });
});
