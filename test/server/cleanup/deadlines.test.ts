/**
 * The planner's warnings and pull-request due times (src/server/cleanup/deadlines.ts, called from
 * plan()): a scheduled decision inside warnBefore reads "will be deleted at …"; a closed or merged
 * pull request makes its environment due after afterClose — through every check (session,
 * keep-alive, dry-run, breaker); reopened is not due.
 */
import { describe, expect, it } from 'vitest';
import { checkPlan } from '../../../src/server/cleanup/planner/check.js';
import { plan } from '../../../src/server/cleanup/planner/plan.js';
import { policyKey, type PlanSnapshot } from '../../../src/server/cleanup/planner/types.js';
import { goodSnapshot, now, settings } from './snapshots.js';

const hour = 3_600_000;
const env0 = (s: PlanSnapshot) => s.environments.get('env-0')!;

function decide(s: PlanSnapshot) {
  const result = plan(s, now, settings);
  expect(checkPlan(s, now, settings, result)).toEqual([]);
  return { result, decision: result.decisions[0]! };
}

describe('planner deadlines', () => {
  it('warns within warnBefore (default 1h): "will be deleted at …"', () => {
    const s = goodSnapshot();
    env0(s).lastActivityAt = now - 7.5 * hour; // due in 30 minutes
    const { decision } = decide(s);
    expect(decision.kind).toBe('scheduled');
    expect(decision.warnAt).toBe(now - 30 * 60_000);
    expect(decision.sentence).toMatch(
      /^will be deleted at 02:00 UTC unless used \(`tend keep-alive` to postpone\); last activity/,
    );

    // Outside the warning period: an ordinary scheduled decision (its warning time later).
    env0(s).lastActivityAt = now - 2 * hour;
    const later = decide(s).decision;
    expect(later.warnAt).toBe(now + 5 * hour);
    expect(later.sentence).toMatch(/^deleted at 07:30 UTC unless used/);

    // warnBefore from the policy.
    env0(s).policy = { ...env0(s).policy!, warnBeforeMs: 6 * hour };
    expect(decide(s).decision.sentence).toMatch(/^will be deleted at 07:30 UTC/);
  });

  it('a closed or merged pull request makes the environment due after afterClose, though recently used', () => {
    for (const state of ['closed', 'merged']) {
      const s = goodSnapshot();
      env0(s).lastActivityAt = now - hour; // not idle: inactivity alone would wait 7h
      env0(s).pullRequest = { repository: 'acme/shop', number: 42, state, closedAt: now - 60_000 };
      const { result, decision } = decide(s);
      expect(decision.kind).toBe('due');
      expect(decision.dueAt).toBe(now - 60_000);
      expect(decision.sentence).toContain(`pull request acme/shop#42 ${state} at 01:29 UTC`);
      expect(result.newJobs).toHaveLength(1);
    }
  });

  it('afterClose delays it, with a warning in its last hour', () => {
    const s = goodSnapshot();
    env0(s).lastActivityAt = now - hour;
    env0(s).policy = { ...env0(s).policy!, afterCloseMs: 2 * hour };
    s.enforcedPolicies.set(policyKey('shop', 'dev'), {
      ...s.enforcedPolicies.get(policyKey('shop', 'dev'))!,
      afterCloseMs: 2 * hour,
    });
    env0(s).pullRequest = {
      repository: 'acme/shop',
      number: 42,
      state: 'closed',
      closedAt: now - 90 * 60_000,
    };
    const { decision } = decide(s);
    expect(decision.kind).toBe('scheduled');
    expect(decision.dueAt).toBe(now + 30 * 60_000);
    expect(decision.sentence).toMatch(
      /^will be deleted at 02:00 UTC \(`tend keep-alive` to postpone\) — pull request acme\/shop#42 closed/,
    );
  });

  it('an open or reopened pull request changes nothing', () => {
    const s = goodSnapshot();
    env0(s).lastActivityAt = now - hour;
    env0(s).pullRequest = { repository: 'acme/shop', number: 42, state: 'open', closedAt: null };
    expect(decide(s).decision.kind).toBe('scheduled');
  });

  it('every check still applies: a running session, keep-alive, dry-run, the breaker', () => {
    const closed = (s: PlanSnapshot, i = 0) => {
      const env = s.environments.get(`env-${i}`)!;
      env.lastActivityAt = now - hour;
      env.pullRequest = { repository: 'acme/shop', number: 40 + i, state: 'closed', closedAt: now - 60_000 };
    };
    let s = goodSnapshot();
    closed(s);
    s.runningSessions.set('env-0', now - 10_000);
    expect(decide(s).decision).toMatchObject({ kind: 'blocked', reason: 'session-running' });

    s = goodSnapshot();
    closed(s);
    env0(s).keepAliveUntil = now + hour;
    expect(decide(s).decision).toMatchObject({ kind: 'blocked', reason: 'kept-alive' });

    s = goodSnapshot();
    closed(s);
    s.enforcedPolicies.clear();
    expect(decide(s).decision.kind).toBe('dry-run');

    // Many pull requests of one project closing at once open its breaker.
    s = goodSnapshot(4);
    s.activeEnvironments.set('shop', 4);
    for (let i = 0; i < 4; i++) closed(s, i);
    const { result } = decide(s);
    expect(result.breakersOpened).toMatchObject([{ project: 'shop', dueCount: 4 }]);
    expect(result.newJobs).toEqual([]);
  });
});
