/**
 * Webhook notifications against a real HTTP receiver on 127.0.0.1 that verifies every
 * signature the way docs/cleanup.md tells a receiver to: a warning once per environment and due
 * time (JSON and Slack formats), cleanup.done after a job is done, a failing receiver retried
 * with backoff from the persisted delivery (also by a restarted server), bad webhooks refused.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NotificationService } from '../../src/server/notifications/service.js';
import type { TendError } from '../../src/errors.js';
import { countRows, dialects } from './helpers.js';
import { cleanupFixture, type CleanupFixture } from './cleanup/fixture.js';

interface Received {
  path: string;
  event: string;
  delivery: string;
  body: Record<string, unknown>;
  verified: boolean;
}

/** A receiver: verifies tend-signature (HMAC-SHA256 of "<t>.<body>", t within 5 minutes). */
async function receiver(secrets: () => Map<string, string>, clock: () => Date) {
  const received: Received[] = [];
  let failures = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const header = String(req.headers['tend-signature'] ?? '');
      const t = Number(/(?:^|,)t=(\d+)/.exec(header)?.[1]);
      const v1 = /(?:^|,)v1=([0-9a-f]{64})/.exec(header)?.[1] ?? '';
      const secret = secrets().get(req.url ?? '') ?? '';
      const expected = createHmac('sha256', secret).update(`${t}.${raw}`).digest('hex');
      const fresh = Math.abs(clock().getTime() / 1000 - t) <= 300;
      const verified =
        fresh && v1.length === 64 && timingSafeEqual(Buffer.from(v1, 'hex'), Buffer.from(expected, 'hex'));
      if (failures > 0 && req.url === '/flaky') {
        failures--;
        res.writeHead(503).end('try later');
        return;
      }
      received.push({
        path: req.url ?? '',
        event: String(req.headers['tend-event']),
        delivery: String(req.headers['tend-delivery']),
        body: JSON.parse(raw) as Record<string, unknown>,
        verified,
      });
      res.writeHead(verified ? 204 : 401).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    received,
    failNext(n: number) {
      failures = n;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe.each(dialects)('webhook notifications (%s)', (dialect) => {
  let f: CleanupFixture;
  let rx: Awaited<ReturnType<typeof receiver>>;
  const secrets = new Map<string, string>();
  let env: { id: string; namespace: string };

  const notifications = () => f.server.app.notifications;
  const add = async (path: string, events: string[], format = 'json', project?: string) => {
    const { webhook, secret } = await notifications().addWebhook(
      { url: rx.url + path, events, format, ...(project ? { project } : {}) },
      'test',
    );
    secrets.set(path, secret);
    return webhook;
  };
  const plan = async () => {
    await f.report('agent-1', [
      f.item(env.namespace, 'uid-alice'),
      f.item('other-bob', 'uid-bob', {}, 'other'),
    ]);
    await f.server.app.cleanup.pass.run();
  };

  beforeAll(async () => {
    f = await cleanupFixture(dialect, 10, { notifications: { retryBaseMs: 60_000, maxAttempts: 3 } });
    rx = await receiver(
      () => secrets,
      () => f.now(),
    );
    notifications().publicUrl = 'https://tend.example.com/';
    env = await f.environment({ user: 'alice', uid: 'uid-alice', policyExtra: { warnBefore: '1h' } });
    await f.environment({ user: 'bob', uid: 'uid-bob', project: 'other' });
    await f.call('POST', '/api/v1/cleanup/enforce', { project: 'shop' });
    await f.call('POST', '/api/v1/cleanup/enforce', { project: 'other' });
    await add('/json', ['cleanup.warning', 'cleanup.done']);
    await add('/slack', ['cleanup.warning'], 'slack', 'shop');
    await add('/flaky', ['cleanup.warning'], 'json', 'shop');
  }, 60_000);
  afterAll(async () => {
    await f?.close();
    await rx?.close();
  });

  it('nothing is sent before the warning period', async () => {
    f.advance(6 * 3_600_000);
    await plan();
    expect(await notifications().pass()).toMatchObject({ enqueued: 0, delivered: 0 });
    expect(rx.received).toEqual([]);
  });

  it('a warning, signed, once per environment and due time, in JSON and Slack format', async () => {
    f.advance(90 * 60_000); // 7.5 h idle: due in 30 minutes, inside warnBefore 1h
    await plan();
    rx.failNext(1);
    const first = await notifications().pass();
    // alice's environment (three webhooks) and bob's (the /json one; /slack and /flaky are shop only).
    expect(first).toMatchObject({ enqueued: 4, delivered: 3, retried: 1 });
    const json = rx.received.find(
      (r) => r.path === '/json' && r.body.environment && (r.body.environment as { id: string }).id === env.id,
    )!;
    expect(json).toMatchObject({ event: 'cleanup.warning', verified: true });
    expect(json.body).toMatchObject({
      event: 'cleanup.warning',
      deliveryId: json.delivery,
      environment: { id: env.id, project: 'shop', name: 'dev', namespace: env.namespace },
      action: 'delete',
      dueAt: '2026-03-29T08:00:00.000Z',
      keepAliveUrl: `https://tend.example.com/environments/${env.id}`,
    });
    expect(String(json.body.reason)).toMatch(/^will be deleted at 08:00 UTC unless used/);
    const slack = rx.received.find((r) => r.path === '/slack')!;
    expect(slack.verified).toBe(true);
    const blocks = slack.body.blocks as {
      type: string;
      text?: { text: string };
      elements?: { url?: string }[];
    }[];
    expect(String(slack.body.text)).toContain(
      `shop/dev (${env.namespace})* will be deleted at 2026-03-29 08:00 UTC`,
    );
    expect(blocks[0]!.text!.text).toMatch(/will be deleted at 08:00 UTC unless used/);
    expect(blocks.find((b) => b.type === 'actions')!.elements![0]!.url).toBe(
      `https://tend.example.com/environments/${env.id}`,
    );

    // Later passes send nothing new: once per environment and due time.
    await plan();
    const again = await notifications().pass();
    expect(again).toMatchObject({ enqueued: 0, delivered: 0 });
    expect(rx.received.filter((r) => r.path !== '/flaky')).toHaveLength(3);
  });

  it('a failing receiver is retried with backoff from the stored delivery, also after a restart', async () => {
    const pending = await f.server.database.db
      .selectFrom('webhook_deliveries')
      .selectAll()
      .where('state', '=', 'pending')
      .execute();
    expect(pending).toHaveLength(1);
    expect(pending[0]).toMatchObject({ attempts: 1, last_status: 503 });
    // Not before its backoff.
    expect(await notifications().pass()).toMatchObject({ delivered: 0 });
    f.advance(61_000);
    // "Restarted": another service over the same database picks the delivery up.
    const restarted = new NotificationService(f.server.database.db, f.server.database.reader, () => f.now());
    expect(await restarted.pass()).toMatchObject({ delivered: 1 });
    const flaky = rx.received.filter((r) => r.path === '/flaky');
    expect(flaky).toHaveLength(1);
    expect(flaky[0]!.verified).toBe(true);
    expect(flaky[0]!.delivery).toBe(pending[0]!.id);
  });

  it('a receiver that keeps failing is given up after its attempts, with the error kept', async () => {
    const { webhook } = await notifications().addWebhook(
      { url: 'http://127.0.0.1:9/unreachable', events: ['cleanup.warning'] },
      'test',
    );
    await notifications().pass();
    for (let i = 0; i < 3; i++) {
      f.advance(10 * 60_000);
      await notifications().pass();
    }
    const rows = await f.server.database.db
      .selectFrom('webhook_deliveries')
      .selectAll()
      .where('webhook_id', '=', webhook.id)
      .execute();
    expect(rows.length).toBeGreaterThan(0);
    for (const r of rows) {
      expect(r.state).toBe('failed');
      expect(r.attempts).toBe(3);
      expect(r.last_error).toMatch(/fetch failed/);
    }
    await notifications().removeWebhook(webhook.id);
  });

  it('cleanup.done after the job is done', async () => {
    f.advance(3_600_000); // past the due time
    await plan();
    const claim = await f.call(
      'POST',
      '/api/v1/cleanup/jobs/claim',
      { executorId: 'agent-1', targetKeys: ['kubernetes/cluster-1'] },
      f.server.tokens.agent,
    );
    const job = (claim.body.jobs as { id: string; environmentId: string }[]).find(
      (j) => j.environmentId === env.id,
    )!;
    expect(
      (
        await f.call(
          'POST',
          `/api/v1/cleanup/jobs/${job.id}/start`,
          { executorId: 'agent-1' },
          f.server.tokens.agent,
        )
      ).body.proceed,
    ).toBe(true);
    await f.call(
      'POST',
      `/api/v1/cleanup/jobs/${job.id}/complete`,
      { executorId: 'agent-1', outcome: 'done', message: 'deleted' },
      f.server.tokens.agent,
    );
    await notifications().pass();
    const done = rx.received.filter((r) => r.event === 'cleanup.done');
    expect(done).toHaveLength(1);
    expect(done[0]).toMatchObject({
      path: '/json',
      verified: true,
      body: { jobId: job.id, environment: { id: env.id } },
    });
    // Once per job.
    f.advance(1000);
    await notifications().pass();
    expect(rx.received.filter((r) => r.event === 'cleanup.done')).toHaveLength(1);
  });

  it('bad webhooks are refused and nothing is stored', async () => {
    const before = await countRows(f.server.database.db, 'webhooks');
    for (const input of [
      { url: 'ftp://example.com/x', events: ['cleanup.warning'] },
      { url: 'javascript:alert(1)', events: ['cleanup.warning'] },
      { url: 'not a url', events: ['cleanup.warning'] },
      { url: 'https://user:pass@example.com/x', events: ['cleanup.warning'] },
      { url: 'https://example.com/' + 'x'.repeat(3000), events: ['cleanup.warning'] },
      { url: 'https://example.com/x', events: [] },
      { url: 'https://example.com/x', events: ['cleanup.everything'] },
      { url: 'https://example.com/x', events: ['cleanup.done'], format: 'xml' },
      { url: 'https://example.com/x', events: ['cleanup.done'], project: 'Not A Project' },
    ]) {
      const error = await notifications()
        .addWebhook(input, 'test')
        .then(
          () => undefined,
          (e: unknown) => e as TendError,
        );
      expect(error?.code, input.url.slice(0, 40)).toBe('TEND_USAGE');
    }
    expect(await countRows(f.server.database.db, 'webhooks')).toBe(before);
    const missing = await notifications()
      .removeWebhook('wh_nope')
      .then(
        () => undefined,
        (e: unknown) => e as TendError,
      );
    expect(missing?.code).toBe('TEND_WEBHOOK_NOT_FOUND');
  });
});

/**
 * Attack replayed: a `cleanup.warning` went out 1.8 s after `tend protect`, announcing a deletion
 * that would not happen. A warning is checked against the record when it is sent and at every
 * retry; one that no longer holds is dropped and audited, never sent.
 */
describe.each(dialects)('warnings that no longer hold (%s)', (dialect) => {
  let f: CleanupFixture;
  let rx: Awaited<ReturnType<typeof receiver>>;
  const secrets = new Map<string, string>();
  beforeAll(async () => {
    f = await cleanupFixture(dialect, 10, { notifications: { retryBaseMs: 60_000, maxAttempts: 3 } });
    rx = await receiver(
      () => secrets,
      () => f.now(),
    );
  }, 60_000);
  afterAll(async () => {
    await f?.close();
    await rx?.close();
  });

  it('are dropped when protected or kept alive after the warning was made, at the first send or a retry', async () => {
    const alice = await f.environment({ user: 'alice', uid: 'uid-alice', policyExtra: { warnBefore: '1h' } });
    const carol = await f.environment({ user: 'carol', uid: 'uid-carol', policyExtra: { warnBefore: '1h' } });
    await f.call('POST', '/api/v1/cleanup/enforce', { project: 'shop' });
    for (const path of ['/json', '/flaky']) {
      const { secret } = await f.server.app.notifications.addWebhook(
        { url: rx.url + path, events: ['cleanup.warning'] },
        'test',
      );
      secrets.set(path, secret);
    }
    f.advance(7.5 * 3_600_000);
    await f.report('agent-1', [f.item(alice.namespace, 'uid-alice'), f.item(carol.namespace, 'uid-carol')]);
    await f.server.app.cleanup.pass.run();
    // Protected between the planning pass and the notification pass: no pass re-planned since.
    expect((await f.call('POST', `/api/v1/environments/${alice.id}/protect`)).status).toBe(200);
    rx.failNext(1);
    expect(await f.server.app.notifications.pass()).toMatchObject({
      enqueued: 4,
      delivered: 1,
      retried: 1,
      dropped: 2,
    });
    expect(rx.received.map((r) => [r.path, (r.body.environment as { id: string }).id])).toEqual([
      ['/json', carol.id],
    ]);
    // Carol kept alive past the due time before the retry: the retry is dropped too.
    expect((await f.call('POST', `/api/v1/environments/${carol.id}/keep-alive`, { for: '1d' })).status).toBe(
      200,
    );
    f.advance(61_000);
    expect(await f.server.app.notifications.pass()).toMatchObject({ delivered: 0, dropped: 1 });
    expect(rx.received).toHaveLength(1);
    const rows = await f.server.database.db.selectFrom('webhook_deliveries').selectAll().execute();
    expect(rows.map((r) => r.state).sort()).toEqual(['delivered', 'dropped', 'dropped', 'dropped']);
    const audit = await f.call('GET', '/api/v1/audit?action=webhook-dropped');
    const reasons = (audit.body.items as { detail: { reason: string } }[]).map((a) => a.detail.reason);
    expect(reasons.sort()).toEqual(
      [
        'the environment was protected',
        'the environment was protected',
        expect.stringMatching(/^the environment is kept alive until /),
      ].sort(),
    );
  });
});
