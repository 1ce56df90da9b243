/**
 * The planner's memo: what one planning pass keeps for the next, so that only environments
 * whose inputs changed (or whose next instant of change has come) are worked out again.
 */
import {
  namespaceKey,
  policyKey,
  type PlannerSettings,
  type SnapshotEnvironment,
  type SnapshotResource,
} from './types.js';
import { targetBlock, type Context, type Evaluation, type TargetBlock } from './rules.js';
import type { PlannedDecision } from './wording.js';

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
  /** What changed since the last pass (set by `begin`). */
  private changes: Changes | undefined;

  /** Starts a pass: all is forgotten when the settings changed, else what changed since is noted. */
  begin(ctx: Context): void {
    if (this.settings !== ctx.settings) {
      this.entries.clear();
      this.last = undefined;
      this.settings = ctx.settings;
    }
    const facts = sharedFacts(ctx);
    this.changes = changesSince(this.last, facts);
    this.last = facts;
    if (this.changes.all) this.entries.clear();
    this.pass++;
    this.reused = 0;
  }

  /** The last pass's evaluation of the environment, if nothing it was worked out from changed. */
  recall(
    ctx: Context,
    envId: string,
    env: SnapshotEnvironment,
    resources: readonly SnapshotResource[],
  ): Evaluation | undefined {
    const entry = this.entries.get(envId);
    if (!reusable(ctx, this.changes!, entry, env, resources)) return undefined;
    entry!.pass = this.pass;
    this.reused++;
    return entry;
  }

  /** Keeps an evaluation this pass worked out for the next. */
  remember(
    envId: string,
    env: SnapshotEnvironment,
    resources: readonly SnapshotResource[],
    evaluation: Evaluation,
  ): void {
    this.entries.set(envId, { ...evaluation, env, resources, pass: this.pass });
  }

  /** Ends a pass: environments it did not visit are gone. */
  end(): void {
    for (const [id, entry] of this.entries) if (entry.pass !== this.pass) this.entries.delete(id);
  }

  /**
   * A candidate as this pass settles it, leaving the memo's own unsettled: the last pass's copy
   * when it ends the same way (so an unchanged decision is the same object as stored), a new
   * copy otherwise — always for a new job (the pass records its job on it).
   */
  settled(candidate: PlannedDecision, newJob: boolean): PlannedDecision {
    const { outcome } = candidate;
    const last = newJob ? undefined : candidate.settledCopy;
    if (last && last.endsAs(outcome)) return last;
    const result = candidate.clone();
    result.settle(outcome);
    candidate.settledCopy = newJob ? undefined : result;
    return result;
  }
}

/** The small tables of a snapshot an evaluation reads, in comparable form. */
export interface SharedFacts {
  halted: boolean;
  breakers: ReadonlySet<string>;
  enforced: Map<string, string>;
  sessions: ReadonlyMap<string, number>;
  jobs: Map<string, string>;
  targets: Map<string, TargetBlock>;
  /** The holders of shared namespaces, each namespace's in comparable form. */
  holders: Map<string, string>;
}

/** What changed in the small tables since the last pass (all: nothing can be reused). */
interface Changes {
  all: boolean;
  projects: Set<string>;
  policies: Set<string>;
  sessions: Set<string>;
  jobs: Set<string>;
  targets: Set<string>;
  /** Shared namespaces whose holders changed (namespaceKey). */
  holders: Set<string>;
  /** False when every set is empty: no per-environment lookups needed. */
  any: boolean;
}

function sharedFacts(ctx: Context): SharedFacts {
  const { snapshot } = ctx;
  const enforced = new Map<string, string>();
  for (const [key, p] of snapshot.enforcedPolicies) {
    enforced.set(key, `${p.afterMs} ${p.action} ${p.afterCloseMs ?? ''} ${p.schedule ?? ''}`);
  }
  const jobs = new Map<string, string>();
  for (const [id, j] of snapshot.openJobs) jobs.set(id, `${j.id}\u0000${j.state}\u0000${j.trigger ?? ''}`);
  // Every target the tables name (one that leaves them changes to "no executor": changedKeys
  // sees it gone); a target they never named has had no executor all along.
  const targets = new Map<string, TargetBlock>();
  for (const key of snapshot.executorsLastSeen.keys()) targets.set(key, targetBlock(ctx, key));
  for (const key of snapshot.inventories.keys()) targets.set(key, targetBlock(ctx, key));
  const holders = new Map<string, string>();
  for (const [key, list] of snapshot.holders ?? []) {
    holders.set(
      key,
      list
        .map(
          (h) =>
            `${h.environmentId} ${h.project} ${h.name} ${h.protected} ${h.keepAliveUntil} ${h.lastActivityAt} ${h.afterMs} ${h.sessionAt}`,
        )
        .join('\u0000'),
    );
  }
  return {
    halted: snapshot.halted,
    breakers: new Set(snapshot.openBreakers),
    enforced,
    sessions: new Map(snapshot.runningSessions),
    jobs,
    targets,
    holders,
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
    holders: new Set(),
    any: false,
  };
  if (!last || changes.all) return changes;
  for (const p of now.breakers) if (!last.breakers.has(p)) changes.projects.add(p);
  for (const p of last.breakers) if (!now.breakers.has(p)) changes.projects.add(p);
  changedKeys(now.enforced, last.enforced, changes.policies);
  changedKeys(now.sessions, last.sessions, changes.sessions);
  changedKeys(now.jobs, last.jobs, changes.jobs);
  changedKeys(now.targets, last.targets, changes.targets);
  changedKeys(now.holders, last.holders, changes.holders);
  changes.any =
    changes.projects.size +
      changes.policies.size +
      changes.sessions.size +
      changes.jobs.size +
      changes.targets.size +
      changes.holders.size >
    0;
  return changes;
}

export interface MemoEntry extends Evaluation {
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
    if (changes.holders.size > 0 && changes.holders.has(namespaceKey(r.targetKey, r.namespaceName)))
      return undefined;
  }
  return entry;
}
