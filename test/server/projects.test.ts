/**
 * Projects are isolated: a session belongs to the project of its first event, forever. With two
 * project-bound tokens, `blog`'s token cannot end a `shop` session, move its environment's
 * activity, or take the session over by re-using its id — 403, and nothing changes. `/metrics`
 * covers every project, so a project-bound token is refused there.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TokenRepository } from '../../src/server/db/repositories/tokens.js';
import {
  countRows,
  createTestServer,
  dialects,
  newId,
  postEvents,
  session,
  type TestServer,
} from './helpers.js';

interface ErrorBody {
  error: { code: string; message: string; detail?: { index?: number } };
}

describe.each(dialects)('projects are isolated on %s', (dialect) => {
  let s: TestServer;
  let shopToken: string;
  let blogToken: string;
  let clock = new Date('2030-01-01T00:00:00.000Z');
  beforeAll(async () => {
    s = await createTestServer(dialect, { now: () => clock });
    const tokens = new TokenRepository(s.database.db);
    shopToken = (await tokens.create({ name: 'shop-ci', scope: 'ingest', project: 'shop' })).token;
    blogToken = (await tokens.create({ name: 'blog-ci', scope: 'ingest', project: 'blog' })).token;
  });
  afterAll(async () => s.close());

  /** Everything a cross-project event could change: the session, its environment, the events. */
  const snapshot = async (sessionId: string) => ({
    session: await s.database.db
      .selectFrom('sessions')
      .selectAll()
      .where('id', '=', sessionId)
      .executeTakeFirst(),
    environments: await s.database.db.selectFrom('environments').selectAll().orderBy('id').execute(),
    resources: await s.database.db.selectFrom('resources').selectAll().orderBy('id').execute(),
    events: await countRows(s.database.db, 'events'),
  });

  const tick = () => {
    clock = new Date(clock.getTime() + 60_000);
  };

  /** Another project's token (or any token) naming the session: 403 naming the event, nothing changed. */
  const expectForbidden = async (
    sessionId: string,
    events: unknown[],
    token: string,
    index: number,
    owner = 'shop',
  ) => {
    const before = await snapshot(sessionId);
    tick();
    const res = await postEvents(s, events, token);
    expect(res.statusCode, res.body).toBe(403);
    const body = res.json<ErrorBody>();
    expect(body.error.code).toBe('TEND_AUTH_FORBIDDEN');
    expect(body.error.message).toContain(`events[${index}]: session ${sessionId} belongs to another project`);
    // The other project's name is not given away.
    expect(body.error.message).not.toContain(`"${owner}"`);
    expect(await snapshot(sessionId)).toEqual(before);
  };

  it("refuses another project's token ending, touching or re-starting a session", async () => {
    const shop = session({ project: 'shop', user: 'alice' });
    tick();
    expect(
      (await postEvents(s, [shop.started(), shop.ns('ready', { uid: 'u-shop' })], shopToken)).statusCode,
    ).toBe(200);
    // The same session id, as blog would send it.
    const blog = { ...session({ project: 'blog', user: 'mallory' }) };
    const forged = <T extends { sessionId: string }>(e: T): T => ({ ...e, sessionId: shop.sessionId });

    await expectForbidden(shop.sessionId, [forged(blog.failed())], blogToken, 0);
    await expectForbidden(shop.sessionId, [forged(blog.completed())], blogToken, 0);
    await expectForbidden(shop.sessionId, [forged(blog.action())], blogToken, 0);
    await expectForbidden(shop.sessionId, [forged(blog.heartbeat())], blogToken, 0);
    await expectForbidden(shop.sessionId, [forged(blog.started())], blogToken, 0);
    await expectForbidden(shop.sessionId, [forged(blog.ns('missing', { uid: 'u-shop' }))], blogToken, 0);
    // One bad event refuses the whole batch, its good events too.
    const own = session({ project: 'blog', user: 'bob' });
    await expectForbidden(shop.sessionId, [own.started(), forged(blog.failed())], blogToken, 1);
    expect(
      await s.database.db.selectFrom('sessions').where('id', '=', own.sessionId).selectAll().execute(),
    ).toEqual([]);

    // The session's own project still owns it.
    tick();
    expect((await postEvents(s, [shop.completed()], shopToken)).statusCode).toBe(200);
    const row = await s.database.db
      .selectFrom('sessions')
      .selectAll()
      .where('id', '=', shop.sessionId)
      .executeTakeFirstOrThrow();
    expect(row).toMatchObject({ project: 'shop', status: 'completed', user_name: 'alice' });
  });

  it('keeps a session in its first project even for a token bound to no project', async () => {
    const shop = session({ project: 'shop', user: 'carol' });
    tick();
    expect((await postEvents(s, [shop.started()], shopToken)).statusCode).toBe(200);
    const blog = session({ project: 'blog', user: 'carol' });
    await expectForbidden(
      shop.sessionId,
      [{ ...blog.started(), sessionId: shop.sessionId }],
      s.tokens.ingest,
      0,
    );
    // Within one batch too: the first event decides.
    const fresh = newId();
    const first = { ...session({ project: 'shop' }).started(), sessionId: fresh };
    const second = { ...session({ project: 'blog' }).heartbeat(), sessionId: fresh };
    const res = await postEvents(s, [first, second], s.tokens.ingest);
    expect(res.statusCode).toBe(403);
    expect(res.json<ErrorBody>().error.detail).toMatchObject({ index: 1 });
  });

  it("gives a session first named without a project to the token's project", async () => {
    const blog = session({ project: 'blog', user: 'dave' });
    tick();
    // An actionStatus carries no project: the blog token's project owns the session from now on.
    expect((await postEvents(s, [blog.action()], blogToken)).statusCode).toBe(200);
    const shop = session({ project: 'shop', user: 'dave' });
    await expectForbidden(
      blog.sessionId,
      [{ ...shop.started(), sessionId: blog.sessionId }],
      shopToken,
      0,
      'blog',
    );
    await expectForbidden(
      blog.sessionId,
      [{ ...shop.failed(), sessionId: blog.sessionId }],
      shopToken,
      0,
      'blog',
    );
    tick();
    expect((await postEvents(s, [blog.started(), blog.completed()], blogToken)).statusCode).toBe(200);
  });

  it('refuses /metrics to a project-bound token and serves it to others', async () => {
    for (const token of [shopToken, s.tokens.otherProject]) {
      const res = await s.app.inject({ method: 'GET', url: '/metrics', headers: s.auth(token) });
      // shop-ci is an ingest token (scope too small); "other" is an admin bound to a project.
      expect(res.statusCode).toBe(403);
      expect(res.json<ErrorBody>().error.code).toBe('TEND_AUTH_FORBIDDEN');
    }
    const bound = await s.app.inject({
      method: 'GET',
      url: '/metrics',
      headers: s.auth(s.tokens.otherProject),
    });
    expect(bound.json<ErrorBody>().error.message).toContain('bound to project "other"');
    const open = await s.app.inject({ method: 'GET', url: '/metrics', headers: s.auth(s.tokens.read) });
    expect(open.statusCode).toBe(200);
    expect(open.body).toContain('tend_environments{state="active"}');
  });
});
