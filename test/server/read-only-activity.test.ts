/**
 * Read-only commands are not activity, on the server (real ingest over HTTP, SQLite and
 * PostgreSQL): a `tend status` polled for ever, or a `tend logs -f` left running, does not keep an
 * environment alive. The server decides by the command of the session's sessionStarted, its own
 * list; a policy with `readOnlyIsActivity: true` brings back the old behaviour (their start counts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CleanupPolicy } from '../../src/cleanup/policy.js';
import { testClock } from '../cleanup/helpers.js';
import { createTestServer, dialects, postEvents, session, type TestServer } from './helpers.js';

const hour = 3_600_000;
const policy: CleanupPolicy = { afterInactivity: '8h', action: 'delete' };

describe.each(dialects)('read-only commands and activity (%s)', (dialect) => {
  let server: TestServer;
  const clock = testClock();
  beforeAll(async () => {
    server = await createTestServer(dialect, { now: clock.now });
  });
  afterAll(async () => {
    await server?.close();
  });

  const environment = async (project: string) =>
    server.database.db
      .selectFrom('environments')
      .select(['id', 'last_activity_at', 'last_activity_command'])
      .where('project', '=', project)
      .executeTakeFirstOrThrow();
  const resourceActivity = async (project: string) =>
    (
      await server.database.db
        .selectFrom('resources as r')
        .innerJoin('environments as e', 'e.id', 'r.environment_id')
        .select('r.last_activity_at')
        .where('e.project', '=', project)
        .executeTakeFirstOrThrow()
    ).last_activity_at;
  const post = async (events: unknown[]) => expect((await postEvents(server, events)).statusCode).toBe(200);

  it('tend status and tend logs move neither the environment’s activity nor its namespace’s', async () => {
    const project = `ro-${dialect}`;
    const deploy = session({ project, command: 'deploy' });
    await post([deploy.started(policy), deploy.ns('ready', { uid: 'u-1' }), deploy.completed()]);
    const before = await environment(project);
    const nsBefore = await resourceActivity(project);
    expect(before.last_activity_command).toBe('deploy');

    // Hours of a dashboard polling tend status, and a tend logs -f with its heartbeats.
    for (let i = 0; i < 3; i++) {
      clock.advance(hour);
      const status = session({ project, command: 'status' });
      await post([status.started(policy), status.ns('ready', { uid: 'u-1', cause: 'observed' })]);
      await post([status.action(), status.completed()]);
    }
    const logs = session({ project, command: 'logs' });
    await post([logs.started(policy)]);
    clock.advance(hour);
    await post([logs.heartbeat(), logs.ns('ready', { uid: 'u-1', cause: 'observed' })]);

    const after = await environment(project);
    expect(after.last_activity_at).toBe(before.last_activity_at);
    expect(after.last_activity_command).toBe('deploy');
    expect(await resourceActivity(project)).toBe(nsBefore);
    // The sessions are recorded all the same (tend envs shows them).
    const sessions = await server.database.db
      .selectFrom('sessions')
      .select('command')
      .where('environment_id', '=', after.id)
      .execute();
    expect(sessions.map((s) => s.command).sort()).toEqual(['deploy', 'logs', 'status', 'status', 'status']);

    // The running tend logs -f holds nothing: the plan does not say "a tend command is running".
    await server.app.cleanup.pass.run();
    const decisions = await server.database.db
      .selectFrom('cleanup_decisions')
      .select(['reason_code'])
      .where('environment_id', '=', after.id)
      .execute();
    expect(decisions.length).toBeGreaterThan(0);
    expect(decisions.map((d) => d.reason_code)).not.toContain('session-running');

    // Any other command is activity, as before.
    clock.advance(hour);
    const test = session({ project, command: 'test' });
    await post([test.started(policy), test.completed()]);
    const tested = await environment(project);
    expect(Date.parse(tested.last_activity_at)).toBeGreaterThan(Date.parse(before.last_activity_at));
    expect(tested.last_activity_command).toBe('test');
  });

  it('with readOnlyIsActivity: true, a read-only command counts at its start, as before', async () => {
    const project = `ro-old-${dialect}`;
    const oldWay: CleanupPolicy = { ...policy, readOnlyIsActivity: true };
    const deploy = session({ project, command: 'deploy' });
    await post([deploy.started(oldWay), deploy.completed()]);
    const before = await environment(project);
    clock.advance(hour);
    const status = session({ project, command: 'status' });
    await post([status.started(oldWay), status.completed()]);
    const after = await environment(project);
    expect(Date.parse(after.last_activity_at)).toBeGreaterThan(Date.parse(before.last_activity_at));
    expect(after.last_activity_command).toBe('status');
  });

  it('a client cannot make its read-only session count by leaving the policy out', async () => {
    const project = `ro-bare-${dialect}`;
    const deploy = session({ project, command: 'deploy' });
    await post([deploy.started(policy), deploy.completed()]);
    const before = await environment(project);
    clock.advance(hour);
    const status = session({ project, command: 'status' });
    await post([status.started(), status.completed()]);
    expect((await environment(project)).last_activity_at).toBe(before.last_activity_at);
  });
});
