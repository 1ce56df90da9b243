/**
 * An independent check of a plan against the cleanup invariants (used by the property test and
 * the benchmark): it re-derives from the snapshot, without the planner's rules, that nothing
 * planned breaks one.
 */
import picomatch from 'picomatch';
import { isAwake, lastTransition } from '../../../cleanup/schedule.js';
import { disagrees } from '../clock.js';
import {
  asleepGraceMs,
  breakerMinimum,
  breakerShare,
  namespaceKey,
  policyKey,
  sessionLiveMs,
  staleIntervals,
  type Decision,
  type PlanMode,
  type PlannerSettings,
  type PlanResult,
  type PlanSnapshot,
  type SnapshotEnvironment,
  type SnapshotResource,
} from './types.js';

/** What the checks read besides the decision: the snapshot and what is derived from it once. */
interface Checked {
  snapshot: PlanSnapshot;
  now: number;
  mode: PlanMode;
  isProtectedName: (name: string) => boolean;
  /** Executors and inventories older than this are stale. */
  stale: number;
  /** Projects whose breaker this pass opened. */
  opened: ReadonlySet<string>;
  /** Each environment's last activity, of any source. */
  activityOf: ReadonlyMap<string, number>;
}

/** One check of a due decision; `fail` records a violation. */
type Check = (
  c: Checked,
  d: Decision,
  env: SnapshotEnvironment,
  r: SnapshotResource,
  fail: (what: string) => void,
) => void;

/**
 * Checks a plan against the invariants, independently of how `plan` decides: every `due`
 * decision (and every new job) must have ownership proof, not be system, adopted, protected or
 * protected by name, be idle past an enforced policy, have no running session or keep-alive,
 * a live executor and a complete recent inventory that shows the recorded uid; no new jobs
 * while halted or for a project whose breaker is (or just got) open; at most maxPerPass new
 * jobs. Returns the violations (empty: all kept). Used by the property test and the benchmark.
 */
export function checkPlan(
  snapshot: PlanSnapshot,
  now: number,
  settings: PlannerSettings,
  result: PlanResult,
  mode: PlanMode = 'policy',
): string[] {
  const violations: string[] = [];
  const c: Checked = {
    snapshot,
    now,
    mode,
    isProtectedName: protectedNames(settings),
    stale: now - staleIntervals * settings.intervalMs,
    opened: new Set(result.breakersOpened.map((b) => b.project)),
    activityOf: activityByEnvironment(snapshot),
  };
  if (mode === 'policy' && result.newJobs.length > settings.maxPerPass) {
    violations.push(`${result.newJobs.length} new jobs exceed the cap of ${settings.maxPerPass}`);
  }
  const checks: Check[] = [ownershipAndProtection, nothingHoldsIt, heldByNoOther, targetKnown];
  if (mode === 'policy') checks.push(policyMakesItDue);
  const resources = new Map(snapshot.resources.map((x) => [x.id, x]));
  const due = result.decisions.filter((d) => d.kind === 'due');
  for (const d of new Set([...due, ...result.newJobs])) {
    const fail = (what: string) => violations.push(`${d.resourceId} (${d.namespaceName}): ${what}`);
    const env = snapshot.environments.get(d.environmentId);
    const r = resources.get(d.resourceId);
    if (!env || !r) {
      fail('unknown environment or resource');
      continue;
    }
    for (const check of checks) check(c, d, env, r, fail);
  }
  if (mode === 'policy') breakerOpenedWhenDue(snapshot, due, violations);
  breakersOpenedWithCause(snapshot, result, violations);
  return violations;
}

/** Its own list of names never deleted, not the planner's protector: a bug there must show here. */
function protectedNames(settings: PlannerSettings): (name: string) => boolean {
  const neverDeleted = new Set([
    'default',
    'kube-system',
    'kube-public',
    'kube-node-lease',
    settings.systemNamespace,
  ]);
  const protectedGlobs = settings.protectPatterns.map((glob) => picomatch(glob, { dot: true }));
  return (name) =>
    neverDeleted.has(name) || name.startsWith('kube-') || protectedGlobs.some((match) => match(name));
}

function activityByEnvironment(snapshot: PlanSnapshot): Map<string, number> {
  const activityOf = new Map<string, number>();
  for (const x of snapshot.resources) {
    const env = snapshot.environments.get(x.environmentId);
    if (!env) continue;
    const item = x.item;
    activityOf.set(
      env.id,
      Math.max(
        activityOf.get(env.id) ?? env.lastActivityAt,
        x.lastActivityAt ?? 0,
        item?.lastActivityAt ?? 0,
      ),
    );
  }
  return activityOf;
}

/** Owned with proof, not system or adopted, protected neither by name nor as an environment. */
const ownershipAndProtection: Check = (c, _d, env, r, fail) => {
  if (r.role === 'system') fail('system role');
  if (r.ownership !== 'owned') fail(`ownership ${r.ownership}`);
  if (!r.namespaceUid) fail('no recorded uid');
  if (c.isProtectedName(r.namespaceName)) fail('protected name');
  if (env.protected) fail('protected environment');
};

/** No keep-alive, no running session, no halt, no open breaker for a delete. */
const nothingHoldsIt: Check = ({ snapshot, now }, d, env, _r, fail) => {
  if (env.keepAliveUntil !== null && env.keepAliveUntil > now) fail('kept alive');
  const session = snapshot.runningSessions.get(env.id);
  if (session !== undefined && now - session < sessionLiveMs) fail('session running');
  if (snapshot.halted) fail('halted');
  if (d.action === 'delete' && snapshot.openBreakers.has(env.project)) fail('breaker open');
};

/** A namespace several records hold is due only when none of the others keeps it. */
const heldByNoOther: Check = ({ snapshot, now }, d, env, r, fail) => {
  if (d.action === 'resume') return;
  for (const h of snapshot.holders?.get(namespaceKey(r.targetKey, r.namespaceName)) ?? []) {
    if (h.environmentId === env.id) continue;
    const other = `held by ${h.project}/${h.name}`;
    if (h.protected) fail(`${other}, protected`);
    if (h.keepAliveUntil !== null && h.keepAliveUntil > now) fail(`${other}, kept alive`);
    if (h.sessionAt !== null && now - h.sessionAt < sessionLiveMs) fail(`${other}, session running`);
    const wait = h.afterMs ?? env.policy?.afterMs;
    if (wait === undefined) fail(`${other}, without a policy`);
    else if (h.lastActivityAt + wait > now) fail(`${other}, used within its wait`);
  }
};

/** A live executor, and a complete recent inventory that lists the namespace as tend's. */
const targetKnown: Check = ({ snapshot, stale }, _d, env, r, fail) => {
  const seen = snapshot.executorsLastSeen.get(r.targetKey);
  if (seen === undefined || seen < stale) fail('no live executor');
  const inv = snapshot.inventories.get(r.targetKey);
  if (!inv || !inv.complete || inv.lastCompleteAt === null || inv.lastCompleteAt < stale) {
    fail('no complete recent inventory');
  } else if (disagrees(inv.clockOffsetMs)) fail("the target's clock disagrees with the server's");
  const item = r.item;
  if (!item) {
    fail('not in the inventory');
    return;
  }
  if (!item.managedByTend) fail('no managed-by label');
  if (item.project !== env.project || item.environment !== env.name) fail('annotations do not match');
  if (item.uid !== r.namespaceUid) fail('uid differs from the recorded one');
  if (item.role === 'system') fail('namespace role system');
  if (item.adopted) fail('namespace adopted');
};

/** Policy mode: an enforced policy makes the action due (idle past its wait, or its schedule). */
const policyMakesItDue: Check = (c, d, env, _r, fail) => {
  const { snapshot, now } = c;
  const policy = env.policy;
  if (!policy) {
    fail('no policy');
    return;
  }
  const schedule = policy.schedule;
  if (d.action === 'resume') {
    // Only what the schedule paused, once it is awake again.
    if (env.state !== 'paused') fail('resume of an environment that is not paused');
    if (env.pausedBy !== 'schedule') fail('resume of an environment the schedule did not pause');
    if (!schedule || !isAwake(schedule, now)) fail('resume while the schedule is asleep');
    return;
  }
  const enforced = snapshot.enforcedPolicies.get(policyKey(env.project, env.name));
  if (!enforced || policy.afterMs < enforced.afterMs) fail('policy not enforced');
  // Every rule that makes it due must have been enforced as it is (or looser).
  if (policy.afterCloseMs !== undefined && (enforced?.afterCloseMs ?? Infinity) > policy.afterCloseMs) {
    fail('afterClose not enforced');
  }
  if (
    schedule &&
    enforced?.schedule !==
      JSON.stringify([schedule.sleepAt, schedule.wakeAt, [...schedule.weekdays].sort(), schedule.timeZone])
  ) {
    fail('schedule not enforced');
  }
  const activity = c.activityOf.get(env.id) ?? env.lastActivityAt;
  // Idle: no activity within the policy's wait — or its pull request closed (or merged)
  // longer than afterClose ago.
  const pr = env.pullRequest;
  const closedDue =
    pr && pr.closedAt !== null && (pr.state === 'closed' || pr.state === 'merged')
      ? pr.closedAt + (policy.afterCloseMs ?? 0)
      : Infinity;
  const idle = activity + policy.afterMs <= now || closedDue <= now;
  if (d.action === 'delete') {
    if (policy.action !== 'delete') fail('delete without a delete policy');
    if (enforced && enforced.action !== 'delete') fail('delete not enforced');
    if (c.opened.has(env.project)) fail('breaker opened this pass');
    // Idle: no activity of any source within the policy's wait.
    if (!idle) fail('activity within the policy wait');
    return;
  }
  if (env.state === 'paused') fail('pause of an environment already paused');
  // Idle past the wait (a pause policy), or asleep by the schedule and not used since it slept.
  const bySchedule =
    schedule !== undefined &&
    schedule !== null &&
    !isAwake(schedule, now) &&
    activity <= Math.max(lastTransition(schedule, now)?.at ?? 0, now - asleepGraceMs);
  if (!(bySchedule || (idle && policy.action === 'pause'))) {
    fail('pause while awake and used within the policy wait');
  }
};

/**
 * A project with too many deletions due at once must have its breaker opened, not its jobs
 * planned. Pauses do not count: one is undone exactly, and a schedule pauses a whole project.
 */
function breakerOpenedWhenDue(snapshot: PlanSnapshot, due: readonly Decision[], violations: string[]): void {
  const dueEnvs = new Map<string, Set<string>>();
  for (const d of due) {
    if (d.action !== 'delete') continue;
    let set = dueEnvs.get(d.project);
    if (!set) dueEnvs.set(d.project, (set = new Set()));
    set.add(d.environmentId);
  }
  for (const [project, envs] of dueEnvs) {
    const active = snapshot.activeEnvironments.get(project) ?? 0;
    if (envs.size >= breakerMinimum && envs.size > breakerShare * active) {
      violations.push(`${envs.size} of ${active} environments of ${project} due without the breaker opening`);
    }
  }
}

/** A breaker opened this pass only for a project with too many deletions due at once. */
function breakersOpenedWithCause(snapshot: PlanSnapshot, result: PlanResult, violations: string[]): void {
  for (const b of result.breakersOpened) {
    const active = snapshot.activeEnvironments.get(b.project) ?? 0;
    if (!(b.dueCount >= breakerMinimum && b.dueCount > breakerShare * active)) {
      violations.push(`breaker of ${b.project} opened without cause`);
    }
  }
}
