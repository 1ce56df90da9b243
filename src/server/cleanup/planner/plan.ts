/**
 * The cleanup planner: a pure function from a snapshot of the registry (environments,
 * resources, policies, sessions, protection, keep-alive, open jobs, executors, inventories)
 * and the clock to one decision per cleanable resource — `due`, `scheduled` (with its due
 * time), `dry-run` or `blocked` (with a reason code) — each with a sentence a person
 * understands. No I/O: the planning pass loads the snapshot and stores the result.
 *
 * Activity is the later of the registry's (server receive time) and the namespace's
 * `tend.dev/last-activity` from the inventory. Unknown is not idle: without a live executor
 * and a complete, recent inventory of the target, nothing is due there.
 *
 * A policy has two rules (docs/cleanup.md#schedules): the inactivity wait with its action
 * (delete or pause), and an optional working-hours schedule that pauses outside its hours and
 * resumes at wakeAt what it paused. Each decision carries its action and the rule that decided.
 * The rules for one environment are in rules.ts; this file runs them over every environment,
 * then the pass-wide steps: the per-project circuit breaker and the per-pass cap.
 */
import { namespaceProtector } from '../../../cleanup/protection.js';
import type { PlannedAction } from '../../../cleanup/protocol.js';
import { isAwake, lastTransition, nextTransition, type Schedule } from '../../../cleanup/schedule.js';
import { changesSince, reusable, sharedFacts, type Changes, type PlanMemo } from './memo.js';
import { evaluate, Role, type Context, type ScheduleFacts } from './rules.js';
import {
  breakerMinimum,
  breakerShare,
  staleIntervals,
  type Decision,
  type PlanMode,
  type PlannerSettings,
  type PlanResult,
  type PlanSnapshot,
  type SnapshotResource,
} from './types.js';
import type { Outcome, PlannedDecision } from './wording.js';

/**
 * Plans every resource of the snapshot's environments. `only` restricts to some environments;
 * mode `now` skips the inactivity wait and the policy (clean up now). `memo` (policy mode, all
 * environments) carries evaluations from the last pass to this one (see PlanMemo).
 */
/** The largest epoch ms a Date (and so the database) holds. */
const maxInstant = 8.64e15;

export function plan(
  snapshot: PlanSnapshot,
  now: number,
  settings: PlannerSettings,
  options: { mode?: PlanMode; only?: ReadonlySet<string>; action?: PlannedAction; memo?: PlanMemo } = {},
): PlanResult {
  const mode = options.mode ?? 'policy';
  const ctx: Context = {
    snapshot,
    settings,
    now,
    today: new Date(now).toISOString().slice(0, 10),
    staleBefore: now - staleIntervals * settings.intervalMs,
    protectedName: namespaceProtector({
      systemNamespace: settings.systemNamespace,
      patterns: settings.protectPatterns,
    }),
    supported: new Set(settings.supportedActions ?? ['delete', 'pause', 'resume']),
    mode,
    targetBlocks: new Map(),
  };
  const memo = mode === 'policy' && !options.only ? options.memo : undefined;
  let changes: Changes | undefined;
  if (memo) {
    if (memo.settings !== settings) {
      memo.entries.clear();
      memo.last = undefined;
      memo.settings = settings;
    }
    const facts = sharedFacts(ctx);
    changes = changesSince(memo.last, facts);
    memo.last = facts;
    if (changes.all) memo.entries.clear();
    memo.pass++;
    memo.reused = 0;
  }

  let byEnvironment = snapshot.byEnvironment;
  if (!byEnvironment || options.only) {
    const grouped = new Map<string, SnapshotResource[]>();
    for (const r of snapshot.resources) {
      if (options.only && !options.only.has(r.environmentId)) continue;
      let list = grouped.get(r.environmentId);
      if (!list) grouped.set(r.environmentId, (list = []));
      list.push(r);
    }
    byEnvironment = grouped;
  }

  // Schedules are shared by many environments: each one's state at `now` is worked out once a pass.
  const scheduleCache = new Map<string, ScheduleFacts>();
  const scheduleFacts = (schedule: Schedule): ScheduleFacts => {
    const key = `${schedule.timeZone}|${schedule.wakeAt}|${schedule.sleepAt}|${schedule.weekdays.join(',')}`;
    let facts = scheduleCache.get(key);
    if (!facts) {
      const awake = isAwake(schedule, now);
      facts = { awake, last: lastTransition(schedule, now)?.at, next: nextTransition(schedule, now)?.at };
      scheduleCache.set(key, facts);
    }
    return facts;
  };
  const decisions: PlannedDecision[] = [];
  // Would-be-due delete decisions per project, before the breaker and the cap.
  const dueByProject = new Map<string, { envs: Set<string>; decisions: PlannedDecision[] }>();
  const candidates: PlannedDecision[] = [];
  /** The candidates, each with its place in `decisions`. */
  const pending: PlannedDecision[] = [];
  const unplanned: PlanResult['unplanned'] = [];

  for (const [envId, resources] of byEnvironment) {
    const env = snapshot.environments.get(envId);
    if (!env || (mode === 'policy' && !env.policy) || resources.length === 0) continue;
    const entry = memo?.entries.get(envId);
    let evaluation = memo ? reusable(ctx, changes!, entry, env, resources) : undefined;
    if (evaluation) {
      entry!.pass = memo!.pass;
      memo!.reused++;
    } else {
      try {
        evaluation = evaluate(ctx, env, resources, scheduleFacts, options.action);
        for (const d of evaluation.decisions) {
          for (const t of [d.dueAt, d.lastActivityAt, d.warnAt ?? 0]) {
            if (!(Math.abs(t) <= maxInstant))
              throw new RangeError(`an instant out of range (${t}) in its decision`);
          }
        }
      } catch (error) {
        // One environment the planner cannot work out (a value no check foresaw) is left out
        // of this pass, not every other one with it: nothing of it is planned, and it is said.
        unplanned.push({
          environmentId: env.id,
          project: env.project,
          name: env.name,
          message: error instanceof Error ? error.message : String(error),
        });
        continue;
      }
      if (memo) memo.entries.set(envId, { ...evaluation, env, resources, pass: memo.pass });
    }
    const { roles } = evaluation;
    for (let i = 0; i < roles.length; i++) {
      const role = roles[i]!;
      const decision = evaluation.decisions[i]!;
      decisions.push(decision);
      if (role === Role.Settled) continue;
      // Settled below, after every environment is seen (its place noted to put the result in).
      decision.outcome = undefined;
      decision.at = decisions.length - 1;
      pending.push(decision);
      if (role === Role.OtherCandidate) {
        candidates.push(decision);
        continue;
      }
      let entry = dueByProject.get(env.project);
      if (!entry) dueByProject.set(env.project, (entry = { envs: new Set(), decisions: [] }));
      entry.envs.add(env.id);
      entry.decisions.push(decision);
    }
  }
  if (memo) {
    for (const [id, entry] of memo.entries) if (entry.pass !== memo.pass) memo.entries.delete(id);
  }

  // The pass-wide steps decide an outcome for each candidate (none: it stays due).
  const breakersOpened: PlanResult['breakersOpened'] = [];
  for (const [project, entry] of dueByProject) {
    const active = snapshot.activeEnvironments.get(project) ?? entry.envs.size;
    if (entry.envs.size >= breakerMinimum && entry.envs.size > breakerShare * active) {
      breakersOpened.push({ project, dueCount: entry.envs.size, activeCount: active });
      const outcome: Outcome = { wording: 'breaker-opened', count: entry.envs.size, total: active };
      for (const d of entry.decisions) d.outcome = outcome;
    } else {
      for (const d of entry.decisions) candidates.push(d);
    }
  }
  if (mode === 'now') {
    for (const [at, d] of decisions.entries()) {
      if (d.kind !== 'due') continue;
      candidates.push(d);
      d.outcome = undefined;
      d.at = at;
      pending.push(d);
    }
  }

  // Oldest due first; open jobs are already queued and take no room in the cap.
  const fresh = candidates.filter((d) => d.openJobId === null);
  const limit = mode === 'policy' ? settings.maxPerPass : Infinity;
  const chosen = oldestFirst(fresh, limit);
  const newJobs: Decision[] = [];
  if (chosen.length < fresh.length) {
    const taken = new Set(chosen);
    const outcome: Outcome = { wording: 'cap-reached', count: settings.maxPerPass, total: 0 };
    for (const d of fresh) if (!taken.has(d)) d.outcome = outcome;
  }

  // The results. Without a memo, the candidates themselves; with one, the memo's candidates stay
  // unsettled and the result is a copy — the last pass's copy when it ends the same way (so an
  // unchanged decision is the same object as stored), a new one for each new job (the pass
  // records its job on it).
  const newJob = new Set(chosen);
  for (const d of pending) {
    const { outcome } = d;
    let result = d;
    if (memo) {
      const last = newJob.has(d) ? undefined : d.settledCopy;
      if (last && sameOutcome(last, outcome)) result = last;
      else {
        result = d.clone();
        settle(result, outcome);
        d.settledCopy = newJob.has(d) ? undefined : result;
      }
    } else settle(result, outcome);
    decisions[d.at] = result;
    if (newJob.has(d)) newJobs.push(result);
  }
  // In the order chosen: oldest due first.
  if (newJobs.length > 1) newJobs.sort(dueOrder);
  return { decisions, newJobs, breakersOpened, unplanned };
}

function settle(d: PlannedDecision, outcome: Outcome | undefined): void {
  if (!outcome) return;
  d.block(outcome.wording === 'cap-reached' ? 'cap-reached' : 'breaker-open', outcome.wording);
  d.count = outcome.count;
  d.total = outcome.total;
}

function sameOutcome(d: PlannedDecision, outcome: Outcome | undefined): boolean {
  if (!outcome) return d.kind === 'due';
  return d.wording === outcome.wording && d.count === outcome.count && d.total === outcome.total;
}

const dueOrder = (a: Decision, b: Decision) => a.dueAt - b.dueAt || (a.resourceId < b.resourceId ? -1 : 1);

/**
 * The `limit` oldest-due decisions, in order. With a small cap (the usual 10) a bounded insertion
 * keeps a pass over 200,000 due decisions from sorting them all.
 */
function oldestFirst<T extends Decision>(decisions: T[], limit: number): T[] {
  if (limit <= 0) return [];
  if (decisions.length <= limit || limit > 1000) return [...decisions].sort(dueOrder).slice(0, limit);
  const best: T[] = [];
  for (const d of decisions) {
    if (best.length === limit && dueOrder(d, best[limit - 1]!) >= 0) continue;
    let i = best.length;
    while (i > 0 && dueOrder(d, best[i - 1]!) < 0) i--;
    best.splice(i, 0, d);
    if (best.length > limit) best.pop();
  }
  return best;
}
