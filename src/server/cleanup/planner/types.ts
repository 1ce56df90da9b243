/**
 * The planner's vocabulary: what a planning pass reads (the snapshot of the registry, the
 * settings) and what it returns (decisions and the jobs to create), with the constants its rules
 * use. No logic beyond the policy comparison `enforce` and the planner share.
 */
import type { BlockReason, DecisionKind } from '../../../cleanup/decisions.js';
import type { PlannedAction } from '../../../cleanup/protocol.js';
import type { Schedule } from '../../../cleanup/schedule.js';

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
  supportedActions?: readonly PlannedAction[];
}

/** A session with a heartbeat (or any event) this recent keeps its environment active. */
export const sessionLiveMs = 2 * 60_000;
/** Inventories and executor heartbeats older than this many intervals are not trusted. */
export const staleIntervals = 3;
/** The breaker opens when more than this share of a project's environments with namespaces under an enforced policy is due at once… */
export const breakerShare = 0.5;
/** …and at least this many. */
export const breakerMinimum = 3;

export interface SnapshotPolicy {
  afterMs: number;
  action: PlannedAction;
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
  /**
   * The window of the claim that made it owned (ms): its session's start, by the client's clock,
   * and the server's receipt of the claim. Left out when unknown, or when its item does not say
   * when it was created.
   */
  claim?: { startedAt: number; receivedAt: number };
}

export interface SnapshotInventoryItem {
  uid: string;
  managedByTend: boolean;
  project: string | null;
  environment: string | null;
  role: string | null;
  adopted: boolean;
  lastActivityAt: number | null;
  /**
   * The uid listed is that of an earlier generation of the namespace in the record: tend
   * re-created it (a `tend restore`, a deploy after a deletion) after the last inventory.
   */
  earlierGeneration?: boolean;
  /** When the target created it (ms, the target's clock), when the item says and it matters. */
  createdAt?: number;
}

export interface SnapshotInventory {
  receivedAt: number;
  complete: boolean;
  lastCompleteAt: number | null;
  /** The server's clock less the target's when the last inventory came; null or left out: no time attested. */
  clockOffsetMs?: number | null;
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
  /**
   * The breaker's denominator per project: environments with namespaces under an enforced
   * policy (the ones cleanup could delete; others must not dilute the share due at once).
   */
  activeEnvironments: Map<string, number>;
  inventories: Map<string, SnapshotInventory>;
  /** Last heartbeat of any executor serving the target (epoch ms). */
  executorsLastSeen: Map<string, number>;
  /** Environments with a running session: its last event or heartbeat (epoch ms). */
  runningSessions: Map<string, number>;
  /** Open (planned or executing) jobs by resource id. */
  openJobs: Map<string, { id: string; state: 'planned' | 'executing'; trigger?: string | null }>;
  /** Enforced policies by `policyKey(project, environment)`. */
  enforcedPolicies: Map<string, EnforcedPolicy>;
  openBreakers: Set<string>;
  halted: boolean;
  /**
   * Every active environment record holding a namespace that more than one record holds (with
   * a policy or not), by `namespaceKey`: a namespace is due only when none of them keeps it.
   */
  holders?: ReadonlyMap<string, readonly NamespaceHolder[]>;
}

/** One environment record holding a namespace, as far as keeping the namespace goes. */
export interface NamespaceHolder {
  environmentId: string;
  project: string;
  name: string;
  protected: boolean;
  keepAliveUntil: number | null;
  /** Its latest activity (epoch ms): the environment's, its resource's or the namespace annotation's. */
  lastActivityAt: number;
  /** Its policy's wait; null: it has no policy (nothing says when it is idle). */
  afterMs: number | null;
  /** Its running session's last sign of life (epoch ms), if any. */
  sessionAt: number | null;
}

/** The key of a namespace on its resource's target (the same for every record holding it). */
export const namespaceKey = (resourceTargetKey: string, namespaceName: string): string =>
  `${resourceTargetKey}\u0000${namespaceName}`;

export interface Decision {
  kind: DecisionKind;
  reason: BlockReason | null;
  action: PlannedAction;
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
  /** When the schedule decided: the due time in its time zone (`2026-03-30 19:00 +02:00 Europe/Berlin`). */
  readonly dueLocal: string | null;
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
  /** Environments the planner could not work out (an error): left out of this pass, with why. */
  unplanned: { environmentId: string; project: string; name: string; message: string }[];
}

export const policyKey = (project: string, environment: string): string => `${project}\u0000${environment}`;

const actionRank: Record<string, number> = { resume: 0, pause: 1, delete: 2 };

/** What an administrator enforced for an environment name: every rule of its policy. */
export interface EnforcedPolicy {
  afterMs: number;
  action: string;
  /** The enforced `afterClose`; null: the enforced policy had none. */
  afterCloseMs: number | null;
  /** The enforced schedule (`scheduleKey`); null: none. */
  schedule: string | null;
}

/** A schedule as enforcement compares it: its rules in a fixed order. */
export function scheduleKey(schedule: Schedule): string {
  return JSON.stringify([
    schedule.sleepAt,
    schedule.wakeAt,
    [...schedule.weekdays].sort(),
    schedule.timeZone,
  ]);
}

/**
 * True when `policy` asks for nothing the enforced one did not: no shorter wait, no harsher
 * action, no `afterClose` that was not enforced (or shorter), no schedule other than the enforced
 * one. Every rule that can make an environment due is compared; a policy that adds or tightens
 * one runs as a dry-run until enforced. (`warnBefore` changes only when people are warned.)
 */
export function policyCovered(
  policy: { afterMs: number; action: string; afterCloseMs?: number; schedule?: Schedule | null },
  enforced: EnforcedPolicy | undefined,
): boolean {
  if (!enforced) return false;
  if (policy.afterMs < enforced.afterMs) return false;
  if ((actionRank[policy.action] ?? 9) > (actionRank[enforced.action] ?? -1)) return false;
  if (policy.afterCloseMs !== undefined) {
    if (enforced.afterCloseMs === null || policy.afterCloseMs < enforced.afterCloseMs) return false;
  }
  if (policy.schedule && scheduleKey(policy.schedule) !== enforced.schedule) return false;
  return true;
}

export type PlanMode =
  /** A planning pass: every check, the inactivity wait, dry-run, breaker and cap. */
  | 'policy'
  /** Clean up now: the same checks, only the inactivity wait (and the policy) skipped. */
  | 'now';
