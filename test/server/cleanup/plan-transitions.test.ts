/**
 * The plan route's schedule transitions over a long window and many schedules are bounded work
 * that leaves the event loop free: 200 environments with 200 different schedules and a window
 * of a year answer with each environment's soonest transitions, say that more exist, and
 * `/healthz` answers while the plan request is still being worked out.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { transitions as scheduleTransitions, type Schedule } from '../../../src/cleanup/schedule.js';
import { listTransitions, transitionLimits } from '../../../src/server/cleanup/transitions.js';
import { postEvents, session } from '../helpers.js';
import { cleanupFixture, type CleanupFixture } from './fixture.js';

const day = 86_400_000;
const count = 200;
/** 200 different schedules: waking a minute apart, in two zones. */
const scheduleOf = (i: number): Schedule => ({
  sleepAt: '20:00',
  wakeAt: `${String(6 + Math.floor(i / 60)).padStart(2, '0')}:${String(i % 60).padStart(2, '0')}`,
  weekdays: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'],
  timeZone: i % 2 ? 'Europe/Berlin' : 'America/New_York',
});

interface TransitionItem {
  environmentId: string;
  environment: string;
  kind: string;
  at: string;
}

describe('the plan route over many schedules and a year', () => {
  let f: CleanupFixture;
  let url: string;
  const users = new Map<string, number>();
  beforeAll(async () => {
    f = await cleanupFixture('sqlite');
    for (let batch = 0; batch < count; batch += 50) {
      const events: unknown[] = [];
      for (let i = batch; i < batch + 50; i++) {
        const s = session({ user: `u${i}`, environment: `env-${i}`, command: 'deploy' });
        events.push(
          s.started({ afterInactivity: '3d', action: 'pause', schedule: scheduleOf(i) }),
          s.completed(),
        );
        users.set(`env-${i}`, i);
      }
      const res = await postEvents(f.server, events);
      expect(res.statusCode, res.body).toBe(200);
    }
    url = await f.server.app.listen({ port: 0, host: '127.0.0.1' });
  }, 120_000);
  afterAll(async () => {
    await f?.close();
  });

  const plan = async (within: string) => {
    const res = await fetch(`${url}/api/v1/cleanup/plan?within=${within}`, {
      headers: f.server.auth(f.server.tokens.read),
    });
    expect(res.status).toBe(200);
    return (await res.json()) as { transitions: TransitionItem[]; transitionsComplete: boolean };
  };

  it('lists each environment’s soonest transitions of a year, at most the limit, and says more exist', async () => {
    const answer = await plan('365d');
    expect(answer.transitionsComplete).toBe(false);
    const byEnvironment = new Map<string, TransitionItem[]>();
    for (const t of answer.transitions) {
      byEnvironment.set(t.environment, [...(byEnvironment.get(t.environment) ?? []), t]);
    }
    expect(byEnvironment.size).toBe(count);
    const from = f.now().getTime();
    for (const [name, listed] of byEnvironment) {
      expect(listed.length).toBeLessThanOrEqual(transitionLimits.perEnvironment);
      // The soonest ones, none skipped: what the schedule itself gives from now on.
      const expected = scheduleTransitions(scheduleOf(users.get(name)!), from, from + 30 * day).slice(
        0,
        listed.length,
      );
      expect(listed.map((t) => `${t.kind}@${t.at}`)).toEqual(
        expected.map((t) => `${t.kind}@${new Date(t.at).toISOString()}`),
      );
    }
    expect([...answer.transitions].sort((a, b) => (a.at < b.at ? -1 : 1))).toEqual(answer.transitions);
  }, 120_000);

  it('a short window lists every transition and says it is complete', async () => {
    const answer = await plan('1d');
    expect(answer.transitionsComplete).toBe(true);
    const from = f.now().getTime();
    let expected = 0;
    for (let i = 0; i < count; i++) expected += scheduleTransitions(scheduleOf(i), from, from + day).length;
    expect(answer.transitions).toHaveLength(expected);
  }, 120_000);

  it('/healthz answers while a year-long plan request is worked out', async () => {
    const order: string[] = [];
    const planned = plan('365d').then(() => order.push('plan'));
    // Asked once the plan request is under way; answered before it.
    await nextTurn();
    const health = await fetch(`${url}/healthz`);
    order.push('healthz');
    expect(health.status).toBe(200);
    await planned;
    expect(order).toEqual(['healthz', 'plan']);
  }, 120_000);
});

/** Environments as the index of scheduled environments gives them, each with its own schedule. */
const scheduled = (n: number) =>
  Array.from({ length: n }, (_, i) => ({
    id: `e${i}`,
    project: 'shop',
    name: `env-${i}`,
    policy_schedule: JSON.stringify(scheduleOf(i)),
  }));

describe('listTransitions', () => {
  it('gives the event loop back between schedules', async () => {
    const environments = scheduled(20);
    let turns = 0;
    let done = false;
    const listing = listTransitions(environments, Date.parse('2026-03-29T00:00:00Z'), 7 * day).then((r) => {
      done = true;
      return r;
    });
    // Counts the turns of the event loop that ran while the list was being worked out.
    while (!done) {
      await nextTurn();
      if (!done) turns++;
    }
    const { transitions, complete } = await listing;
    expect(complete).toBe(true);
    expect(turns).toBeGreaterThanOrEqual(environments.length - 1);
    expect(new Set(transitions.map((t) => t.environmentId)).size).toBe(environments.length);
  });

  it('stops at the work budget and says the list is incomplete', async () => {
    const environments = scheduled(10);
    const limits = { perEnvironment: 100, daysPerSchedule: 62, days: 20 };
    const { transitions, complete } = await listTransitions(
      environments,
      Date.parse('2026-03-29T00:00:00Z'),
      30 * day,
      limits,
    );
    expect(complete).toBe(false);
    // 20 days of walking in all: the first schedule gets them, the others nothing.
    expect(new Set(transitions.map((t) => t.environmentId))).toEqual(new Set(['e0']));
  });
});
