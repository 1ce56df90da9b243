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
 */
import { namespaceProtector } from '../../cleanup/protection.js';
import type { CleanupAction } from '../../cleanup/protocol.js';
import { formatDuration, formatTime } from '../../cleanup/format.js';
import { policyDueAt, warnAtOf, type ClosedPullRequest } from './deadlines.js';
import {
  describeSchedule,
  formatLocal,
  isAwake,
  lastTransition,
  nextTransition,
  type Schedule,
} from '../../cleanup/schedule.js';

export { blockReasons, type BlockReason, type DecisionKind } from '../../cleanup/decisions.js';
import type { BlockReason, DecisionKind } from '../../cleanup/decisions.js';

export interface PlannerSettings {
  /** How often passes run (`--cleanup-interval`); inventories and executors older than 3 are stale. */
  intervalMs: number;
  /** Most new jobs one pass creates (`--cleanup-max-per-pass`). */
  maxPerPass: number;
  /** The tend system namespace: never cleaned. */
  systemNamespace: string;
  /** `--protect-namespace` globs. */
  protectPatterns: readonly string[];
  /** Actions executors can carry out; a decision with another action stays dry-run (default: all). */
  supportedActions?: readonly CleanupAction[];
}

/** A session with a heartbeat (or any event) this recent keeps its environment active. */
export const sessionLiveMs = 2 * 60_000;
/** Inventories and executor heartbeats older than this many intervals are not trusted. */
export const staleIntervals = 3;
/** The breaker opens when more than this share of a project's active environments is due at once… */
export const breakerShare = 0.5;
/** …and at least this many. */
export const breakerMinimum = 3;

export interface SnapshotPolicy {
  afterMs: number;
  action: CleanupAction;
  /** As written in tend.yml, e.g. `8h`. */
  text: string;
  /** Working hours: asleep (paused) outside them. */
  schedule?: Schedule | null;
  /** `warnBefore` (default 1h) and `afterClose` (default 0) when the policy sets them. */
  warnBeforeMs?: number;
  afterCloseMs?: number;
}

/** The environment's pull request and what GitHub last said of it. */
export interface SnapshotPullRequest {
  repository: string;
  number: number;
  /** `open`, `closed`, `merged`, or null (no delivery yet). */
  state: string | null;
  /** Server time of the delivery that closed it (epoch ms). */
  closedAt: number | null;
}

/** Which rule of the policy a decision follows. */
export type DecisionRule = 'inactivity' | 'schedule';

/**
 * An environment used while its schedule has it asleep (a command resumed it) is paused again
 * after this long without activity.
 */
export const asleepGraceMs = 30 * 60_000;

export interface SnapshotEnvironment {
  id: string;
  project: string;
  name: string;
  namespace: string;
  protected: boolean;
  /** Epoch ms, or null. */
  keepAliveUntil: number | null;
  policy: SnapshotPolicy | null;
  /** Server receive time of the last activity (epoch ms). */
  lastActivityAt: number;
  /** `paused` by a pause job (until a resume); absent: active. */
  state?: 'active' | 'paused';
  /** Which rule paused it. */
  pausedBy?: DecisionRule | null;
  lastActivityCommand: string | null;
  lastActivityUser: string | null;
  lastActivityType: string | null;
  pullRequest?: SnapshotPullRequest | null;
}

export interface SnapshotResource {
  id: string;
  environmentId: string;
  plugin: string;
  /** The executor target serving it (`kubernetes/<clusterId>`, `local/<hostId>`). */
  targetKey: string;
  namespaceName: string;
  namespaceUid: string | null;
  role: 'app' | 'build' | 'system';
  ownership: 'owned' | 'adopted' | 'unknown';
  lastActivityAt: number | null;
  /** The namespace as the last inventory of its target saw it; null when absent from it. */
  item: SnapshotInventoryItem | null;
}

export interface SnapshotInventoryItem {
  uid: string;
  managedByTend: boolean;
  project: string | null;
  environment: string | null;
  role: string | null;
  adopted: boolean;
  lastActivityAt: number | null;
}

export interface SnapshotInventory {
  receivedAt: number;
  complete: boolean;
  lastCompleteAt: number | null;
}

export interface PlanSnapshot {
  /** Active environments with a cleanup policy, by id. */
  environments: Map<string, SnapshotEnvironment>;
  /** Their resources that are not missing. */
  resources: SnapshotResource[];
  /**
   * The same resources by environment id, when the loader has them grouped (the snapshot cache
   * does, with the same arrays for unchanged environments); else plan() groups them.
   */
  byEnvironment?: ReadonlyMap<string, readonly SnapshotResource[]>;
  /** Active environments per project (with or without a policy): the breaker's denominator. */
  activeEnvironments: Map<string, number>;
  inventories: Map<string, SnapshotInventory>;
  /** Last heartbeat of any executor serving the target (epoch ms). */
  executorsLastSeen: Map<string, number>;
  /** Environments with a running session: its last event or heartbeat (epoch ms). */
  runningSessions: Map<string, number>;
  /** Open (planned or executing) jobs by resource id. */
  openJobs: Map<string, { id: string; state: 'planned' | 'executing'; trigger?: string | null }>;
  /** Enforced policies by `policyKey(project, environment)`. */
  enforcedPolicies: Map<string, { afterMs: number; action: string }>;
  openBreakers: Set<string>;
  halted: boolean;
}

export interface Decision {
  kind: DecisionKind;
  reason: BlockReason | null;
  action: CleanupAction;
  environmentId: string;
  project: string;
  environment: string;
  resourceId: string;
  pluginName: string;
  targetKey: string;
  namespaceName: string;
  namespaceUid: string | null;
  /** When the action is (or was) due: activity + the policy's wait (epoch ms). */
  dueAt: number;
  /** The activity the decision is based on (epoch ms). */
  lastActivityAt: number;
  /** A scheduled decision's warning time (due time - warnBefore), else null. */
  warnAt: number | null;
  /** The rule that decided: the inactivity wait, or the working-hours schedule. */
  rule: DecisionRule;
  /** For people: "no activity since 10:02 UTC, policy 8h; last: tend build by alice". */
  readonly sentence: string;
  /**
   * True when `other` (a decision of an earlier pass) reads the same sentence, without building
   * either: a pass stores only the decisions that changed.
   */
  sameWordingAs(other: Decision): boolean;
  /** The open job for this resource, if one exists. */
  openJobId: string | null;
  /** A copy with another open job (or none). */
  withOpenJob(id: string | null): Decision;
}

export interface PlanResult {
  decisions: Decision[];
  /** `due` decisions without an open job: the jobs this pass creates (at most maxPerPass). */
  newJobs: Decision[];
  /** Breakers this pass opens. */
  breakersOpened: { project: string; dueCount: number; activeCount: number }[];
}

export const policyKey = (project: string, environment: string): string => `${project}\u0000${environment}`;

const actionRank: Record<string, number> = { resume: 0, pause: 1, delete: 2 };

/** True when `policy` asks for no more than what was enforced (no shorter wait, no harsher action). */
export function policyCovered(
  policy: { afterMs: number; action: string },
  enforced: { afterMs: number; action: string } | undefined,
): boolean {
  if (!enforced) return false;
  return (
    policy.afterMs >= enforced.afterMs &&
    (actionRank[policy.action] ?? 9) <= (actionRank[enforced.action] ?? -1)
  );
}

/** Reasons that hold whatever the time: shown as "never cleaned". */
const structuralReasons: ReadonlySet<BlockReason> = new Set([
  'system',
  'adopted',
  'not-owned',
  'protected-name',
  'protected',
]);

export type PlanMode =
  /** A planning pass: every check, the inactivity wait, dry-run, breaker and cap. */
  | 'policy'
  /** Clean up now: the same checks, only the inactivity wait (and the policy) skipped. */
  | 'now';

interface Context {
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

/** What the sentences of one environment's decisions are made of (shared by its resources). */
interface EnvironmentFacts {
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
type Wording =
  | 'due'
  | 'scheduled'
  | 'warning'
  | 'never'
  | 'due-but'
  | 'unsupported'
  | 'not-enforced'
  | 'stricter'
  | 'breaker-open'
  | 'breaker-opened'
  | 'cap-reached'
  | 'paused';

/**
 * A decision whose sentence is composed when first read, from data it holds (no closures: a
 * pass over 200,000 resources stores few new sentences, and building each would dominate it).
 */
class PlannedDecision implements Decision {
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
    readonly action: CleanupAction,
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
        return `kept alive until ${formatTime(env.keepAliveUntil ?? 0, today)}`;
      case 'no-executor':
        return `no live executor for ${this.targetKey}`;
      case 'inventory-partial':
        return `the last inventory of ${this.targetKey} was incomplete`;
      case 'inventory-stale':
        return `no recent complete inventory of ${this.targetKey}`;
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
      case 'warning':
        return this.facts.pullRequest
          ? `will be ${this.action === 'delete' ? 'deleted' : this.action + 'd'} at ${formatTime(this.dueAt, today)} (\`tend keep-alive\` to postpone) — ${this.base()}`
          : `will be ${this.action === 'delete' ? 'deleted' : this.action + 'd'} at ${formatTime(this.dueAt, today)} unless used (\`tend keep-alive\` to postpone); last activity ${formatTime(this.lastActivityAt, today)}, ${policyText(env)}; last: ${lastWhat(env, this.facts.activitySource)}`;
      case 'scheduled':
        if (this.facts.pullRequest) {
          return `${this.action === 'delete' ? 'deleted' : this.action + 'd'} at ${formatTime(this.dueAt, today)} — ${this.base()}`;
        }
        if (this.rule === 'schedule') {
          const schedule = env.policy!.schedule!;
          return `${this.action === 'resume' ? 'resumed' : 'paused'} at ${formatLocal(schedule, this.dueAt)} (${formatTime(this.dueAt, today)}) by the schedule (${describeSchedule(schedule)})${this.action === 'resume' ? '' : ' unless used'}; last activity ${formatTime(this.lastActivityAt, today)}`;
        }
        return `${this.action === 'delete' ? 'deleted' : this.action + 'd'} at ${formatTime(this.dueAt, today)} unless used; last activity ${formatTime(this.lastActivityAt, today)}, ${policyText(env)}; last: ${lastWhat(env, this.facts.activitySource)}`;
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
        return `due, but ${this.count} of ${this.total} active environments of ${p} are due at once: the circuit breaker opened (\`tend cleanup breaker reset --project ${p}\`) — ${this.base()}`;
      case 'cap-reached':
        return `due, but this pass reached its cap of ${this.count} — ${this.base()}`;
    }
  }
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

function lastActivityOf(
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

function lastWhat(env: SnapshotEnvironment, source: 'registry' | 'namespace'): string {
  if (source === 'namespace') return 'tend.dev/last-activity on the namespace';
  if (env.lastActivityCommand) {
    return `tend ${env.lastActivityCommand}${env.lastActivityUser ? ` by ${env.lastActivityUser}` : ''}`;
  }
  return env.lastActivityType ?? 'recorded';
}

/** Unknown is not idle: why nothing may be done on a target now (its executor, its inventory). */
function targetBlock(ctx: Context, targetKey: string): TargetBlock {
  let block = ctx.targetBlocks.get(targetKey);
  if (block !== undefined) return block;
  const { snapshot, staleBefore } = ctx;
  const seen = snapshot.executorsLastSeen.get(targetKey);
  const inventory = snapshot.inventories.get(targetKey);
  if (seen === undefined || seen < staleBefore) block = 'no-executor';
  else if (inventory && !inventory.complete) block = 'inventory-partial';
  else if (!inventory || inventory.lastCompleteAt === null || inventory.lastCompleteAt < staleBefore) {
    block = 'inventory-stale';
  } else block = null;
  ctx.targetBlocks.set(targetKey, block);
  return block;
}

type TargetBlock = 'no-executor' | 'inventory-partial' | 'inventory-stale' | null;

/**
 * Why a resource of this environment may not be acted on now, or undefined, in check order.
 * `why` is a fixed text; reasons with variable parts are worded by PlannedDecision.
 */
function blockOf(
  ctx: Context,
  env: SnapshotEnvironment,
  r: SnapshotResource,
): { reason: BlockReason; why?: string } | undefined {
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
  if (snapshot.halted) return { reason: 'halted', why: 'cleanup is halted (`tend cleanup resume`)' };
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
    return { reason: 'not-owned', why: 'the namespace was re-created (another uid)' };
  }
  if (item.role === 'system') return { reason: 'system', why: 'the namespace has role system' };
  if (item.adopted) return { reason: 'adopted', why: 'the namespace is marked adopted' };
  return undefined;
}

/**
 * What a planning pass keeps for the next (the planning service holds one across passes): each
 * environment's decisions before the pass-wide steps (breaker, cap), with what they were worked
 * out from. An environment is evaluated again only when one of those changed: its snapshot
 * objects (the snapshot cache keeps unchanged ones identical), its running session, the halt
 * switch, its project's breaker, its enforced policy, its resources' open jobs or their targets'
 * health, or the clock reached the next instant that could change a decision (a due or warning
 * time, a keep-alive's or session's end, a schedule's transition, midnight UTC). Otherwise its
 * settled decisions are the same objects as in the last pass, and the breaker and the cap settle
 * its candidates again (into the last pass's copy when they end the same way) — so a pass plans
 * exactly what a pass without the memo plans (property-tested). Every environment is still
 * visited once a pass; only the changed ones are worked out.
 */
export class PlanMemo {
  /** @internal */
  readonly entries = new Map<string, MemoEntry>();
  /** @internal The settings the entries were worked out with. */
  settings: PlannerSettings | undefined;
  /** @internal */
  pass = 0;
  /** Environments reused in the last pass (for the benchmark and tests). */
  reused = 0;
  /** @internal The small tables as the last pass read them, to tell what changed since. */
  last: SharedFacts | undefined;
}

/** The small tables of a snapshot an evaluation reads, in comparable form. */
interface SharedFacts {
  halted: boolean;
  breakers: ReadonlySet<string>;
  enforced: Map<string, string>;
  sessions: ReadonlyMap<string, number>;
  jobs: Map<string, string>;
  targets: Map<string, TargetBlock>;
}

/** What changed in the small tables since the last pass (all: nothing can be reused). */
interface Changes {
  all: boolean;
  projects: Set<string>;
  policies: Set<string>;
  sessions: Set<string>;
  jobs: Set<string>;
  targets: Set<string>;
  /** False when every set is empty: no per-environment lookups needed. */
  any: boolean;
}

function sharedFacts(ctx: Context): SharedFacts {
  const { snapshot } = ctx;
  const enforced = new Map<string, string>();
  for (const [key, p] of snapshot.enforcedPolicies) enforced.set(key, `${p.afterMs} ${p.action}`);
  const jobs = new Map<string, string>();
  for (const [id, j] of snapshot.openJobs) jobs.set(id, `${j.id}\u0000${j.state}\u0000${j.trigger ?? ''}`);
  // Every target the tables name (one that leaves them changes to "no executor": changedKeys
  // sees it gone); a target they never named has had no executor all along.
  const targets = new Map<string, TargetBlock>();
  for (const key of snapshot.executorsLastSeen.keys()) targets.set(key, targetBlock(ctx, key));
  for (const key of snapshot.inventories.keys()) targets.set(key, targetBlock(ctx, key));
  return {
    halted: snapshot.halted,
    breakers: new Set(snapshot.openBreakers),
    enforced,
    sessions: new Map(snapshot.runningSessions),
    jobs,
    targets,
  };
}

/** The keys whose values differ between two maps (present in one only included). */
function changedKeys<V>(a: ReadonlyMap<string, V>, b: ReadonlyMap<string, V>, into: Set<string>): void {
  for (const [key, value] of a) if (b.get(key) !== value) into.add(key);
  for (const key of b.keys()) if (!a.has(key)) into.add(key);
}

function changesSince(last: SharedFacts | undefined, now: SharedFacts): Changes {
  const changes: Changes = {
    all: !last || last.halted !== now.halted,
    projects: new Set(),
    policies: new Set(),
    sessions: new Set(),
    jobs: new Set(),
    targets: new Set(),
    any: false,
  };
  if (!last || changes.all) return changes;
  for (const p of now.breakers) if (!last.breakers.has(p)) changes.projects.add(p);
  for (const p of last.breakers) if (!now.breakers.has(p)) changes.projects.add(p);
  changedKeys(now.enforced, last.enforced, changes.policies);
  changedKeys(now.sessions, last.sessions, changes.sessions);
  changedKeys(now.jobs, last.jobs, changes.jobs);
  changedKeys(now.targets, last.targets, changes.targets);
  changes.any =
    changes.projects.size +
      changes.policies.size +
      changes.sessions.size +
      changes.jobs.size +
      changes.targets.size >
    0;
  return changes;
}

/** Of a memo entry's decisions: settled, or a candidate for the pass-wide steps. */
const enum Role {
  Settled,
  DeleteCandidate,
  OtherCandidate,
}

interface Evaluation {
  decisions: PlannedDecision[];
  roles: Role[];
  /** The first instant after `now` at which a decision of it could read otherwise. */
  validUntil: number;
}

interface MemoEntry extends Evaluation {
  env: SnapshotEnvironment;
  resources: readonly SnapshotResource[];
  pass: number;
}

function sameResources(a: readonly SnapshotResource[], b: readonly SnapshotResource[]): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * The memo's evaluation of the environment, if nothing it was worked out from has changed: the
 * entry was checked (or made) in every pass since, so only this pass's changes can touch it.
 */
function reusable(
  ctx: Context,
  changes: Changes,
  entry: MemoEntry | undefined,
  env: SnapshotEnvironment,
  resources: readonly SnapshotResource[],
): Evaluation | undefined {
  if (
    !entry ||
    entry.env !== env ||
    ctx.now >= entry.validUntil ||
    !sameResources(entry.resources, resources)
  ) {
    return undefined;
  }
  if (!changes.any) return entry;
  if (changes.projects.has(env.project) || changes.sessions.has(env.id)) return undefined;
  if (changes.policies.size > 0 && changes.policies.has(policyKey(env.project, env.name))) return undefined;
  for (const r of resources) {
    if (changes.jobs.has(r.id) || changes.targets.has(r.targetKey)) return undefined;
  }
  return entry;
}

/** The first UTC midnight after `now`: sentences name the day of times not on `now`'s. */
function nextMidnight(now: number): number {
  const day = 86_400_000;
  return Math.floor(now / day) * day + day;
}

/**
 * Plans every resource of the snapshot's environments. `only` restricts to some environments;
 * mode `now` skips the inactivity wait and the policy (clean up now). `memo` (policy mode, all
 * environments) carries evaluations from the last pass to this one (see PlanMemo).
 */
export function plan(
  snapshot: PlanSnapshot,
  now: number,
  settings: PlannerSettings,
  options: { mode?: PlanMode; only?: ReadonlySet<string>; action?: CleanupAction; memo?: PlanMemo } = {},
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

  for (const [envId, resources] of byEnvironment) {
    const env = snapshot.environments.get(envId);
    if (!env || (mode === 'policy' && !env.policy) || resources.length === 0) continue;
    const entry = memo?.entries.get(envId);
    let evaluation = memo ? reusable(ctx, changes!, entry, env, resources) : undefined;
    if (evaluation) {
      entry!.pass = memo!.pass;
      memo!.reused++;
    } else {
      evaluation = evaluate(ctx, env, resources, scheduleFacts, options.action);
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
  return { decisions, newJobs, breakersOpened };
}

/** What the breaker or the cap made of a candidate. */
interface Outcome {
  wording: 'breaker-opened' | 'cap-reached';
  count: number;
  total: number;
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

/**
 * One environment's decisions before the pass-wide steps: each settled (never, paused,
 * scheduled, blocked, dry-run) or a candidate for the breaker (deletes) and the cap.
 */
function evaluate(
  ctx: Context,
  env: SnapshotEnvironment,
  resources: readonly SnapshotResource[],
  scheduleFacts: (schedule: Schedule) => ScheduleFacts,
  nowAction: CleanupAction | undefined,
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
  const block = blockOf(ctx, env, r);
  if (block && structuralReasons.has(block.reason)) {
    decision.block(block.reason, 'never', block.why);
    return Role.Settled;
  }
  if (paused) {
    decision.block('paused', 'paused');
    return Role.Settled;
  }
  if (dueAt > now) {
    decision.kind = 'scheduled';
    decision.warnAt = warnAtOf(env, dueAt);
    until(decision.warnAt);
    decision.wording = decision.warnAt <= now ? 'warning' : 'scheduled';
    return Role.Settled;
  }
  if (block) {
    decision.block(block.reason, 'due-but', block.why);
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
    decision.wording = enforced ? 'stricter' : 'not-enforced';
    return Role.Settled;
  }
  // The breaker guards against mass deletion; pause and resume are undone exactly (and a
  // schedule puts a whole project to sleep at once by design). The cap holds for all.
  if (action !== 'delete') return Role.OtherCandidate;
  if (snapshot.openBreakers.has(env.project)) {
    decision.block('breaker-open', 'breaker-open');
    return Role.Settled;
  }
  return Role.DeleteCandidate;
}

interface NextStep {
  action: CleanupAction;
  rule: DecisionRule;
  /** When it is (or was) due. */
  dueAt: number;
  /** Paused, and nothing but a use (or `tend resume`) resumes it. */
  paused: boolean;
}

const stepRank: Record<CleanupAction, number> = { resume: 0, pause: 1, delete: 2 };

/**
 * What the policy does next to an environment (docs/cleanup.md#schedules): the inactivity rule
 * (its action after the wait) and the schedule (paused at sleepAt — or, used while asleep, after
 * `asleepGraceMs` idle — and resumed at wakeAt if the schedule paused it). Of the rules that are
 * due, the harshest action wins (delete over pause), then the earlier; when none is due, the
 * soonest.
 */
interface ScheduleFacts {
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
