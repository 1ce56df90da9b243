/**
 * The planner's memo (PlanMemo): over random snapshots changed step by step as a registry changes
 * between passes (the clock moving across due, warning, keep-alive, session, schedule and day
 * boundaries; environments and resources replaced; sessions, open jobs, breakers, the halt
 * switch, enforced policies, executors and inventories changing), a pass with the memo plans
 * exactly what a pass without it plans: every decision, sentence, new job and opened breaker.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { plan } from '../../../src/server/cleanup/planner/plan.js';
import { PlanMemo } from '../../../src/server/cleanup/planner/memo.js';
import {
  policyKey,
  type PlanResult,
  type PlanSnapshot,
  type SnapshotEnvironment,
} from '../../../src/server/cleanup/planner/types.js';
import { goodSnapshot, now as goodNow, randomCase, settings } from './snapshots.js';

const minute = 60_000;
const hour = 60 * minute;

type Change =
  | { type: 'advance'; ms: number }
  | { type: 'touch'; env: number; offset: number }
  | { type: 'keep-alive'; env: number; offset: number | null }
  | { type: 'protect'; env: number }
  | { type: 'session'; env: number; offset: number | null }
  | { type: 'job'; resource: number; open: boolean; state: 'planned' | 'executing' }
  | { type: 'item-activity'; resource: number; offset: number }
  | { type: 'halt'; halted: boolean }
  | { type: 'breaker'; project: 'p1' | 'p2' | 'shop'; open: boolean }
  | { type: 'enforce'; index: number; policy: { afterMs: number; action: string } | null }
  | { type: 'executor'; target: number; age: number | null }
  | { type: 'inventory'; target: number; complete: boolean; age: number }
  | { type: 'heartbeat' };

const index = fc.integer({ min: 0, max: 20 });
const relative = fc.integer({ min: -30 * hour, max: 3 * hour });
const change: fc.Arbitrary<Change> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      type: fc.constant('advance' as const),
      // Seconds (a pass), minutes (sessions, warnings), hours (due times, schedules, midnight).
      ms: fc.oneof(
        fc.integer({ min: 0, max: 90_000 }),
        fc.integer({ min: 0, max: 3 * hour }),
        fc.integer({ min: 0, max: 30 * hour }),
      ),
    }),
  },
  fc.record({ type: fc.constant('touch' as const), env: index, offset: relative }),
  fc.record({
    type: fc.constant('keep-alive' as const),
    env: index,
    offset: fc.option(relative, { nil: null }),
  }),
  fc.record({ type: fc.constant('protect' as const), env: index }),
  fc.record({
    type: fc.constant('session' as const),
    env: index,
    offset: fc.option(fc.integer({ min: -10 * minute, max: 0 }), { nil: null }),
  }),
  fc.record({
    type: fc.constant('job' as const),
    resource: index,
    open: fc.boolean(),
    state: fc.constantFrom('planned' as const, 'executing' as const),
  }),
  fc.record({ type: fc.constant('item-activity' as const), resource: index, offset: relative }),
  fc.record({ type: fc.constant('halt' as const), halted: fc.boolean() }),
  fc.record({
    type: fc.constant('breaker' as const),
    project: fc.constantFrom('p1', 'p2', 'shop'),
    open: fc.boolean(),
  }),
  fc.record({
    type: fc.constant('enforce' as const),
    index: fc.integer({ min: 0, max: 4 }),
    policy: fc.option(
      fc.record({
        afterMs: fc.constantFrom(minute, hour, 8 * hour),
        action: fc.constantFrom('delete', 'pause'),
      }),
      { nil: null },
    ),
  }),
  fc.record({
    type: fc.constant('executor' as const),
    target: fc.integer({ min: 0, max: 2 }),
    age: fc.option(fc.integer({ min: 0, max: 5 * 30_000 }), { nil: null }),
  }),
  fc.record({
    type: fc.constant('inventory' as const),
    target: fc.integer({ min: 0, max: 2 }),
    complete: fc.boolean(),
    age: fc.integer({ min: 0, max: 5 * 30_000 }),
  }),
);

const targets = ['kubernetes/c1', 'kubernetes/c2', 'local/h1'];
const policyKeys = [
  ['p1', 'dev'],
  ['p1', 'pr'],
  ['p2', 'dev'],
  ['p2', 'pr'],
  ['shop', 'dev'],
] as const;

/**
 * Applies a change as the snapshot cache shows one: a changed environment or resource is a new
 * object (unchanged ones stay identical); the small tables are read afresh (changed in place here).
 */
function apply(snapshot: PlanSnapshot, c: Change, t: number): number {
  const envs = [...snapshot.environments.values()];
  const replaceEnv = (i: number, patch: Partial<SnapshotEnvironment>) => {
    const env = envs[i % Math.max(1, envs.length)];
    if (env) snapshot.environments.set(env.id, { ...env, ...patch });
  };
  const resource = (i: number) => snapshot.resources[i % Math.max(1, snapshot.resources.length)];
  switch (c.type) {
    case 'advance':
      return t + c.ms;
    case 'touch':
      replaceEnv(c.env, { lastActivityAt: t + c.offset });
      break;
    case 'keep-alive':
      replaceEnv(c.env, { keepAliveUntil: c.offset === null ? null : t + c.offset });
      break;
    case 'protect': {
      const env = envs[c.env % Math.max(1, envs.length)];
      if (env) replaceEnv(c.env, { protected: !env.protected });
      break;
    }
    case 'session': {
      const env = envs[c.env % Math.max(1, envs.length)];
      if (!env) break;
      if (c.offset === null) snapshot.runningSessions.delete(env.id);
      else snapshot.runningSessions.set(env.id, t + c.offset);
      break;
    }
    case 'job': {
      const r = resource(c.resource);
      if (!r) break;
      if (c.open) snapshot.openJobs.set(r.id, { id: `job-${r.id}-${t}`, state: c.state, trigger: 'policy' });
      else snapshot.openJobs.delete(r.id);
      break;
    }
    case 'item-activity': {
      const i = c.resource % Math.max(1, snapshot.resources.length);
      const r = snapshot.resources[i];
      if (!r?.item) break;
      snapshot.resources[i] = { ...r, item: { ...r.item, lastActivityAt: t + c.offset } };
      break;
    }
    case 'halt':
      snapshot.halted = c.halted;
      break;
    case 'breaker':
      if (c.open) snapshot.openBreakers.add(c.project);
      else snapshot.openBreakers.delete(c.project);
      break;
    case 'enforce': {
      const [project, name] = policyKeys[c.index]!;
      if (c.policy) snapshot.enforcedPolicies.set(policyKey(project, name), c.policy);
      else snapshot.enforcedPolicies.delete(policyKey(project, name));
      break;
    }
    case 'executor':
      if (c.age === null) snapshot.executorsLastSeen.delete(targets[c.target]!);
      else snapshot.executorsLastSeen.set(targets[c.target]!, t - c.age);
      break;
    case 'heartbeat':
      for (const target of targets) {
        snapshot.executorsLastSeen.set(target, t);
        snapshot.inventories.set(target, { receivedAt: t, complete: true, lastCompleteAt: t });
      }
      break;
    case 'inventory':
      snapshot.inventories.set(targets[c.target]!, {
        receivedAt: t - c.age,
        complete: c.complete,
        lastCompleteAt: c.complete ? t - c.age : null,
      });
      break;
  }
  return t;
}

/** Everything a pass's result says, in a comparable form. */
function outcome(result: PlanResult) {
  return {
    decisions: result.decisions.map((d) => ({
      resource: d.resourceId,
      kind: d.kind,
      reason: d.reason,
      action: d.action,
      rule: d.rule,
      dueAt: d.dueAt,
      warnAt: d.warnAt,
      lastActivityAt: d.lastActivityAt,
      openJobId: d.openJobId,
      sentence: d.sentence,
    })),
    newJobs: result.newJobs.map((d) => d.resourceId),
    breakersOpened: result.breakersOpened,
  };
}

describe('the planner memo', () => {
  it('property: a pass with the memo plans exactly what a pass without it plans', async () => {
    let reused = 0;
    let passes = 0;
    await fc.assert(
      // Async, yielding once a case: a long synchronous run would starve the test runner's RPC.
      fc.asyncProperty(
        randomCase,
        fc.array(change, { maxLength: 12 }),
        async ({ snapshot, now, settings: st }, changes) => {
          await new Promise((resolve) => setImmediate(resolve));
          const memo = new PlanMemo();
          let t = now;
          expect(outcome(plan(snapshot, t, st, { memo }))).toEqual(outcome(plan(snapshot, t, st)));
          for (const c of changes) {
            t = apply(snapshot, c, t);
            const withMemo = plan(snapshot, t, st, { memo });
            reused += memo.reused;
            passes++;
            expect(outcome(withMemo)).toEqual(outcome(plan(snapshot, t, st)));
          }
        },
      ),
      { numRuns: 300 },
    );
    // The memo was used, not only filled: most passes reuse environments.
    expect(passes).toBeGreaterThan(300);
    expect(reused).toBeGreaterThan(passes);
  }, 600_000);

  it('property: the same from a snapshot where everything is due (breaker, cap, warnings, sessions)', async () => {
    // Six enforced environments idle around the policy's 8h, with warnings: every step of the
    // planner is reached, and a change of one input flips decisions between its outcomes.
    const base = fc.record({
      activity: fc.array(fc.integer({ min: -10 * hour, max: -6 * hour }), { minLength: 6, maxLength: 6 }),
      warnBeforeMs: fc.constantFrom(undefined, 10 * minute, 2 * hour),
      maxPerPass: fc.integer({ min: 0, max: 6 }),
      active: fc.integer({ min: 6, max: 14 }),
    });
    const nearChange = fc.oneof(
      { weight: 3, arbitrary: fc.constant<Change>({ type: 'heartbeat' }) },
      {
        weight: 3,
        arbitrary: fc.record({
          type: fc.constant('advance' as const),
          ms: fc.integer({ min: 0, max: 40 * minute }),
        }),
      },
      { weight: 6, arbitrary: change },
    );
    await fc.assert(
      fc.asyncProperty(base, fc.array(nearChange, { maxLength: 12 }), async (b, changes) => {
        await new Promise((resolve) => setImmediate(resolve));
        const snapshot = goodSnapshot(6);
        snapshot.activeEnvironments.set('shop', b.active);
        for (const [i, offset] of b.activity.entries()) {
          const env = snapshot.environments.get(`env-${i}`)!;
          snapshot.environments.set(env.id, {
            ...env,
            lastActivityAt: goodNow + offset,
            policy: {
              ...env.policy!,
              ...(b.warnBeforeMs !== undefined ? { warnBeforeMs: b.warnBeforeMs } : {}),
            },
          });
        }
        const st = { ...settings, maxPerPass: b.maxPerPass };
        const memo = new PlanMemo();
        let t = goodNow;
        expect(outcome(plan(snapshot, t, st, { memo }))).toEqual(outcome(plan(snapshot, t, st)));
        for (const c of changes) {
          t = apply(snapshot, c, t);
          expect(outcome(plan(snapshot, t, st, { memo }))).toEqual(outcome(plan(snapshot, t, st)));
        }
      }),
      { numRuns: 300 },
    );
  }, 600_000);

  it('reuses unchanged environments and re-evaluates the changed ones and those whose time came', () => {
    const snapshot = goodSnapshot(4);
    // Three environments with activity 2h ago (due at +6h), one idle for a day (due now).
    for (const id of ['env-1', 'env-2', 'env-3']) {
      const env = snapshot.environments.get(id)!;
      snapshot.environments.set(id, { ...env, lastActivityAt: goodNow - 2 * hour });
    }
    const memo = new PlanMemo();
    const first = plan(snapshot, goodNow, settings, { memo });
    expect(memo.reused).toBe(0);
    expect(first.newJobs.map((d) => d.environmentId)).toEqual(['env-0']);
    // Nothing changed: every environment reused; the scheduled decisions are the same objects.
    const second = plan(snapshot, goodNow + 30_000, settings, { memo });
    expect(memo.reused).toBe(4);
    expect(second.decisions[1]).toBe(first.decisions[1]);
    // env-1 used again: only it is evaluated again.
    snapshot.environments.set('env-1', { ...snapshot.environments.get('env-1')!, lastActivityAt: goodNow });
    const third = plan(snapshot, goodNow + 60_000, settings, { memo });
    expect(memo.reused).toBe(3);
    expect(third.decisions[1]!.dueAt).toBe(goodNow + 8 * hour);
    // Past the due time of env-2 and env-3 (and midnight): they are evaluated again and due
    // (with a live executor and a fresh inventory by then).
    const later = goodNow + 6 * hour + 1;
    snapshot.executorsLastSeen.set('kubernetes/c1', later - 1000);
    snapshot.inventories.set('kubernetes/c1', {
      receivedAt: later - 1000,
      complete: true,
      lastCompleteAt: later - 1000,
    });
    const fourth = plan(snapshot, later, settings, { memo });
    expect(fourth.decisions.filter((d) => d.kind === 'due').map((d) => d.environmentId)).toEqual([
      'env-0',
      'env-2',
      'env-3',
    ]);
  });
});
