/**
 * An independent check of a plan against the cleanup invariants (used by the property test and
 * the benchmark): it re-derives from the snapshot, without the planner's rules, that nothing
 * planned breaks one.
 */
import { namespaceProtector } from '../../../cleanup/protection.js';
import { isAwake, lastTransition } from '../../../cleanup/schedule.js';
import {
  asleepGraceMs,
  breakerMinimum,
  breakerShare,
  policyKey,
  sessionLiveMs,
  staleIntervals,
  type PlanMode,
  type PlannerSettings,
  type PlanResult,
  type PlanSnapshot,
} from './types.js';

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
  const isProtectedName = namespaceProtector({
    systemNamespace: settings.systemNamespace,
    patterns: settings.protectPatterns,
  });
  const stale = now - staleIntervals * settings.intervalMs;
  const opened = new Set(result.breakersOpened.map((b) => b.project));
  const resources = new Map(snapshot.resources.map((x) => [x.id, x]));
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
  if (mode === 'policy' && result.newJobs.length > settings.maxPerPass) {
    violations.push(`${result.newJobs.length} new jobs exceed the cap of ${settings.maxPerPass}`);
  }
  const due = result.decisions.filter((d) => d.kind === 'due');
  for (const d of new Set([...due, ...result.newJobs])) {
    const fail = (what: string) => violations.push(`${d.resourceId} (${d.namespaceName}): ${what}`);
    const env = snapshot.environments.get(d.environmentId);
    const r = resources.get(d.resourceId);
    if (!env || !r) {
      fail('unknown environment or resource');
      continue;
    }
    if (r.role === 'system') fail('system role');
    if (r.ownership !== 'owned') fail(`ownership ${r.ownership}`);
    if (!r.namespaceUid) fail('no recorded uid');
    if (isProtectedName(r.namespaceName)) fail('protected name');
    if (env.protected) fail('protected environment');
    if (env.keepAliveUntil !== null && env.keepAliveUntil > now) fail('kept alive');
    const session = snapshot.runningSessions.get(env.id);
    if (session !== undefined && now - session < sessionLiveMs) fail('session running');
    if (snapshot.halted) fail('halted');
    const seen = snapshot.executorsLastSeen.get(r.targetKey);
    if (seen === undefined || seen < stale) fail('no live executor');
    const inv = snapshot.inventories.get(r.targetKey);
    if (!inv || !inv.complete || inv.lastCompleteAt === null || inv.lastCompleteAt < stale) {
      fail('no complete recent inventory');
    }
    const item = r.item;
    if (!item) fail('not in the inventory');
    else {
      if (!item.managedByTend) fail('no managed-by label');
      if (item.project !== env.project || item.environment !== env.name) fail('annotations do not match');
      if (item.uid !== r.namespaceUid) fail('uid differs from the recorded one');
      if (item.role === 'system') fail('namespace role system');
      if (item.adopted) fail('namespace adopted');
    }
    if (mode === 'policy') {
      if (!env.policy) {
        fail('no policy');
        continue;
      }
      const enforced = snapshot.enforcedPolicies.get(policyKey(env.project, env.name));
      const activity = activityOf.get(env.id) ?? env.lastActivityAt;
      // Idle: no activity within the policy's wait — or its pull request closed (or merged)
      // longer than afterClose ago.
      const pr = env.pullRequest;
      const closedDue =
        pr && pr.closedAt !== null && (pr.state === 'closed' || pr.state === 'merged')
          ? pr.closedAt + (env.policy.afterCloseMs ?? 0)
          : Infinity;
      const idle = activity + env.policy.afterMs <= now || closedDue <= now;
      const schedule = env.policy.schedule;
      if (d.action === 'resume') {
        // Only what the schedule paused, once it is awake again.
        if (env.state !== 'paused') fail('resume of an environment that is not paused');
        if (env.pausedBy !== 'schedule') fail('resume of an environment the schedule did not pause');
        if (!schedule || !isAwake(schedule, now)) fail('resume while the schedule is asleep');
        continue;
      }
      if (!enforced || env.policy.afterMs < enforced.afterMs) fail('policy not enforced');
      if (d.action === 'delete') {
        if (env.policy.action !== 'delete') fail('delete without a delete policy');
        if (enforced && enforced.action !== 'delete') fail('delete not enforced');
        if (snapshot.openBreakers.has(env.project) || opened.has(env.project)) fail('breaker open');
        // Idle: no activity of any source within the policy's wait.
        if (!idle) fail('activity within the policy wait');
      } else {
        if (env.state === 'paused') fail('pause of an environment already paused');
        // Idle past the wait (a pause policy), or asleep by the schedule and not used since it slept.
        const bySchedule =
          schedule !== undefined &&
          schedule !== null &&
          !isAwake(schedule, now) &&
          activity <= Math.max(lastTransition(schedule, now)?.at ?? 0, now - asleepGraceMs);
        if (!(bySchedule || (idle && env.policy.action === 'pause'))) {
          fail('pause while awake and used within the policy wait');
        }
      }
    }
  }
  if (mode === 'policy') {
    // A project with too many deletions due at once must have its breaker opened, not its jobs
    // planned. Pauses do not count: one is undone exactly, and a schedule pauses a whole project.
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
        violations.push(
          `${envs.size} of ${active} environments of ${project} due without the breaker opening`,
        );
      }
    }
  }
  for (const b of result.breakersOpened) {
    const active = snapshot.activeEnvironments.get(b.project) ?? 0;
    if (!(b.dueCount >= breakerMinimum && b.dueCount > breakerShare * active)) {
      violations.push(`breaker of ${b.project} opened without cause`);
    }
  }
  return violations;
}
