/**
 * The planner's rules for one environment: what blocks each of its namespaces (ownership,
 * protection, keep-alive, running sessions, halt, the target's executor and inventory), what the
 * policy does next (the inactivity wait, the working-hours schedule, a closed pull request) and
 * so each namespace's decision before the pass-wide steps (the breaker and the cap, in plan.ts).
 */
import type { BlockReason } from '../../../cleanup/decisions.js';
import { formatTime } from '../../../cleanup/format.js';
import type { PlannedAction } from '../../../cleanup/protocol.js';
import type { Schedule } from '../../../cleanup/schedule.js';
import { disagrees, toleranceMs } from '../clock.js';
import { policyDueAt, warnAtOf } from '../deadlines.js';
import {
  asleepGraceMs,
  namespaceKey,
  policyCovered,
  policyKey,
  sessionLiveMs,
  type DecisionRule,
  type PlanMode,
  type PlannerSettings,
  type PlanSnapshot,
  type SnapshotEnvironment,
  type SnapshotPolicy,
  type SnapshotInventoryItem,
  type SnapshotResource,
} from './types.js';
import { PlannedDecision, type EnvironmentFacts } from './wording.js';

/** Reasons that hold whatever the time: shown as "never cleaned". */
const structuralReasons: ReadonlySet<BlockReason> = new Set([
  'system',
  'adopted',
  'not-owned',
  'protected-name',
  'protected',
]);

export interface Context {
  snapshot: PlanSnapshot;
  settings: PlannerSettings;
  now: number;
  /** `now`'s UTC day, `2026-03-29`, for formatTime. */
  today: string;
  staleBefore: number;
  protectedName: (name: string) => string | undefined;
  supported: ReadonlySet<string>;
  mode: PlanMode;
  /** Per target, worked out once a pass. */
  targetBlocks: Map<string, TargetBlock>;
}

export function lastActivityOf(
  env: SnapshotEnvironment,
  resources: readonly SnapshotResource[],
): { at: number; source: 'registry' | 'namespace' } {
  let at = env.lastActivityAt;
  let source: 'registry' | 'namespace' = 'registry';
  for (const r of resources) {
    if (r.lastActivityAt !== null && r.lastActivityAt > at) at = r.lastActivityAt;
    const itemAt = r.item?.lastActivityAt;
    if (itemAt != null && itemAt > at) {
      at = itemAt;
      source = 'namespace';
    }
  }
  return { at, source };
}

/** Unknown is not idle: why nothing may be done on a target now (its executor, its inventory). */
export function targetBlock(ctx: Context, targetKey: string): TargetBlock {
  let block = ctx.targetBlocks.get(targetKey);
  if (block !== undefined) return block;
  const { snapshot, staleBefore } = ctx;
  const seen = snapshot.executorsLastSeen.get(targetKey);
  const inventory = snapshot.inventories.get(targetKey);
  if (seen === undefined || seen < staleBefore) block = 'no-executor';
  else if (inventory && !inventory.complete) block = 'inventory-partial';
  else if (!inventory || inventory.lastCompleteAt === null || inventory.lastCompleteAt < staleBefore) {
    block = 'inventory-stale';
  } else if (disagrees(inventory.clockOffsetMs)) block = 'clock-disagrees';
  else block = null;
  ctx.targetBlocks.set(targetKey, block);
  return block;
}

export type TargetBlock = 'no-executor' | 'inventory-partial' | 'inventory-stale' | 'clock-disagrees' | null;

/**
 * Why a resource of this environment may not be acted on now, or undefined, in check order.
 * `why` is a fixed text; reasons with variable parts are worded by PlannedDecision.
 */
export function blockOf(
  ctx: Context,
  env: SnapshotEnvironment,
  r: SnapshotResource,
): { reason: BlockReason; why?: string; transient?: true } | undefined {
  const { snapshot, now } = ctx;
  if (r.role === 'system') return { reason: 'system', why: 'a shared system namespace' };
  if (r.ownership === 'adopted') return { reason: 'adopted', why: 'adopted, not created by tend' };
  if (r.ownership !== 'owned') return { reason: 'not-owned', why: 'tend has no ownership proof' };
  if (r.namespaceUid === null) return { reason: 'not-owned', why: 'no recorded uid' };
  const protectedBy = ctx.protectedName(r.namespaceName);
  if (protectedBy) return { reason: 'protected-name', why: `protected name (${protectedBy})` };
  if (env.protected) return { reason: 'protected', why: 'the environment is protected' };
  if (env.keepAliveUntil !== null && env.keepAliveUntil > now) return { reason: 'kept-alive' };
  const session = snapshot.runningSessions.get(env.id);
  if (session !== undefined && session > now - sessionLiveMs) {
    return { reason: 'session-running', why: 'a tend command is running in it' };
  }
  if (snapshot.halted) return { reason: 'halted', why: 'cleanup is halted (`tend cleanup unhalt`)' };
  const target = targetBlock(ctx, r.targetKey);
  if (target) return { reason: target };
  const item = r.item;
  if (!item) return { reason: 'not-owned', why: 'the namespace is not in the inventory' };
  if (!item.managedByTend)
    return { reason: 'not-owned', why: 'the namespace lacks the managed-by=tend label' };
  if (item.project !== env.project || item.environment !== env.name) {
    return { reason: 'not-owned', why: 'the namespace annotations name another project or environment' };
  }
  if (item.uid !== r.namespaceUid) {
    // Still no proof until an inventory lists the recorded uid; but when the inventory lists the
    // namespace tend itself replaced, nobody else re-created it: the inventory is behind.
    // It holds until then only: not "never cleaned".
    return item.earlierGeneration
      ? {
          reason: 'not-owned',
          why: 'its new uid (re-created by tend: a restore or a deploy) is in no inventory yet; the next one confirms it',
          transient: true,
        }
      : { reason: 'not-owned', why: 'the namespace was re-created (another uid)' };
  }
  const outside = createdOutsideClaim(r, item);
  if (outside) return { reason: 'not-owned', why: outside };
  if (item.role === 'system') return { reason: 'system', why: 'the namespace has role system' };
  if (item.adopted) return { reason: 'adopted', why: 'the namespace is marked adopted' };
  return undefined;
}

/**
 * A claim of creation must agree with what the target says: it created the namespace no earlier
 * than the claiming session started (the client's clock: a session replayed late from an
 * offline queue keeps its ownership) and no later than the server received the claim — each
 * within the clock skew tolerated. Otherwise the namespace existed before the claim, or the
 * claim is not this namespace's: why it is not owned.
 */
function createdOutsideClaim(r: SnapshotResource, item: SnapshotInventoryItem): string | undefined {
  if (item.createdAt === undefined || r.claim === undefined) return undefined;
  if (item.createdAt < r.claim.startedAt - toleranceMs) {
    return 'the cluster created the namespace before the session that claims to have created it';
  }
  if (item.createdAt > r.claim.receivedAt + toleranceMs) {
    return 'the cluster created the namespace after the server received the claim that tend created it';
  }
  return undefined;
}

/** Of a memo entry's decisions: settled, or a candidate for the pass-wide steps. */
export const Role = { Settled: 0, DeleteCandidate: 1, OtherCandidate: 2 } as const;
export type Role = (typeof Role)[keyof typeof Role];

export interface Evaluation {
  decisions: PlannedDecision[];
  roles: Role[];
  /** The first instant after `now` at which a decision of it could read otherwise. */
  validUntil: number;
}

/** The first UTC midnight after `now`: sentences name the day of times not on `now`'s. */
export function nextMidnight(now: number): number {
  const day = 86_400_000;
  return Math.floor(now / day) * day + day;
}

/**
 * One environment's decisions before the pass-wide steps: each settled (never, paused,
 * scheduled, blocked, dry-run) or a candidate for the breaker (deletes) and the cap.
 */
export function evaluate(
  ctx: Context,
  env: SnapshotEnvironment,
  resources: readonly SnapshotResource[],
  scheduleFacts: (schedule: Schedule) => ScheduleFacts,
  nowAction: PlannedAction | undefined,
): Evaluation {
  const { snapshot, now, mode } = ctx;
  const activity = lastActivityOf(env, resources);
  const policy = env.policy;
  const next: NextStep =
    mode === 'now' || !policy
      ? { action: nowAction ?? policy?.action ?? 'delete', rule: 'inactivity', dueAt: now, paused: false }
      : nextStep(env, policy, activity.at, now, scheduleFacts);
  const { action } = next;
  let { dueAt } = next;
  const facts: EnvironmentFacts = { today: ctx.today, mode, env, activitySource: activity.source };
  // Every instant after `now` that a comparison below (or in nextStep) could cross.
  let validUntil = nextMidnight(now);
  const until = (t: number | null | undefined) => {
    if (t !== null && t !== undefined && t > now && t < validUntil) validUntil = t;
  };
  if (policy) {
    until(activity.at + policy.afterMs);
    until(activity.at + asleepGraceMs);
    if (policy.schedule) until(scheduleFacts(policy.schedule).next);
  }
  until(env.keepAliveUntil);
  const session = snapshot.runningSessions.get(env.id);
  if (session !== undefined) until(session + sessionLiveMs);
  // A closed or merged pull request brings the policy's own action forward (deadlines.ts).
  if (mode === 'policy' && policy && !next.paused && next.rule === 'inactivity' && action === policy.action) {
    const byPolicy = policyDueAt(env, activity.at);
    until(byPolicy.dueAt);
    if (byPolicy.pullRequest && byPolicy.dueAt <= dueAt) {
      dueAt = byPolicy.dueAt;
      facts.pullRequest = byPolicy.pullRequest;
    }
  }
  until(dueAt);
  // Due "now" (a paused environment's resume, a schedule without a transition yet): read
  // afresh every pass.
  if (dueAt === now) validUntil = now;
  const decisions: PlannedDecision[] = [];
  const roles: Role[] = [];
  for (const r of resources) {
    const decision = new PlannedDecision(
      facts,
      action,
      r.id,
      r.plugin,
      r.targetKey,
      r.namespaceName,
      r.namespaceUid,
      dueAt,
      activity.at,
      snapshot.openJobs.get(r.id)?.id ?? null,
    );
    decision.rule = next.rule;
    decisions.push(decision);
    roles.push(classify(ctx, env, r, decision, next.paused, until));
  }
  return { decisions, roles, validUntil };
}

/**
 * Why another environment record holding the same namespace keeps it, or undefined: a namespace
 * is due only when every record that holds it is — none protected, kept alive, running a
 * command, or used within its wait (its own policy's, else this one's; a holder without either
 * never lets it go). Ownership is this record's to prove; the others' use is what keeps it.
 */
function heldElsewhere(
  ctx: Context,
  env: SnapshotEnvironment,
  r: SnapshotResource,
  until: (t: number | null) => void,
): { reason: BlockReason; why: string } | undefined {
  const holders = ctx.snapshot.holders?.get(namespaceKey(r.targetKey, r.namespaceName));
  if (!holders) return undefined;
  const { now, today } = ctx;
  for (const h of holders) {
    if (h.environmentId === env.id) continue;
    const who = `environment ${h.project}/${h.name} holds it too`;
    if (h.protected) return { reason: 'protected', why: `${who} and is protected` };
    if (h.keepAliveUntil !== null && h.keepAliveUntil > now) {
      until(h.keepAliveUntil);
      return {
        reason: 'kept-alive',
        why: `${who} and is kept alive until ${formatTime(h.keepAliveUntil, today)}`,
      };
    }
    if (h.sessionAt !== null && h.sessionAt > now - sessionLiveMs) {
      until(h.sessionAt + sessionLiveMs);
      return { reason: 'session-running', why: `${who}, and a tend command is running in it` };
    }
    const wait = h.afterMs ?? env.policy?.afterMs ?? null;
    if (wait === null) return { reason: 'held-elsewhere', why: `${who} and has no cleanup policy` };
    if (h.lastActivityAt + wait > now) {
      until(h.lastActivityAt + wait);
      return {
        reason: 'held-elsewhere',
        why: `${who} and was used at ${formatTime(h.lastActivityAt, today)} (idle at ${formatTime(h.lastActivityAt + wait, today)})`,
      };
    }
  }
  return undefined;
}

/** Settles a decision as far as its environment alone decides; says whether it is a candidate. */
function classify(
  ctx: Context,
  env: SnapshotEnvironment,
  r: SnapshotResource,
  decision: PlannedDecision,
  paused: boolean,
  until: (t: number | null) => void,
): Role {
  const { snapshot, now, mode } = ctx;
  const { action, dueAt } = decision;
  const block = blockOf(ctx, env, r) ?? (action === 'resume' ? undefined : heldElsewhere(ctx, env, r, until));
  if (block && structuralReasons.has(block.reason) && !('transient' in block)) {
    decision.block(block.reason, 'never', block.why);
    return Role.Settled;
  }
  if (paused) {
    decision.block('paused', 'paused');
    return Role.Settled;
  }
  // A decision not due yet is worded as what it would be if due now: "will" only when nothing
  // known now stands in the way (a keep-alive that ends before the due time does not).
  const future = dueAt > now;
  if (block && !(future && block.reason === 'kept-alive' && env.keepAliveUntil! <= dueAt)) {
    decision.block(block.reason, future ? 'blocked-before-due' : 'due-but', block.why);
    return Role.Settled;
  }
  // Clean up now skips the wait, never the breaker: an open breaker holds the whole project.
  if (mode === 'now' && action === 'delete' && snapshot.openBreakers.has(env.project)) {
    decision.block('breaker-open', 'breaker-open');
    return Role.Settled;
  }
  if (mode !== 'policy') return Role.Settled;
  if (!ctx.supported.has(action)) {
    decision.kind = 'dry-run';
    decision.wording = 'unsupported';
    return Role.Settled;
  }
  const enforced = snapshot.enforcedPolicies.get(policyKey(env.project, env.name));
  // Resuming only restores what a pause recorded: it needs no enforced policy.
  if (action !== 'resume' && !policyCovered(env.policy!, enforced)) {
    decision.kind = 'dry-run';
    if (future) {
      decision.wording = 'would';
      if (enforced) decision.why = 'the policy is stricter than the one enforced';
    } else decision.wording = enforced ? 'stricter' : 'not-enforced';
    return Role.Settled;
  }
  // The breaker guards against mass deletion; pause and resume are undone exactly (and a
  // schedule puts a whole project to sleep at once by design). The cap holds for all.
  if (action === 'delete' && snapshot.openBreakers.has(env.project)) {
    if (future) {
      const p = env.project;
      const why = `the circuit breaker of project ${p} is open (\`tend cleanup breaker reset --project ${p}\`)`;
      decision.block('breaker-open', 'blocked-before-due', why);
    } else decision.block('breaker-open', 'breaker-open');
    return Role.Settled;
  }
  if (future) {
    decision.kind = 'scheduled';
    // A wake-up is no warning: only what takes something away is announced.
    if (action !== 'resume') {
      decision.warnAt = warnAtOf(env, dueAt);
      until(decision.warnAt);
    }
    decision.wording = decision.warnAt !== null && decision.warnAt <= now ? 'warning' : 'scheduled';
    return Role.Settled;
  }
  return action === 'delete' ? Role.DeleteCandidate : Role.OtherCandidate;
}

interface NextStep {
  action: PlannedAction;
  rule: DecisionRule;
  /** When it is (or was) due. */
  dueAt: number;
  /** Paused, and nothing but a use (or `tend resume`) resumes it. */
  paused: boolean;
}

const stepRank: Record<PlannedAction, number> = { resume: 0, pause: 1, delete: 2 };

/**
 * What the policy does next to an environment (docs/cleanup.md#schedules): the inactivity rule
 * (its action after the wait) and the schedule (paused at sleepAt — or, used while asleep, after
 * `asleepGraceMs` idle — and resumed at wakeAt if the schedule paused it). Of the rules that are
 * due, the harshest action wins (delete over pause), then the earlier; when none is due, the
 * soonest.
 */
export interface ScheduleFacts {
  awake: boolean;
  /** The last transition at or before now (a wake when awake, a sleep when asleep). */
  last: number | undefined;
  /** The next one after now. */
  next: number | undefined;
}

function nextStep(
  env: SnapshotEnvironment,
  policy: SnapshotPolicy,
  activityAt: number,
  now: number,
  factsOf: (schedule: Schedule) => ScheduleFacts,
): NextStep {
  const schedule = policy.schedule ?? null;
  const facts = schedule ? factsOf(schedule) : undefined;
  const inactivity: NextStep = {
    action: policy.action,
    rule: 'inactivity',
    dueAt: activityAt + policy.afterMs,
    paused: false,
  };
  if (env.state === 'paused') {
    if (facts && env.pausedBy === 'schedule') {
      if (facts.awake) return { action: 'resume', rule: 'schedule', dueAt: facts.last ?? now, paused: false };
      if (policy.action === 'delete' && inactivity.dueAt <= now) return inactivity;
      if (facts.next !== undefined)
        return { action: 'resume', rule: 'schedule', dueAt: facts.next, paused: false };
    }
    if (policy.action === 'delete') return inactivity;
    return { action: 'resume', rule: env.pausedBy ?? 'inactivity', dueAt: now, paused: true };
  }
  const steps: NextStep[] = [inactivity];
  if (facts) {
    if (!facts.awake) {
      const sleptAt = facts.last ?? now;
      const dueAt = activityAt > sleptAt ? activityAt + asleepGraceMs : sleptAt;
      steps.push({ action: 'pause', rule: 'schedule', dueAt, paused: false });
    } else if (facts.next !== undefined) {
      steps.push({ action: 'pause', rule: 'schedule', dueAt: facts.next, paused: false });
    }
  }
  const due = steps.filter((s) => s.dueAt <= now);
  const pool = due.length > 0 ? due : steps;
  pool.sort((a, b) =>
    due.length > 0 ? stepRank[b.action] - stepRank[a.action] || a.dueAt - b.dueAt : a.dueAt - b.dueAt,
  );
  return pool[0]!;
}
