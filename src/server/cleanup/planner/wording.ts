/**
 * How a decision reads: `PlannedDecision` holds what its sentence is made of and composes it when
 * first read ("no activity since 10:02 UTC, policy 8h; last: tend build by alice", "would delete
 * (dry-run: …) — …"). A pass over 200,000 resources stores few new sentences, so none is built
 * before it is needed.
 */
import type { BlockReason, DecisionKind } from '../../../cleanup/decisions.js';
import { formatDuration, formatTime, outlook, pastTense } from '../../../cleanup/format.js';
import type { PlannedAction } from '../../../cleanup/protocol.js';
import { describeSchedule, formatLocal } from '../../../cleanup/schedule.js';
import type { ClosedPullRequest } from '../deadlines.js';
import {
  asleepGraceMs,
  type Decision,
  type DecisionRule,
  type PlanMode,
  type SnapshotEnvironment,
} from './types.js';

/** What the sentences of one environment's decisions are made of (shared by its resources). */
export interface EnvironmentFacts {
  /** The pass's UTC day (formatTime) and mode: all of the pass a sentence reads. */
  today: string;
  mode: PlanMode;
  env: SnapshotEnvironment;
  activitySource: 'registry' | 'namespace';
  /** Set when the pull request's close (not inactivity) makes the environment due. */
  pullRequest?: ClosedPullRequest;
  base?: string;
}

/** How a decision's sentence is composed (see PlannedDecision). */
export type Wording =
  | 'due'
  | 'scheduled'
  | 'warning'
  | 'never'
  | 'due-but'
  | 'unsupported'
  | 'not-enforced'
  | 'stricter'
  /** Not due yet, and its policy is not enforced: "would be deleted at … once enforced". */
  | 'would'
  /** Not due yet, and something stands in the way now (kept alive past the due time, halted…). */
  | 'blocked-before-due'
  | 'breaker-open'
  | 'breaker-opened'
  | 'cap-reached'
  | 'paused';

/**
 * A decision whose sentence is composed when first read, from data it holds (no closures: a
 * pass over 200,000 resources stores few new sentences, and building each would dominate it).
 */
export class PlannedDecision implements Decision {
  kind: DecisionKind = 'due';
  reason: BlockReason | null = null;
  wording: Wording = 'due';
  /** A fixed explanation of the block, when the reason code alone does not say it. */
  why: string | undefined = undefined;
  /** Breaker: environments due at once and active; cap: the cap. */
  count = 0;
  total = 0;
  warnAt: number | null = null;
  /** The rule that decided; for `schedule`, dueAt is the schedule's transition (or the grace after use). */
  rule: DecisionRule = 'inactivity';
  /** A candidate's scratch during plan(): what the breaker or the cap made of it, its index. */
  outcome: Outcome | undefined = undefined;
  at = 0;
  /** A memo candidate's settled copy of the last pass (reused when it ends the same way). */
  settledCopy: PlannedDecision | undefined = undefined;
  private text: string | undefined = undefined;

  constructor(
    private readonly facts: EnvironmentFacts,
    readonly action: PlannedAction,
    readonly resourceId: string,
    readonly pluginName: string,
    readonly targetKey: string,
    readonly namespaceName: string,
    readonly namespaceUid: string | null,
    readonly dueAt: number,
    readonly lastActivityAt: number,
    public openJobId: string | null,
  ) {}

  get environmentId(): string {
    return this.facts.env.id;
  }
  get project(): string {
    return this.facts.env.project;
  }
  get environment(): string {
    return this.facts.env.name;
  }
  get dueLocal(): string | null {
    const schedule = this.facts.env.policy?.schedule;
    return this.rule === 'schedule' && schedule ? formatLocal(schedule, this.dueAt) : null;
  }

  /** A copy for this pass's breaker and cap to settle (the memo keeps the original unsettled). */
  clone(): PlannedDecision {
    const copy = new PlannedDecision(
      this.facts,
      this.action,
      this.resourceId,
      this.pluginName,
      this.targetKey,
      this.namespaceName,
      this.namespaceUid,
      this.dueAt,
      this.lastActivityAt,
      this.openJobId,
    );
    copy.kind = this.kind;
    copy.reason = this.reason;
    copy.wording = this.wording;
    copy.why = this.why;
    copy.count = this.count;
    copy.total = this.total;
    copy.warnAt = this.warnAt;
    copy.rule = this.rule;
    return copy;
  }

  withOpenJob(id: string | null): PlannedDecision {
    const copy = this.clone();
    copy.openJobId = id;
    return copy;
  }

  block(reason: BlockReason, wording: Wording, why?: string): void {
    this.kind = 'blocked';
    this.reason = reason;
    this.wording = wording;
    this.why = why;
  }

  /** What the breaker or the cap made of it, if anything (none: it stays due). */
  settle(outcome: Outcome | undefined): void {
    if (!outcome) return;
    this.block(outcome.wording === 'cap-reached' ? 'cap-reached' : 'breaker-open', outcome.wording);
    this.count = outcome.count;
    this.total = outcome.total;
  }

  /** Whether settling it with `outcome` would leave it as it is. */
  endsAs(outcome: Outcome | undefined): boolean {
    if (!outcome) return this.kind === 'due';
    return this.wording === outcome.wording && this.count === outcome.count && this.total === outcome.total;
  }

  get sentence(): string {
    return (this.text ??= this.compose());
  }

  sameWordingAs(other: Decision): boolean {
    if (!(other instanceof PlannedDecision)) return false;
    const a = this.facts;
    const b = other.facts;
    return (
      this.wording === other.wording &&
      this.rule === other.rule &&
      scheduleText(a.env) === scheduleText(b.env) &&
      a.env.pausedBy === b.env.pausedBy &&
      this.why === other.why &&
      this.count === other.count &&
      this.total === other.total &&
      this.action === other.action &&
      this.pluginName === other.pluginName &&
      this.targetKey === other.targetKey &&
      this.namespaceName === other.namespaceName &&
      a.today === b.today &&
      a.mode === b.mode &&
      a.activitySource === b.activitySource &&
      a.env.project === b.env.project &&
      a.env.name === b.env.name &&
      a.env.keepAliveUntil === b.env.keepAliveUntil &&
      a.env.policy?.text === b.env.policy?.text &&
      a.env.lastActivityCommand === b.env.lastActivityCommand &&
      a.env.lastActivityUser === b.env.lastActivityUser &&
      a.env.lastActivityType === b.env.lastActivityType &&
      a.pullRequest?.closedAt === b.pullRequest?.closedAt &&
      a.pullRequest?.state === b.pullRequest?.state
    );
  }

  private base(): string {
    const f = this.facts;
    if (this.rule === 'schedule') return this.scheduleBase();
    if (f.base === undefined) {
      const activity = formatTime(this.lastActivityAt, f.today);
      const what = lastWhat(f.env, f.activitySource);
      f.base =
        f.mode === 'now'
          ? `clean up now requested; last activity ${activity} (${what})`
          : f.pullRequest
            ? `${pullRequestText(f.pullRequest, f.today)}, ${afterCloseText(f.env)}; last activity ${activity} (${what})`
            : `no activity since ${activity}, ${policyText(f.env)}; last: ${what}`;
    }
    return f.base;
  }

  /** "schedule awake 08:00–20:00 Europe/Berlin, mon tue wed thu fri: asleep since 2026-03-29 20:00 +02:00 (18:00 UTC)". */
  private scheduleBase(): string {
    const { env, today } = this.facts;
    const schedule = env.policy!.schedule!;
    const last = `last activity ${formatTime(this.lastActivityAt, today)} (${lastWhat(env, this.facts.activitySource)})`;
    const when = `${formatLocal(schedule, this.dueAt)} (${formatTime(this.dueAt, today)})`;
    const rule = `schedule ${describeSchedule(schedule)}`;
    if (this.action === 'resume') return `${rule}: awake since ${when}; ${last}`;
    if (this.lastActivityAt + asleepGraceMs === this.dueAt) {
      return `${rule}: used while asleep, idle ${formatDuration(asleepGraceMs)} since; ${last}`;
    }
    return `${rule}: asleep since ${when}; ${last}`;
  }

  private whyText(): string {
    const { env, today } = this.facts;
    switch (this.reason) {
      case 'kept-alive':
        // Another record holding the namespace may be the one kept alive: its words name it.
        return this.why ?? `kept alive until ${formatTime(env.keepAliveUntil ?? 0, today)}`;
      case 'no-executor':
        return `no live executor for its ${targetWhat(this.targetKey)}`;
      case 'inventory-partial':
        return `the last inventory of its ${targetWhat(this.targetKey)} was incomplete`;
      case 'inventory-stale':
        return `no recent complete inventory of its ${targetWhat(this.targetKey)}`;
      case 'clock-disagrees':
        return `the server's clock disagrees with the clock of its ${targetWhat(this.targetKey)}`;
      default:
        return this.why ?? this.reason ?? '';
    }
  }

  private compose(): string {
    const { env, today } = this.facts;
    const p = env.project;
    switch (this.wording) {
      case 'due':
        return this.base();
      case 'warning': {
        const { verb } = outlook(this.action, { enforced: true });
        if (this.facts.pullRequest) {
          return `${verb} at ${formatTime(this.dueAt, today)} (\`tend keep-alive\` to postpone) — ${this.base()}`;
        }
        if (this.rule === 'schedule') {
          const schedule = env.policy!.schedule!;
          return `${verb} at ${formatLocal(schedule, this.dueAt)} (${formatTime(this.dueAt, today)}) by the schedule (${describeSchedule(schedule)}) unless used (\`tend keep-alive\` to postpone); last activity ${formatTime(this.lastActivityAt, today)}`;
        }
        return `${verb} at ${formatTime(this.dueAt, today)} unless used (\`tend keep-alive\` to postpone); last activity ${formatTime(this.lastActivityAt, today)}, ${policyText(env)}; last: ${lastWhat(env, this.facts.activitySource)}`;
      }
      case 'would': {
        const { verb, condition } = outlook(this.action, { project: p });
        const stricter = this.why ? ` (${this.why})` : '';
        return `${verb} at ${formatTime(this.dueAt, today)}${condition}${stricter} — ${this.base()}`;
      }
      case 'blocked-before-due':
        return `not cleaned while ${this.whyText()}; due at ${formatTime(this.dueAt, today)} otherwise — ${this.base()}`;
      case 'scheduled':
        if (this.facts.pullRequest) {
          return `${pastTense[this.action]} at ${formatTime(this.dueAt, today)} — ${this.base()}`;
        }
        if (this.rule === 'schedule') {
          const schedule = env.policy!.schedule!;
          return `${pastTense[this.action]} at ${formatLocal(schedule, this.dueAt)} (${formatTime(this.dueAt, today)}) by the schedule (${describeSchedule(schedule)})${this.action === 'resume' ? '' : ' unless used'}; last activity ${formatTime(this.lastActivityAt, today)}`;
        }
        return `${pastTense[this.action]} at ${formatTime(this.dueAt, today)} unless used; last activity ${formatTime(this.lastActivityAt, today)}, ${policyText(env)}; last: ${lastWhat(env, this.facts.activitySource)}`;
      case 'paused':
        return `paused${env.pausedBy ? ` (by the ${env.pausedBy === 'schedule' ? 'schedule' : 'inactivity policy'})` : ''}; resumed by the next \`tend deploy|test|run\` or \`tend resume\`${env.policy?.schedule ? ` (the schedule resumes only what it paused)` : ''}`;
      case 'never':
        return `never cleaned: ${this.whyText()}`;
      case 'due-but':
        return `due, but ${this.whyText()} — ${this.base()}`;
      case 'unsupported':
        return `would ${this.action} (not supported by executors yet) — ${this.base()}`;
      case 'not-enforced':
      case 'stricter':
        return `would ${this.action} (dry-run: ${this.wording === 'stricter' ? 'the policy is stricter than the one enforced' : 'the policy is not enforced yet'}; \`tend cleanup enforce --project ${p} --environment ${env.name}\`) — ${this.base()}`;
      case 'breaker-open':
        return `due, but the circuit breaker of project ${p} is open (\`tend cleanup breaker reset --project ${p}\`) — ${this.base()}`;
      case 'breaker-opened':
        return `due, but ${this.count} of ${this.total} environments of ${p} under enforced policies are due at once: the circuit breaker opened (\`tend cleanup breaker reset --project ${p}\`) — ${this.base()}`;
      case 'cap-reached':
        return `due, but this pass reached its cap of ${this.count} — ${this.base()}`;
    }
  }
}

/**
 * What a target is, for sentences people read (the CLI prints them): never its key, whose id
 * (a cluster's kube-system uid) means nothing to them; where it is, the resource lists show.
 */
function targetWhat(targetKey: string): string {
  const kind = targetKey.slice(0, targetKey.indexOf('/'));
  return kind === 'kubernetes' ? 'cluster' : kind === 'local' ? 'host' : `${kind} target`;
}

function pullRequestText(pr: ClosedPullRequest, today: string): string {
  return `pull request ${pr.repository}#${pr.number} ${pr.state} at ${formatTime(pr.closedAt, today)}`;
}

function afterCloseText(env: SnapshotEnvironment): string {
  const ms = env.policy?.afterCloseMs ?? 0;
  return ms === 0 ? 'due when closed' : `afterClose ${formatDuration(ms)}`;
}

function scheduleText(env: SnapshotEnvironment): string | undefined {
  const s = env.policy?.schedule;
  return s ? describeSchedule(s) : undefined;
}

function policyText(env: SnapshotEnvironment): string {
  return env.policy ? `policy ${env.policy.text}` : 'clean up now';
}

function lastWhat(env: SnapshotEnvironment, source: 'registry' | 'namespace'): string {
  // The plugin's mark (the kubernetes plugin's tend.dev/last-activity), as the inventory reported it.
  if (source === 'namespace') return 'the activity marked on the namespace';
  if (env.lastActivityCommand) {
    return `tend ${env.lastActivityCommand}${env.lastActivityUser ? ` by ${env.lastActivityUser}` : ''}`;
  }
  return env.lastActivityType ?? 'recorded';
}

/** What the breaker or the cap made of a candidate. */
export interface Outcome {
  wording: 'breaker-opened' | 'cap-reached';
  count: number;
  total: number;
}
