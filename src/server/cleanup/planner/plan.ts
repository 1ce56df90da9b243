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
import type { PlanMemo } from './memo.js';
import { evaluate, Role, type Context, type Evaluation, type ScheduleFacts } from './rules.js';
import {
  breakerMinimum,
  breakerShare,
  staleIntervals,
  type Decision,
  type PlanMode,
  type PlannerSettings,
  type PlanResult,
  type PlanSnapshot,
  type SnapshotEnvironment,
  type SnapshotResource,
} from './types.js';
import type { Outcome, PlannedDecision } from './wording.js';

/** The largest epoch ms a Date (and so the database) holds. */
const maxInstant = 8.64e15;

/**
 * Plans every resource of the snapshot's environments. `only` restricts to some environments;
 * mode `now` skips the inactivity wait and the policy (clean up now). `memo` (policy mode, all
 * environments) carries evaluations from the last pass to this one (see PlanMemo).
 */
export function plan(
  snapshot: PlanSnapshot,
  now: number,
  settings: PlannerSettings,
  options: { mode?: PlanMode; only?: ReadonlySet<string>; action?: PlannedAction; memo?: PlanMemo } = {},
): PlanResult {
  const mode = options.mode ?? 'policy';
  const ctx = passContext(snapshot, now, settings, mode);
  // The memo carries a whole policy pass to the next: a partial plan neither reads nor changes it.
  const memo = mode === 'policy' && !options.only ? options.memo : undefined;
  memo?.begin(ctx);
  const pass = evaluateEnvironments(ctx, environmentsToPlan(snapshot, options.only), memo, options.action);
  memo?.end();
  const breakersOpened = circuitBreaker(snapshot, pass);
  if (mode === 'now') everyDueIsCandidate(pass);
  const chosen = perPassCap(pass.candidates, mode === 'policy' ? settings.maxPerPass : Infinity);
  const newJobs = settleCandidates(pass, chosen, memo);
  return { decisions: pass.decisions, newJobs, breakersOpened, unplanned: pass.unplanned };
}

/** What every rule of the pass reads: the snapshot, the settings and the clock. */
function passContext(
  snapshot: PlanSnapshot,
  now: number,
  settings: PlannerSettings,
  mode: PlanMode,
): Context {
  return {
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
}

/** The resources to plan, by environment (`only`: of those environments alone). */
function environmentsToPlan(
  snapshot: PlanSnapshot,
  only: ReadonlySet<string> | undefined,
): ReadonlyMap<string, readonly SnapshotResource[]> {
  if (snapshot.byEnvironment && !only) return snapshot.byEnvironment;
  const grouped = new Map<string, SnapshotResource[]>();
  for (const r of snapshot.resources) {
    if (only && !only.has(r.environmentId)) continue;
    let list = grouped.get(r.environmentId);
    if (!list) grouped.set(r.environmentId, (list = []));
    list.push(r);
  }
  return grouped;
}

/** The pass's decisions as each environment's rules leave them, before the pass-wide rules. */
interface EvaluatedPass {
  decisions: PlannedDecision[];
  /** The candidates, each with its place in `decisions` (`at`): settled once the pass-wide rules ran. */
  pending: PlannedDecision[];
  /** Candidates for the cap: pauses and resumes, then the deletes the breaker lets through. */
  candidates: PlannedDecision[];
  /** Would-be-due deletes per project, for the breaker. */
  dueByProject: Map<string, { envs: Set<string>; decisions: PlannedDecision[] }>;
  unplanned: PlanResult['unplanned'];
}

/** Each environment's rules (rules.ts), or the memo's evaluation when nothing it read changed. */
function evaluateEnvironments(
  ctx: Context,
  byEnvironment: ReadonlyMap<string, readonly SnapshotResource[]>,
  memo: PlanMemo | undefined,
  nowAction: PlannedAction | undefined,
): EvaluatedPass {
  const pass: EvaluatedPass = {
    decisions: [],
    pending: [],
    candidates: [],
    dueByProject: new Map(),
    unplanned: [],
  };
  const scheduleFacts = scheduleFactsAt(ctx.now);
  for (const [envId, resources] of byEnvironment) {
    const env = ctx.snapshot.environments.get(envId);
    if (!env || (ctx.mode === 'policy' && !env.policy) || resources.length === 0) continue;
    let evaluation = memo?.recall(ctx, envId, env, resources);
    if (!evaluation) {
      evaluation = evaluateOrLeaveOut(ctx, env, resources, scheduleFacts, nowAction, pass.unplanned);
      if (!evaluation) continue;
      memo?.remember(envId, env, resources, evaluation);
    }
    collect(pass, env, evaluation);
  }
  return pass;
}

/** Schedules are shared by many environments: each one's state at `now` is worked out once a pass. */
function scheduleFactsAt(now: number): (schedule: Schedule) => ScheduleFacts {
  const cache = new Map<string, ScheduleFacts>();
  return (schedule) => {
    const key = `${schedule.timeZone}|${schedule.wakeAt}|${schedule.sleepAt}|${schedule.weekdays.join(',')}`;
    let facts = cache.get(key);
    if (!facts) {
      const awake = isAwake(schedule, now);
      facts = { awake, last: lastTransition(schedule, now)?.at, next: nextTransition(schedule, now)?.at };
      cache.set(key, facts);
    }
    return facts;
  };
}

/**
 * The environment's evaluation; or, when the planner cannot work it out (a value no check
 * foresaw), none: it is left out of this pass, not every other one with it, and it is said.
 */
function evaluateOrLeaveOut(
  ctx: Context,
  env: SnapshotEnvironment,
  resources: readonly SnapshotResource[],
  scheduleFacts: (schedule: Schedule) => ScheduleFacts,
  nowAction: PlannedAction | undefined,
  unplanned: PlanResult['unplanned'],
): Evaluation | undefined {
  try {
    const evaluation = evaluate(ctx, env, resources, scheduleFacts, nowAction);
    for (const d of evaluation.decisions) {
      for (const t of [d.dueAt, d.lastActivityAt, d.warnAt ?? 0]) {
        if (!(Math.abs(t) <= maxInstant))
          throw new RangeError(`an instant out of range (${t}) in its decision`);
      }
    }
    return evaluation;
  } catch (error) {
    unplanned.push({
      environmentId: env.id,
      project: env.project,
      name: env.name,
      message: error instanceof Error ? error.message : String(error),
    });
    return undefined;
  }
}

/** Adds an environment's decisions to the pass; its candidates wait for the pass-wide rules. */
function collect(pass: EvaluatedPass, env: SnapshotEnvironment, evaluation: Evaluation): void {
  const { roles } = evaluation;
  for (let i = 0; i < roles.length; i++) {
    const role = roles[i]!;
    const decision = evaluation.decisions[i]!;
    pass.decisions.push(decision);
    if (role === Role.Settled) continue;
    decision.outcome = undefined;
    decision.at = pass.decisions.length - 1;
    pass.pending.push(decision);
    if (role === Role.OtherCandidate) {
      pass.candidates.push(decision);
      continue;
    }
    let entry = pass.dueByProject.get(env.project);
    if (!entry) pass.dueByProject.set(env.project, (entry = { envs: new Set(), decisions: [] }));
    entry.envs.add(env.id);
    entry.decisions.push(decision);
  }
}

/**
 * The circuit breaker: a project with too many environments due for deletion at once (at least
 * breakerMinimum, more than breakerShare of its active ones) has none deleted and its breaker
 * opened; the other projects' deletes go on to the cap.
 */
function circuitBreaker(snapshot: PlanSnapshot, pass: EvaluatedPass): PlanResult['breakersOpened'] {
  const opened: PlanResult['breakersOpened'] = [];
  for (const [project, entry] of pass.dueByProject) {
    const active = snapshot.activeEnvironments.get(project) ?? entry.envs.size;
    if (entry.envs.size >= breakerMinimum && entry.envs.size > breakerShare * active) {
      opened.push({ project, dueCount: entry.envs.size, activeCount: active });
      const outcome: Outcome = { wording: 'breaker-opened', count: entry.envs.size, total: active };
      for (const d of entry.decisions) d.outcome = outcome;
    } else {
      for (const d of entry.decisions) pass.candidates.push(d);
    }
  }
  return opened;
}

/** Clean up now: every due decision is a candidate (and none is capped). */
function everyDueIsCandidate(pass: EvaluatedPass): void {
  for (const [at, d] of pass.decisions.entries()) {
    if (d.kind !== 'due') continue;
    pass.candidates.push(d);
    d.outcome = undefined;
    d.at = at;
    pass.pending.push(d);
  }
}

/**
 * The per-pass cap: the `limit` oldest due become new jobs, the rest wait (`cap-reached`).
 * Open jobs are already queued and take no room in it. Returns the new jobs' decisions.
 */
function perPassCap(candidates: PlannedDecision[], limit: number): PlannedDecision[] {
  const fresh = candidates.filter((d) => d.openJobId === null);
  const chosen = oldestFirst(fresh, limit);
  if (chosen.length < fresh.length) {
    const taken = new Set(chosen);
    const outcome: Outcome = { wording: 'cap-reached', count: limit, total: 0 };
    for (const d of fresh) if (!taken.has(d)) d.outcome = outcome;
  }
  return chosen;
}

/**
 * Puts each candidate's result in its place: without a memo, the candidate itself settled; with
 * one, a settled copy (the memo's candidates stay unsettled). Returns the new jobs, oldest due first.
 */
function settleCandidates(
  pass: EvaluatedPass,
  chosen: readonly PlannedDecision[],
  memo: PlanMemo | undefined,
): Decision[] {
  const newJob = new Set(chosen);
  const newJobs: Decision[] = [];
  for (const d of pass.pending) {
    const isNew = newJob.has(d);
    let result = d;
    if (memo) result = memo.settled(d, isNew);
    else d.settle(d.outcome);
    pass.decisions[d.at] = result;
    if (isNew) newJobs.push(result);
  }
  if (newJobs.length > 1) newJobs.sort(dueOrder);
  return newJobs;
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
