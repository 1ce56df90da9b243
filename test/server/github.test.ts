/**
 * POST /api/v1/integrations/github with GitHub's own example payloads
 * (@octokit/webhooks-examples), signed the way GitHub signs them (@octokit/webhooks-methods):
 * closed or merged makes the pull request's environments due after afterClose through the planner
 * and every check of it (the breaker included); reopened, not due. Forged and replayed signatures
 * are 401 and change nothing; unknown repositories are ignored; huge bodies are 413.
 */
import { createHmac } from 'node:crypto';
import { sign } from '@octokit/webhooks-methods';
import examples from '@octokit/webhooks-examples';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countRows, createTestServer, dialects, getJson, postEvents, session } from './helpers.js';
import { cleanupFixture, target, type CleanupFixture } from './cleanup/fixture.js';

const secret = 'a-github-webhook-secret-of-some-length';
const repository = 'Codertocat/Hello-World';

type Example = { action: string; repository: { full_name: string }; number: number };
const pullRequestExamples = (examples as unknown as { name: string; examples: Example[] }[]).find(
  (e) => e.name === 'pull_request',
)!.examples;
const example = (action: string, nth = 0) =>
  structuredClone(pullRequestExamples.filter((e) => e.action === action)[nth]!);

let deliveries = 0;
async function deliver(
  f: CleanupFixture,
  payload: unknown,
  options: {
    secret?: string;
    deliveryId?: string;
    event?: string;
    signature?: string;
    body?: string;
    contentType?: string;
  } = {},
) {
  const body = options.body ?? JSON.stringify(payload);
  const res = await f.server.app.inject({
    method: 'POST',
    url: '/api/v1/integrations/github',
    headers: {
      'content-type': options.contentType ?? 'application/json',
      'x-github-event': options.event ?? 'pull_request',
      'x-github-delivery':
        options.deliveryId ?? `d0c0ffee-0000-4000-8000-${String(++deliveries).padStart(12, '0')}`,
      'x-hub-signature-256':
        options.signature ??
        `sha256=${createHmac('sha256', options.secret ?? secret)
          .update(body)
          .digest('hex')}`,
    },
    payload: body,
  });
  return { status: res.statusCode, body: res.json() as Record<string, unknown>, sent: body };
}

describe.each(dialects)('GitHub pull_request webhooks (%s)', (dialect) => {
  let f: CleanupFixture;
  let pr: { id: string; namespace: string };
  let plain: { id: string };

  const decisionOf = async (environmentId: string) => {
    const plan = await f.call('GET', '/api/v1/cleanup/plan?within=365d&limit=500');
    return (
      plan.body.items as { environmentId: string; kind: string; sentence: string; jobId: string | null }[]
    ).find((d) => d.environmentId === environmentId)!;
  };
  const pass = async () => {
    await f.report('agent-1', [
      f.item(pr.namespace, 'uid-pr'),
      f.item('shop-bob', 'uid-bob'),
      f.item('shop-carol', 'uid-carol'),
    ]);
    await f.server.app.cleanup.pass.run();
  };
  const state = () =>
    f.server.database.db
      .selectFrom('environments')
      .select(['id', 'pull_request_state', 'pull_request_closed_at'])
      .orderBy('id')
      .execute();

  beforeAll(async () => {
    f = await cleanupFixture(dialect, 10, { githubSecret: secret });
    pr = await f.environment({ user: 'pr', uid: 'uid-pr', pullRequest: { repository, number: 2 } });
    plain = await f.environment({ user: 'bob', uid: 'uid-bob' });
    await f.environment({ user: 'carol', uid: 'uid-carol' });
    await f.call('POST', '/api/v1/cleanup/enforce', { project: 'shop' });
    f.advance(60 * 60_000); // an hour idle: an 8h policy is not due
    await pass();
  }, 60_000);
  afterAll(async () => f?.close());

  it('closed: the environment becomes due and a job is planned, through the planner', async () => {
    expect((await decisionOf(pr.id)).kind).toBe('scheduled');
    const res = await deliver(f, example('closed'));
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ repository, number: 2, state: 'closed', environments: 1 });
    await pass();
    const decision = await decisionOf(pr.id);
    expect(decision.kind).toBe('due');
    expect(decision.jobId).not.toBeNull();
    expect(decision.sentence).toMatch(/pull request Codertocat\/Hello-World#2 closed at/);
    // Other environments are not touched.
    expect((await decisionOf(plain.id)).kind).toBe('scheduled');
    const audit = await f.call('GET', '/api/v1/audit?action=pull-request-closed');
    expect(audit.body.items).toHaveLength(1);
  });

  it('a replayed delivery (same id, or same signature under another id) is 401 and changes nothing', async () => {
    const reopened = example('reopened');
    const first = await deliver(f, reopened, { deliveryId: 'replay-0001' });
    expect(first.status).toBe(200);
    const before = await state();
    const rows = await countRows(f.server.database.db, 'github_deliveries');
    const again = await deliver(f, reopened, { deliveryId: 'replay-0001' });
    expect(again.status).toBe(401);
    expect(again.body).toMatchObject({ error: { code: 'TEND_AUTH' } });
    const otherId = await deliver(f, reopened, { deliveryId: 'replay-0002' });
    expect(otherId.status).toBe(401);
    expect(await state()).toEqual(before);
    expect(await countRows(f.server.database.db, 'github_deliveries')).toBe(rows);
  });

  it('reopened: not due any more (the planned job is cancelled before anyone claims it)', async () => {
    // The reopened delivery of the test before.
    expect((await state()).find((e) => e.id === pr.id)).toMatchObject({
      pull_request_state: 'open',
      pull_request_closed_at: null,
    });
    await pass();
    const decision = await decisionOf(pr.id);
    expect(decision.kind).toBe('scheduled');
    expect(decision.jobId).toBeNull();
    const jobs = await f.call('GET', `/api/v1/cleanup/jobs?environmentId=${pr.id}`);
    expect(jobs.body.items[0]).toMatchObject({ state: 'cancelled' });
  });

  it('forged signatures are 401 and change nothing', async () => {
    const before = await state();
    const rows = await countRows(f.server.database.db, 'github_deliveries');
    const closed = example('closed', 1);
    expect((await deliver(f, closed, { secret: 'another-secret-entirely-0000' })).status).toBe(401);
    expect((await deliver(f, closed, { signature: 'sha256=' + '0'.repeat(64) })).status).toBe(401);
    expect((await deliver(f, closed, { signature: 'sha1=abc' })).status).toBe(401);
    const missing = await f.server.app.inject({
      method: 'POST',
      url: '/api/v1/integrations/github',
      headers: {
        'content-type': 'application/json',
        'x-github-event': 'pull_request',
        'x-github-delivery': 'x-1',
      },
      payload: JSON.stringify(closed),
    });
    expect(missing.statusCode).toBe(401);
    // Signed, then the body changed on the way.
    const signed = await sign(secret, JSON.stringify(closed));
    const tampered = { ...closed, number: 3 };
    expect((await deliver(f, tampered, { signature: signed })).status).toBe(401);
    // A bearer token is not what authenticates this route.
    const bearer = await f.server.app.inject({
      method: 'POST',
      url: '/api/v1/integrations/github',
      headers: {
        ...f.server.auth(f.server.tokens.admin),
        'content-type': 'application/json',
        'x-github-event': 'pull_request',
        'x-github-delivery': 'x-2',
      },
      payload: JSON.stringify(closed),
    });
    expect(bearer.statusCode).toBe(401);
    expect(await state()).toEqual(before);
    expect(await countRows(f.server.database.db, 'github_deliveries')).toBe(rows);
  });

  it('unknown repositories and other events are accepted and ignored; bad payloads are 400', async () => {
    const before = await state();
    const other = example('closed', 1);
    other.repository.full_name = 'someone/else';
    const res = await deliver(f, other);
    expect(res.status).toBe(202);
    expect(res.body.ignored).toMatch(/no environment of repository someone\/else/);
    expect((await deliver(f, { zen: 'hi' }, { event: 'ping' })).status).toBe(200);
    expect((await deliver(f, { ref: 'x' }, { event: 'push' })).status).toBe(202);
    expect((await deliver(f, { action: 'closed' })).status).toBe(400);
    expect((await deliver(f, undefined, { body: 'not json' })).status).toBe(400);
    expect(await state()).toEqual(before);
  });

  it('a signed payload whose strings the database cannot store (NUL, a lone surrogate) is a 400, never a 500', async () => {
    const before = await state();
    for (const [field, value] of [
      ['action', 'clo\u0000sed'],
      ['action', 'closed\ud800'],
      ['repository', 'acme/sh\u0000op'],
      ['repository', 'someone/\udc00else'],
    ] as const) {
      const payload = example('closed', 0);
      if (field === 'action') payload.action = value as typeof payload.action;
      else payload.repository.full_name = value;
      const res = await deliver(f, payload);
      expect(res.status, `${field} ${JSON.stringify(value)}`).toBe(400);
      expect(res.body).toMatchObject({ error: { code: 'TEND_SERVER_BAD_REQUEST' } });
    }
    expect(await state()).toEqual(before);
  });

  it('an empty or form-encoded body with a good signature is a 400 naming the problem, never a 500', async () => {
    const before = await state();
    const empty = await deliver(f, undefined, { body: '' });
    expect(empty.status).toBe(400);
    expect(empty.body).toMatchObject({ error: { message: expect.stringMatching(/empty/) } });
    const form = await deliver(f, undefined, {
      body: `payload=${encodeURIComponent(JSON.stringify(example('closed', 0)))}`,
      contentType: 'application/x-www-form-urlencoded',
    });
    expect(form.status).toBe(400);
    expect(form.body).toMatchObject({ error: { message: expect.stringMatching(/application\/json/) } });
    expect(await state()).toEqual(before);
  });

  it('a replayed ignored delivery is refused too: every delivery id is remembered', async () => {
    const before = await state();
    const other = example('closed', 1);
    other.repository.full_name = 'someone/else-again';
    const first = await deliver(f, other, { deliveryId: 'ignored-delivery-1' });
    expect(first.status).toBe(202);
    expect((await deliver(f, other, { deliveryId: 'ignored-delivery-1' })).status).toBe(401);
    const ping = await deliver(f, { zen: 'replayed ping' }, { event: 'ping', deliveryId: 'ping-delivery-1' });
    expect(ping.status).toBe(200);
    expect(
      (await deliver(f, { zen: 'replayed ping' }, { event: 'ping', deliveryId: 'ping-delivery-1' })).status,
    ).toBe(401);
    // The same signed body under a new id is a replay as well.
    expect((await deliver(f, other, { deliveryId: 'ignored-delivery-2' })).status).toBe(401);
    expect(await state()).toEqual(before);
  });

  it('huge bodies are 413 before anything is verified', async () => {
    const huge = { ...example('closed', 1), padding: 'x'.repeat(2 * 1024 * 1024) };
    const res = await deliver(f, huge);
    expect(res.status).toBe(413);
    expect(res.body).toMatchObject({ error: { code: 'TEND_SERVER_PAYLOAD_TOO_LARGE' } });
  });

  it('merged, with afterClose, and the breaker: many pull requests closing at once open it', async () => {
    // Three more environments of one project, each for a pull request, in a project of four.
    const g = await cleanupFixture(dialect, 10, { githubSecret: secret });
    try {
      const envs: { namespace: string }[] = [];
      for (let i = 0; i < 3; i++) {
        envs.push(
          await g.environment({
            user: `u${i}`,
            uid: `uid-u${i}`,
            project: 'web',
            pullRequest: { repository, number: 10 + i },
            policyExtra: { afterClose: '30m' },
          }),
        );
      }
      await g.call('POST', '/api/v1/cleanup/enforce', { project: 'web' });
      const report = () =>
        g.report(
          'agent-1',
          envs.map((e, i) => g.item(e.namespace, `uid-u${i}`, {}, 'web')),
        );
      for (let i = 0; i < 3; i++) {
        const merged = example('closed', 1);
        merged.number = 10 + i;
        (merged as unknown as { pull_request: { merged: boolean } }).pull_request.merged = true;
        const res = await deliver(g, merged);
        expect(res.body).toMatchObject({ state: 'merged', environments: 1 });
      }
      await report();
      await g.server.app.cleanup.pass.run();
      let plan = await g.call('GET', '/api/v1/cleanup/plan?within=365d');
      // afterClose 30m: scheduled, and inside the default 1h warning period.
      expect(plan.body.items.map((d: { kind: string; warning: boolean }) => [d.kind, d.warning])).toEqual([
        ['scheduled', true],
        ['scheduled', true],
        ['scheduled', true],
      ]);
      g.advance(31 * 60_000);
      await report();
      await g.server.app.cleanup.pass.run();
      plan = await g.call('GET', '/api/v1/cleanup/plan?within=365d');
      expect(plan.body.items.map((d: { reason: string }) => d.reason)).toEqual([
        'breaker-open',
        'breaker-open',
        'breaker-open',
      ]);
      const jobs = await g.call('GET', '/api/v1/cleanup/jobs');
      expect(jobs.body.items).toEqual([]);
      expect(target).toBe('kubernetes/cluster-1');
    } finally {
      await g.close();
    }
  }, 60_000);
});

describe('GitHub integration not configured', () => {
  it('answers 404 and stores nothing', async () => {
    const f = await cleanupFixture('sqlite');
    try {
      const res = await deliver(f, example('closed'));
      expect(res.status).toBe(404);
      expect(res.body).toMatchObject({ error: { code: 'TEND_SERVER_NOT_FOUND' } });
      expect(await countRows(f.server.database.db, 'github_deliveries')).toBe(0);
    } finally {
      await f.close();
    }
  });
});

describe.each(dialects)('sessionStarted carries the pull request (%s)', (dialect) => {
  it('stores it on the environment with the policy; a bad one is 400 and nothing is stored', async () => {
    const s = await createTestServer(dialect);
    try {
      const a = session({ environment: 'pr', namespace: 'shop-pr-7' });
      const ok = await postEvents(s, [
        a.started(
          { afterInactivity: '3d', action: 'delete', warnBefore: '2h', afterClose: '30m' },
          { repository: 'acme/shop', number: 7 },
        ),
      ]);
      expect(ok.statusCode).toBe(200);
      const list = await getJson<{ items: { id: string }[] }>(s, '/api/v1/environments');
      const env = await getJson<{ environment: Record<string, unknown> }>(
        s,
        `/api/v1/environments/${list.body.items[0]!.id}`,
      );
      expect(env.body.environment).toMatchObject({
        policy: { afterInactivity: '3d', action: 'delete', warnBefore: '2h', afterClose: '30m' },
        pullRequest: { repository: 'acme/shop', number: 7, state: null, closedAt: null },
      });
      // An older CLI sends neither: still accepted.
      const old = session({ namespace: 'shop-old' });
      expect(
        (await postEvents(s, [old.started({ afterInactivity: '8h', action: 'delete' })])).statusCode,
      ).toBe(200);
      const before = await countRows(s.database.db, 'events');
      for (const pullRequest of [
        { repository: 'no-slash', number: 7 },
        { repository: 'acme/shop', number: 0 },
        { repository: 'acme/shop', number: 7, extra: 1 },
      ]) {
        const bad = session({ namespace: 'shop-bad' });
        const res = await postEvents(s, [
          bad.started(
            { afterInactivity: '8h', action: 'delete' },
            pullRequest as { repository: string; number: number },
          ),
        ]);
        expect(res.statusCode).toBe(400);
      }
      expect(await countRows(s.database.db, 'events')).toBe(before);
    } finally {
      await s.close();
    }
  });
});
