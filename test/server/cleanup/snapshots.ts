/**
 * Planner snapshots for tests and the benchmark: a good one where everything is due (to mutate
 * one thing at a time), and a fast-check arbitrary of random snapshots (ownership, roles, uids,
 * labels, activity, keep-alive, protection, running sessions, complete/partial/stale/missing
 * inventories, dead executors, clocks around DST changes).
 */
import fc from 'fast-check';
import type { Schedule } from '../../../src/cleanup/schedule.js';
import {
  policyKey,
  type PlanSnapshot,
  type PlannerSettings,
  type SnapshotEnvironment,
  type SnapshotInventoryItem,
  type SnapshotResource,
} from '../../../src/server/cleanup/planner/types.js';

export const settings: PlannerSettings = {
  intervalMs: 30_000,
  maxPerPass: 10,
  systemNamespace: 'tend-system',
  protectPatterns: ['prod-*'],
};

const hour = 3_600_000;
export const now = Date.parse('2026-03-29T01:30:00.000Z');

/** One environment with one namespace, idle for a day under an enforced 8h policy: due. */
export function goodSnapshot(count = 1, project = 'shop'): PlanSnapshot {
  const snapshot: PlanSnapshot = {
    environments: new Map(),
    resources: [],
    activeEnvironments: new Map([[project, count * 10]]),
    inventories: new Map([
      ['kubernetes/c1', { receivedAt: now - 1000, complete: true, lastCompleteAt: now - 1000 }],
    ]),
    executorsLastSeen: new Map([['kubernetes/c1', now - 1000]]),
    runningSessions: new Map(),
    openJobs: new Map(),
    enforcedPolicies: new Map([[policyKey(project, 'dev'), { afterMs: 8 * hour, action: 'delete' }]]),
    openBreakers: new Set(),
    halted: false,
  };
  for (let i = 0; i < count; i++) {
    const env: SnapshotEnvironment = {
      id: `env-${i}`,
      project,
      name: 'dev',
      namespace: `${project}-u${i}`,
      protected: false,
      keepAliveUntil: null,
      policy: { afterMs: 8 * hour, action: 'delete', text: '8h' },
      lastActivityAt: now - 24 * hour,
      lastActivityCommand: 'build',
      lastActivityUser: 'alice',
      lastActivityType: 'sessionStarted',
    };
    snapshot.environments.set(env.id, env);
    const r: SnapshotResource = {
      id: `res-${i}`,
      environmentId: env.id,
      plugin: 'kubernetes',
      targetKey: 'kubernetes/c1',
      namespaceName: env.namespace,
      namespaceUid: `uid-${i}`,
      role: 'build',
      ownership: 'owned',
      lastActivityAt: null,
      item: {
        uid: `uid-${i}`,
        managedByTend: true,
        project,
        environment: 'dev',
        role: 'build',
        adopted: false,
        lastActivityAt: null,
      },
    };
    snapshot.resources.push(r);
  }
  return snapshot;
}

const targets = ['kubernetes/c1', 'kubernetes/c2', 'local/h1'] as const;
const names = ['shop-a', 'shop-b', 'shop-c', 'kube-system', 'default', 'tend-system', 'prod-x', 'pr-1'];
const uids = ['u1', 'u2', 'u3'];
const durations = [60_000, hour, 8 * hour, 24 * hour];
/** Instants around DST changes (EU and US, spring and autumn) and a plain day. */
const clocks = [
  '2026-03-29T01:00:00Z',
  '2026-10-25T01:00:00Z',
  '2026-03-08T07:00:00Z',
  '2026-11-01T06:00:00Z',
  '2026-06-15T12:00:00Z',
].map(Date.parse);

/** Schedules in both zones, with wall times inside the spring-forward gap and the autumn overlap. */
const schedules: Schedule[] = [
  {
    sleepAt: '20:00',
    wakeAt: '08:00',
    weekdays: ['mon', 'tue', 'wed', 'thu', 'fri'],
    timeZone: 'Europe/Berlin',
  },
  { sleepAt: '02:30', wakeAt: '02:15', weekdays: ['sun'], timeZone: 'Europe/Berlin' },
  { sleepAt: '01:30', wakeAt: '02:30', weekdays: ['sat', 'sun', 'mon'], timeZone: 'America/New_York' },
  { sleepAt: '06:00', wakeAt: '22:00', weekdays: ['sat', 'sun'], timeZone: 'America/New_York' },
];

export interface RandomCase {
  snapshot: PlanSnapshot;
  now: number;
  settings: PlannerSettings;
}

const maybe = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: null });
/** Null in about 1 case of `oneIn`: the invariants get tested on both sides, mostly on the good one. */
const rarelyNull = <T>(arb: fc.Arbitrary<T>, oneIn = 10) => fc.option(arb, { nil: null, freq: oneIn });
/** Non-null in about 1 case of `oneIn`. */
const rarely = <T>(arb: fc.Arbitrary<T>, oneIn = 6) =>
  fc.oneof({ weight: oneIn - 1, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: arb });
/** True in about `percent` % of cases. */
const chance = (percent: number) => fc.integer({ min: 0, max: 99 }).map((x) => x < percent);
/** A time relative to `now`: up to 3 days back, sometimes ahead. */
const offset = fc.integer({ min: -3 * 24 * hour, max: 2 * hour });
/** Activity: mostly long ago. */
const activityOffset = fc.oneof(
  { weight: 3, arbitrary: fc.integer({ min: -3 * 24 * hour, max: -hour }) },
  { weight: 1, arbitrary: offset },
);

export const randomCase: fc.Arbitrary<RandomCase> = fc
  .record({
    clock: fc.constantFrom(...clocks),
    shift: fc.integer({ min: -3 * hour, max: 3 * hour }),
    maxPerPass: fc.integer({ min: 0, max: 5 }),
    halted: chance(5),
    envs: fc.array(
      fc.record({
        project: fc.constantFrom('p1', 'p2'),
        name: fc.constantFrom('dev', 'pr'),
        policy: maybe(
          fc.record({ afterMs: fc.constantFrom(...durations), action: fc.constantFrom('delete', 'pause') }),
        ),
        protected: chance(10),
        schedule: rarely(fc.constantFrom(...schedules), 3),
        pausedBy: fc.constantFrom(null, null, null, 'schedule' as const, 'inactivity' as const),
        keepAlive: rarely(offset),
        activity: activityOffset,
        session: rarely(fc.integer({ min: -10 * 60_000, max: 0 })),
        // The pull request, sometimes closed or merged (with afterClose), sometimes reopened.
        pullRequest: rarely(
          fc.record({
            state: fc.constantFrom('open', 'closed', 'merged', null),
            closedAt: offset,
            afterCloseMs: fc.constantFrom(undefined, 0, 60_000, hour),
          }),
          3,
        ),
        warnBeforeMs: fc.constantFrom(undefined, 0, hour, 24 * hour),
        resources: fc.array(
          fc.record({
            target: fc.constantFrom(...targets),
            name: fc.oneof(
              { weight: 4, arbitrary: fc.constantFrom('shop-a', 'shop-b', 'shop-c', 'pr-1') },
              { weight: 1, arbitrary: fc.constantFrom(...names) },
            ),
            uid: rarelyNull(fc.constantFrom(...uids)),
            role: fc.constantFrom('app', 'build', 'app', 'build', 'system'),
            ownership: fc.constantFrom('owned', 'owned', 'owned', 'owned', 'adopted', 'unknown'),
            activity: maybe(offset),
            openJob: chance(10),
            item: rarelyNull(
              fc.record({
                sameUid: chance(80),
                uid: fc.constantFrom(...uids),
                managedByTend: chance(90),
                annotationsMatch: chance(90),
                role: maybe(fc.constantFrom('app', 'build', 'system')),
                adopted: chance(10),
                activity: maybe(offset),
              }),
            ),
          }),
          { maxLength: 3 },
        ),
      }),
      { maxLength: 8 },
    ),
    inventories: fc.array(
      rarelyNull(
        fc.record({
          age: fc.integer({ min: 0, max: 5 * 30_000 }),
          complete: chance(85),
          completeAge: maybe(fc.integer({ min: 0, max: 5 * 30_000 })),
        }),
      ),
      { minLength: 3, maxLength: 3 },
    ),
    executors: fc.array(rarelyNull(fc.integer({ min: 0, max: 5 * 30_000 })), { minLength: 3, maxLength: 3 }),
    enforced: fc.array(
      rarelyNull(
        fc.record({ afterMs: fc.constantFrom(...durations), action: fc.constantFrom('delete', 'pause') }),
      ),
      { minLength: 4, maxLength: 4 },
    ),
    breakers: fc.oneof(
      { weight: 4, arbitrary: fc.constant<string[]>([]) },
      { weight: 1, arbitrary: fc.subarray(['p1', 'p2']) },
    ),
    extraActive: fc.integer({ min: 0, max: 10 }),
  })
  .map((g) => {
    const t = g.clock + g.shift;
    const snapshot: PlanSnapshot = {
      environments: new Map(),
      resources: [],
      activeEnvironments: new Map(),
      inventories: new Map(),
      executorsLastSeen: new Map(),
      runningSessions: new Map(),
      openJobs: new Map(),
      enforcedPolicies: new Map(),
      openBreakers: new Set(g.breakers),
      halted: g.halted,
    };
    targets.forEach((target, i) => {
      const inv = g.inventories[i];
      if (inv) {
        snapshot.inventories.set(target, {
          receivedAt: t - inv.age,
          complete: inv.complete,
          lastCompleteAt: inv.complete ? t - inv.age : inv.completeAge === null ? null : t - inv.completeAge,
        });
      }
      const seen = g.executors[i];
      if (seen !== null && seen !== undefined) snapshot.executorsLastSeen.set(target, t - seen);
    });
    [
      ['p1', 'dev'],
      ['p1', 'pr'],
      ['p2', 'dev'],
      ['p2', 'pr'],
    ].forEach(([p, n], i) => {
      const e = g.enforced[i];
      if (e) snapshot.enforcedPolicies.set(policyKey(p!, n!), e);
    });
    const items = new Map<string, SnapshotInventoryItem>();
    g.envs.forEach((e, i) => {
      const id = `env-${i}`;
      snapshot.activeEnvironments.set(
        e.project,
        (snapshot.activeEnvironments.get(e.project) ?? g.extraActive) + 1,
      );
      if (e.session !== null) snapshot.runningSessions.set(id, t + e.session);
      if (!e.policy) return;
      snapshot.environments.set(id, {
        id,
        project: e.project,
        name: e.name,
        namespace: e.resources[0]?.name ?? 'ns',
        protected: e.protected,
        keepAliveUntil: e.keepAlive === null ? null : t + e.keepAlive,
        policy: {
          afterMs: e.policy.afterMs,
          action: e.policy.action as 'delete' | 'pause',
          text: `${e.policy.afterMs / 60_000}m`,
          schedule: e.schedule,
          ...(e.warnBeforeMs !== undefined ? { warnBeforeMs: e.warnBeforeMs } : {}),
          ...(e.pullRequest?.afterCloseMs !== undefined ? { afterCloseMs: e.pullRequest.afterCloseMs } : {}),
        },
        state: e.pausedBy ? 'paused' : 'active',
        pausedBy: e.pausedBy,
        pullRequest: e.pullRequest
          ? {
              repository: 'acme/shop',
              number: i + 1,
              state: e.pullRequest.state,
              closedAt: e.pullRequest.state === 'open' ? null : t + e.pullRequest.closedAt,
            }
          : null,
        lastActivityAt: t + e.activity,
        lastActivityCommand: 'build',
        lastActivityUser: 'alice',
        lastActivityType: 'sessionStarted',
      });
      e.resources.forEach((r, j) => {
        const rid = `res-${i}-${j}`;
        // One namespace per target and name: resources naming the same one see the same item.
        const key = `${r.target}/${r.name}`;
        if (r.item && !items.has(key)) {
          items.set(key, {
            uid: r.item.sameUid && r.uid !== null ? r.uid : r.item.uid,
            managedByTend: r.item.managedByTend,
            project: r.item.annotationsMatch ? e.project : 'other',
            environment: r.item.annotationsMatch ? e.name : 'other',
            role: r.item.role,
            adopted: r.item.adopted,
            lastActivityAt: r.item.activity === null ? null : t + r.item.activity,
          });
        }
        snapshot.resources.push({
          id: rid,
          environmentId: id,
          plugin: r.target.startsWith('local/') ? 'exec' : 'kubernetes',
          targetKey: r.target,
          namespaceName: r.name,
          namespaceUid: r.uid,
          role: r.role as SnapshotResource['role'],
          ownership: r.ownership as SnapshotResource['ownership'],
          lastActivityAt: r.activity === null ? null : t + r.activity,
          item: items.get(key) ?? null,
        });
        if (r.openJob) snapshot.openJobs.set(rid, { id: `job-${rid}`, state: 'planned' });
      });
    });
    return { snapshot, now: t, settings: { ...settings, maxPerPass: g.maxPerPass } };
  });
