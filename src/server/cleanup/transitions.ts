/**
 * The schedules' next sleeps and wakes that the plan route lists on its first page. A window of
 * up to a year over many schedules is bounded work: at most 14 transitions per environment, each
 * schedule walked at most 62 local days and all of them at most 3,000 per answer, the event loop
 * given back between schedules (a long walk never keeps `/healthz` waiting). The answer says
 * when it left out something within the window.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { TransitionView } from '../../api/cleanup.js';
import { walkTransitions, type Schedule, type Transition, type WalkBudget } from '../../cleanup/schedule.js';

export interface TransitionLimits {
  /** Most transitions listed per environment (its soonest). */
  perEnvironment: number;
  /** Most local days one schedule is walked (2 months: 14 transitions of a one-day week). */
  daysPerSchedule: number;
  /** Most local days walked for one answer, over every schedule. */
  days: number;
}

export const transitionLimits: TransitionLimits = { perEnvironment: 14, daysPerSchedule: 62, days: 3000 };

/** An environment with a schedule, as the index of scheduled environments gives it. */
export interface ScheduledEnvironment {
  id: string;
  project: string;
  name: string;
  /** The schedule as stored (JSON). */
  policy_schedule: string;
}

/**
 * The sleeps and wakes of the environments' schedules in `(from, from + withinMs]`, in time
 * order, within the limits; `complete` is false when some were left out.
 */
export async function listTransitions(
  environments: readonly ScheduledEnvironment[],
  from: number,
  withinMs: number,
  limits: TransitionLimits = transitionLimits,
): Promise<{ transitions: TransitionView[]; complete: boolean }> {
  const budget: WalkBudget = { days: limits.days };
  let complete = true;
  // Environments share schedules: each one's transitions are worked out once.
  const bySchedule = new Map<string, Transition[]>();
  const transitions: TransitionView[] = [];
  for (const e of environments) {
    let list = bySchedule.get(e.policy_schedule);
    if (!list) {
      // Other requests are answered between schedules.
      await nextTurn();
      const walked = soonest(
        JSON.parse(e.policy_schedule) as Schedule,
        from,
        from + withinMs,
        limits,
        budget,
      );
      list = walked.list;
      if (!walked.complete) complete = false;
      bySchedule.set(e.policy_schedule, list);
    }
    for (const t of list) {
      transitions.push({
        environmentId: e.id,
        project: e.project,
        environment: e.name,
        kind: t.kind,
        at: new Date(t.at).toISOString(),
        local: t.local,
        utc: t.utc,
      });
    }
  }
  transitions.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0));
  return { transitions, complete };
}

/** A schedule's first transitions within the limits, and whether they are all of the window's. */
function soonest(
  schedule: Schedule,
  from: number,
  to: number,
  limits: TransitionLimits,
  budget: WalkBudget,
): { list: Transition[]; complete: boolean } {
  const allowed = Math.min(limits.daysPerSchedule, budget.days);
  const own: WalkBudget = { days: allowed };
  const walk = walkTransitions(schedule, from, to, own);
  const list: Transition[] = [];
  let complete = false;
  for (let step = walk.next(); ; step = walk.next()) {
    if (step.done) {
      complete = step.value;
      break;
    }
    // One more than listed was found: the window holds more.
    if (list.length === limits.perEnvironment) break;
    list.push(step.value);
  }
  budget.days -= allowed - own.days;
  return { list, complete };
}
