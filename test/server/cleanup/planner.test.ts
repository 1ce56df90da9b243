/**
 * The planner: each decision and reason code on a snapshot changed one thing at a time, and a
 * property test over thousands of random snapshots that no `due` decision breaks an invariant.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { checkPlan } from '../../../src/server/cleanup/planner/check.js';
import { plan } from '../../../src/server/cleanup/planner/plan.js';
import {
  namespaceKey,
  policyKey,
  type NamespaceHolder,
  type PlanSnapshot,
} from '../../../src/server/cleanup/planner/types.js';
import type { BlockReason } from '../../../src/cleanup/decisions.js';
import { goodSnapshot, now, randomCase, settings } from './snapshots.js';

const hour = 3_600_000;

function only(snapshot: PlanSnapshot) {
  const result = plan(snapshot, now, settings);
  expect(checkPlan(snapshot, now, settings, result)).toEqual([]);
  return { result, decision: result.decisions[0]! };
}

function blockedBy(change: (s: PlanSnapshot) => void): { reason: BlockReason | null; sentence: string } {
  const s = goodSnapshot();
  change(s);
  const { result, decision } = only(s);
  expect(decision.kind).toBe('blocked');
  expect(result.newJobs).toEqual([]);
  return { reason: decision.reason, sentence: decision.sentence };
}

const env0 = (s: PlanSnapshot) => s.environments.get('env-0')!;
const item0 = (s: PlanSnapshot) => s.resources[0]!.item!;

describe('planner', () => {
  it('an idle owned namespace under an enforced policy is due, with a sentence a person understands', () => {
    const { result, decision } = only(goodSnapshot());
    expect(decision.kind).toBe('due');
    expect(decision.sentence).toBe(
      'no activity since 2026-03-28 01:30 UTC, policy 8h; last: tend build by alice',
    );
    expect(result.newJobs).toHaveLength(1);
    expect(decision.dueAt).toBe(now - 16 * hour);
  });

  it('is scheduled with its due time while the policy wait runs', () => {
    const s = goodSnapshot();
    env0(s).lastActivityAt = now - hour;
    const { decision } = only(s);
    expect(decision.kind).toBe('scheduled');
    expect(decision.dueAt).toBe(now + 7 * hour);
    expect(decision.sentence).toMatch(
      /^deleted at 08:30 UTC unless used; last activity 00:30 UTC, policy 8h/,
    );
  });

  it('activity is the later of the registry and the namespace annotation', () => {
    const s = goodSnapshot();
    item0(s).lastActivityAt = now - hour;
    const { decision } = only(s);
    expect(decision.kind).toBe('scheduled');
    expect(decision.lastActivityAt).toBe(now - hour);
    expect(decision.sentence).toContain('the activity marked on the namespace');
  });

  it('a new policy, or one stricter than the enforced one, is dry-run', () => {
    for (const change of [
      (s: PlanSnapshot) => s.enforcedPolicies.clear(),
      (s: PlanSnapshot) =>
        s.enforcedPolicies.set(policyKey('shop', 'dev'), {
          afterMs: 24 * hour,
          action: 'delete',
          afterCloseMs: null,
          schedule: null,
        }),
      (s: PlanSnapshot) =>
        s.enforcedPolicies.set(policyKey('shop', 'dev'), {
          afterMs: 8 * hour,
          action: 'pause',
          afterCloseMs: null,
          schedule: null,
        }),
    ]) {
      const s = goodSnapshot();
      change(s);
      const { result, decision } = only(s);
      expect(decision.kind).toBe('dry-run');
      expect(result.newJobs).toEqual([]);
    }
    const looser = goodSnapshot();
    looser.enforcedPolicies.set(policyKey('shop', 'dev'), {
      afterMs: hour,
      action: 'delete',
      afterCloseMs: null,
      schedule: null,
    });
    expect(only(looser).decision.kind).toBe('due');
  });

  it.each<[BlockReason, (s: PlanSnapshot) => void]>([
    ['system', (s) => (s.resources[0]!.role = 'system')],
    ['adopted', (s) => (s.resources[0]!.ownership = 'adopted')],
    ['not-owned', (s) => (s.resources[0]!.ownership = 'unknown')],
    ['not-owned', (s) => (s.resources[0]!.namespaceUid = null)],
    ['protected-name', (s) => (s.resources[0]!.namespaceName = 'kube-public')],
    ['protected-name', (s) => (s.resources[0]!.namespaceName = 'default')],
    ['protected-name', (s) => (s.resources[0]!.namespaceName = 'tend-system')],
    ['protected-name', (s) => (s.resources[0]!.namespaceName = 'prod-eu')],
    ['protected', (s) => (env0(s).protected = true)],
    ['kept-alive', (s) => (env0(s).keepAliveUntil = now + hour)],
    ['session-running', (s) => s.runningSessions.set('env-0', now - 60_000)],
    ['halted', (s) => (s.halted = true)],
    ['no-executor', (s) => s.executorsLastSeen.clear()],
    ['no-executor', (s) => s.executorsLastSeen.set('kubernetes/c1', now - 91_000)],
    ['inventory-stale', (s) => s.inventories.clear()],
    [
      'inventory-stale',
      (s) =>
        s.inventories.set('kubernetes/c1', {
          receivedAt: now - 100_000,
          complete: true,
          lastCompleteAt: now - 100_000,
        }),
    ],
    [
      'inventory-partial',
      (s) =>
        s.inventories.set('kubernetes/c1', {
          receivedAt: now,
          complete: false,
          lastCompleteAt: now - 30_000,
        }),
    ],
    ['not-owned', (s) => (s.resources[0]!.item = null)],
    ['not-owned', (s) => (item0(s).uid = 'uid-recreated')],
    ['not-owned', (s) => (item0(s).managedByTend = false)],
    ['not-owned', (s) => (item0(s).project = 'other')],
    ['not-owned', (s) => (item0(s).environment = 'other')],
    ['system', (s) => (item0(s).role = 'system')],
    ['adopted', (s) => (item0(s).adopted = true)],
    ['breaker-open', (s) => s.openBreakers.add('shop')],
  ])('blocked %s', (reason, change) => {
    expect(blockedBy(change).reason).toBe(reason);
  });

  it('a claim of creation holds only when the target created the namespace within its window, 60 s tolerated either way', () => {
    const minute = 60_000;
    const claimed = (createdAt: number) => {
      const s = goodSnapshot();
      s.resources[0]!.claim = { startedAt: now - 20 * hour, receivedAt: now - 19 * hour };
      item0(s).createdAt = createdAt;
      return only(s).decision;
    };
    expect(claimed(now - 20 * hour - minute).kind).toBe('due');
    expect(claimed(now - 19 * hour + minute).kind).toBe('due');
    expect(claimed(now - 20 * hour - minute - 1)).toMatchObject({ kind: 'blocked', reason: 'not-owned' });
    expect(claimed(now - 20 * hour - minute - 1).sentence).toContain(
      'the cluster created the namespace before the session that claims to have created it',
    );
    expect(claimed(now - 19 * hour + minute + 1)).toMatchObject({ kind: 'blocked', reason: 'not-owned' });
    expect(claimed(now - 19 * hour + minute + 1).sentence).toContain(
      'the cluster created the namespace after the server received the claim that tend created it',
    );
    // A namespace owned before claim windows were recorded: its creation time proves nothing either way.
    const unwindowed = goodSnapshot();
    item0(unwindowed).createdAt = now - 400 * 24 * hour;
    expect(only(unwindowed).decision.kind).toBe('due');
  });

  it('a session older than 2 minutes does not keep the environment active', () => {
    const s = goodSnapshot();
    s.runningSessions.set('env-0', now - 121_000);
    expect(only(s).decision.kind).toBe('due');
  });

  it('an open job is not planned again and takes no room in the cap', () => {
    const s = goodSnapshot(2);
    s.openJobs.set('res-0', { id: 'job-1', state: 'planned' });
    const { result } = only(s);
    expect(result.decisions.map((d) => [d.kind, d.openJobId])).toEqual([
      ['due', 'job-1'],
      ['due', null],
    ]);
    expect(result.newJobs.map((d) => d.resourceId)).toEqual(['res-1']);
  });

  it('caps new jobs per pass, oldest due first', () => {
    const s = goodSnapshot(5);
    s.activeEnvironments.set('shop', 100);
    env0(s).lastActivityAt = now - 10 * hour;
    const result = plan(s, now, { ...settings, maxPerPass: 3 });
    expect(checkPlan(s, now, { ...settings, maxPerPass: 3 }, result)).toEqual([]);
    expect(result.newJobs.map((d) => d.resourceId)).toEqual(['res-1', 'res-2', 'res-3']);
    expect(result.decisions.filter((d) => d.reason === 'cap-reached').map((d) => d.resourceId)).toEqual([
      'res-0',
      'res-4',
    ]);
  });

  it('caps new jobs per pass above 1,000 too, oldest due first', () => {
    const count = 1_010;
    const s = goodSnapshot(count);
    s.activeEnvironments.set('shop', 10 * count);
    // Due at different times, in no order: environment i idle since 24 h + (i * 7919 mod count) s.
    for (let i = 0; i < count; i++) {
      s.environments.get(`env-${i}`)!.lastActivityAt = now - 24 * hour - ((i * 7919) % count) * 1000;
    }
    const capped = { ...settings, maxPerPass: 1_003 };
    const result = plan(s, now, capped);
    expect(checkPlan(s, now, capped, result)).toEqual([]);
    expect(result.newJobs).toHaveLength(1_003);
    const idleSince = (resourceId: string) =>
      s.environments.get(resourceId.replace('res-', 'env-'))!.lastActivityAt;
    const chosen = result.newJobs.map((d) => idleSince(d.resourceId));
    expect(chosen).toEqual([...chosen].sort((a, b) => a - b));
    const left = result.decisions.filter((d) => d.reason === 'cap-reached');
    expect(left).toHaveLength(7);
    // Every decision left for the next pass came due after every one chosen.
    expect(Math.min(...left.map((d) => idleSince(d.resourceId)))).toBeGreaterThan(Math.max(...chosen));
  });

  it('opens the breaker when more than half of a project, and at least 3, are due at once', () => {
    const s = goodSnapshot(3);
    s.activeEnvironments.set('shop', 5);
    const { result } = only(s);
    expect(result.breakersOpened).toEqual([{ project: 'shop', dueCount: 3, activeCount: 5 }]);
    expect(result.newJobs).toEqual([]);
    expect(result.decisions.every((d) => d.reason === 'breaker-open')).toBe(true);
    // Half exactly, or fewer than 3: no breaker.
    s.activeEnvironments.set('shop', 6);
    expect(only(s).result.newJobs).toHaveLength(3);
    const two = goodSnapshot(2);
    two.activeEnvironments.set('shop', 2);
    expect(only(two).result.newJobs).toHaveLength(2);
  });

  it('counts only deletions toward the breaker: two deletions and a pause of three open none', () => {
    // Found by the property test: the check counted the pause and called the plan unsafe.
    const s = goodSnapshot(3);
    s.activeEnvironments.set('shop', 3);
    s.environments.get('env-2')!.policy = { afterMs: 8 * hour, action: 'pause', text: '8h' };
    const result = plan(s, now, settings);
    expect(result.breakersOpened).toEqual([]);
    expect(result.decisions.filter((d) => d.kind === 'due').map((d) => d.action)).toEqual([
      'delete',
      'delete',
      'pause',
    ]);
    expect(checkPlan(s, now, settings, result)).toEqual([]);
    // A third deletion opens it.
    s.environments.get('env-2')!.policy = { afterMs: 8 * hour, action: 'delete', text: '8h' };
    expect(plan(s, now, settings).breakersOpened).toEqual([{ project: 'shop', dueCount: 3, activeCount: 3 }]);
  });

  it('clean up now skips only the inactivity wait', () => {
    const s = goodSnapshot();
    env0(s).lastActivityAt = now - 60_000;
    s.enforcedPolicies.clear();
    const result = plan(s, now, settings, { mode: 'now', only: new Set(['env-0']) });
    expect(checkPlan(s, now, settings, result, 'now')).toEqual([]);
    expect(result.newJobs).toHaveLength(1);
    env0(s).protected = true;
    expect(plan(s, now, settings, { mode: 'now' }).newJobs).toEqual([]);
  });

  it('one environment it cannot work out is left out and named, the others planned', () => {
    const s = goodSnapshot(2);
    // A wait past the last representable date: no input reaches this (durations are bounded at
    // the boundaries), which is why it stands for the error nobody foresaw.
    env0(s).policy = { ...env0(s).policy!, afterMs: 9e15 };
    const result = plan(s, now, settings);
    expect(result.unplanned).toEqual([
      expect.objectContaining({ environmentId: 'env-0', project: 'shop', name: 'dev' }),
    ]);
    expect(result.decisions.map((d) => d.environmentId)).toEqual(['env-1']);
    expect(result.newJobs.map((d) => d.resourceId)).toEqual(['res-1']);
  });

  it('clean up now never passes an open breaker', () => {
    const s = goodSnapshot();
    s.openBreakers.add('shop');
    const result = plan(s, now, settings, { mode: 'now', only: new Set(['env-0']) });
    expect(result.newJobs).toEqual([]);
    expect(result.decisions[0]).toMatchObject({ kind: 'blocked', reason: 'breaker-open' });
    expect(result.decisions[0]!.sentence).toContain('tend cleanup breaker reset --project shop');
  });

  it('a namespace another record holds is due only when that record lets it go', () => {
    const s = goodSnapshot();
    const r = s.resources[0]!;
    const bob: NamespaceHolder = {
      environmentId: 'env-bob',
      project: 'shop',
      name: 'dev',
      protected: false,
      keepAliveUntil: null,
      lastActivityAt: now - 60_000,
      afterMs: 8 * hour,
      sessionAt: null,
    };
    const holders = (h: Partial<NamespaceHolder>) =>
      new Map([
        [
          namespaceKey(r.targetKey, r.namespaceName),
          [
            { ...bob, environmentId: 'env-0' },
            { ...bob, ...h },
          ],
        ],
      ]);
    const decide = (h: Partial<NamespaceHolder>) => {
      s.holders = holders(h);
      const result = plan(s, now, settings);
      expect(checkPlan(s, now, settings, result)).toEqual([]);
      return result.decisions[0]!;
    };
    expect(decide({})).toMatchObject({ kind: 'blocked', reason: 'held-elsewhere' });
    expect(decide({}).sentence).toContain('shop/dev holds it too');
    expect(decide({ lastActivityAt: now - 24 * hour, protected: true })).toMatchObject({
      reason: 'protected',
    });
    expect(decide({ lastActivityAt: now - 24 * hour, keepAliveUntil: now + hour })).toMatchObject({
      reason: 'kept-alive',
    });
    expect(decide({ lastActivityAt: now - 24 * hour, sessionAt: now - 1000 })).toMatchObject({
      reason: 'session-running',
    });
    // A holder without a policy of its own is judged by this record's wait.
    expect(decide({ afterMs: null })).toMatchObject({ reason: 'held-elsewhere' });
    expect(decide({ lastActivityAt: now - 24 * hour, afterMs: null }).kind).toBe('due');
    // Idle past its own wait too: due.
    expect(decide({ lastActivityAt: now - 24 * hour }).kind).toBe('due');
  });

  it('clean up now of a namespace another record holds without a policy is blocked (held-elsewhere)', () => {
    const s = goodSnapshot();
    const r = s.resources[0]!;
    // Neither record has a policy: nothing says when the other one is done with the namespace.
    env0(s).policy = null;
    s.enforcedPolicies.clear();
    s.holders = new Map([
      [
        namespaceKey(r.targetKey, r.namespaceName),
        [
          {
            environmentId: 'env-0',
            project: 'shop',
            name: 'dev',
            protected: false,
            keepAliveUntil: null,
            lastActivityAt: now - 30 * 24 * hour,
            afterMs: null,
            sessionAt: null,
          },
          {
            environmentId: 'env-bob',
            project: 'shop',
            name: 'bob',
            protected: false,
            keepAliveUntil: null,
            lastActivityAt: now - 30 * 24 * hour,
            afterMs: null,
            sessionAt: null,
          },
        ],
      ],
    ]);
    const result = plan(s, now, settings, { mode: 'now', only: new Set(['env-0']) });
    expect(result.newJobs).toEqual([]);
    expect(result.decisions[0]).toMatchObject({ kind: 'blocked', reason: 'held-elsewhere' });
    expect(result.decisions[0]!.sentence).toContain('shop/bob holds it too and has no cleanup policy');
    expect(checkPlan(s, now, settings, result, 'now')).toEqual([]);
  });

  it('tells when an earlier decision reads the same, without building sentences', () => {
    // Each pass plans a fresh snapshot.
    const kept = (until: number) => {
      const s = goodSnapshot();
      env0(s).keepAliveUntil = until;
      return s;
    };
    const first = plan(kept(now + hour), now, settings).decisions[0]!;
    expect(plan(kept(now + hour), now, settings).decisions[0]!.sameWordingAs(first)).toBe(true);
    const extended = plan(kept(now + 2 * hour), now, settings).decisions[0]!;
    expect(extended.sameWordingAs(first)).toBe(false);
    expect(extended.sentence).not.toBe(first.sentence);
    // Another day: "10:02 UTC" becomes "2026-03-28 10:02 UTC".
    const s = goodSnapshot();
    const today = plan(s, now, settings).decisions[0]!;
    expect(plan(goodSnapshot(), now + 24 * hour, settings).decisions[0]!.sameWordingAs(today)).toBe(false);
  });

  it('checkPlan notices a plan that breaks an invariant', () => {
    const s = goodSnapshot();
    const result = plan(s, now, settings);
    env0(s).protected = true;
    item0(s).uid = 'other';
    expect(checkPlan(s, now, settings, result)).toEqual([
      'res-0 (shop-u0): protected environment',
      'res-0 (shop-u0): uid differs from the recorded one',
    ]);
  });

  it('property: over random snapshots no due decision breaks an invariant', () => {
    let due = 0;
    const actions = { delete: 0, pause: 0, resume: 0 };
    const rules = { inactivity: 0, schedule: 0 };
    fc.assert(
      fc.property(randomCase, ({ snapshot, now: t, settings: st }) => {
        const result = plan(snapshot, t, st);
        due += result.newJobs.length;
        for (const d of result.newJobs) {
          actions[d.action]++;
          rules[d.rule]++;
        }
        expect(checkPlan(snapshot, t, st, result)).toEqual([]);
        const nowResult = plan(snapshot, t, st, { mode: 'now' });
        expect(checkPlan(snapshot, t, st, nowResult, 'now')).toEqual([]);
      }),
      // One seed, the same cases each run: due decisions are rare in these snapshots (about six
      // resumes in 3,000 cases), so a fresh seed left the coverage below without one about one
      // run in a hundred. The invariants were checked over fresh seeds in earlier runs.
      { numRuns: 3000, seed: 17 },
    );
    // The generator reaches due decisions, not only blocked ones: of every action and rule.
    expect(due).toBeGreaterThan(0);
    expect(actions.delete).toBeGreaterThan(0);
    expect(actions.pause).toBeGreaterThan(0);
    expect(actions.resume).toBeGreaterThan(0);
    expect(rules.schedule).toBeGreaterThan(0);
    // 6,000 plans of CPU work: on a machine shared with other jobs, more than the default minute.
  }, 300_000);
});
