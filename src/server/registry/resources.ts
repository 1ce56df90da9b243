/**
 * The resource model: what a namespaceStatus event means for an environment's resources. A
 * resource is one namespace of one plugin on one target; a namespace deleted and re-created
 * (a new uid) starts a new generation; ownership says whether tend created it, adopted it or
 * only saw it. An environment is `cleaned` once every resource of its own is missing.
 */
import { newId } from '../../events/bus.js';
import type { NamespaceStatusPayload, TendEvent } from '../../events/catalog.js';
import type { EnvironmentRow, ResourceCounts } from '../db/repositories/registry.js';
import type { Ownership, Resource } from '../db/schema.js';
import { targetKey } from '../../cleanup/targets.js';
import { takenBefore } from './order.js';

/**
 * The resource sets of these environments: the latest generation of each resource a batch
 * names (`latest`), over the counts of all their stored resources (`counts`, by environment id).
 */
export function resourceSets(
  latest: readonly Resource[],
  counts: ReadonlyMap<string, ResourceCounts>,
): Map<string, ResourceSet> {
  const out = new Map<string, ResourceSet>();
  for (const [environmentId, c] of counts) out.set(environmentId, new ResourceSet(c));
  for (const r of latest) {
    let set = out.get(r.environment_id);
    if (!set) out.set(r.environment_id, (set = new ResourceSet()));
    set.add(r);
  }
  return out;
}

/**
 * An environment is `cleaned` when it has resources and all of them (other than shared system
 * namespaces, which are never its own) are missing; otherwise `active` — or still `paused`: only
 * a resume (a resume job, or a command that resumes it) wakes a paused environment.
 */
export function setEnvironmentState(row: EnvironmentRow, { total, live }: ResourceCounts, now: string): void {
  if (total > 0 && live === 0) {
    row.state = 'cleaned';
    row.cleaned_at ??= now;
  } else {
    if (row.state !== 'paused') row.state = 'active';
    row.cleaned_at = null;
  }
}

/** What a resource adds to its environment's counts. */
function countsOf(r: Resource): ResourceCounts {
  const own = r.role === 'system' ? 0 : 1;
  return { total: own, live: r.state === 'missing' ? 0 : own };
}

/**
 * What an event proves about who created the namespace. Only a `created` event carrying the uid
 * proves tend created it: labels and annotations (which anyone can write, and which `detail`
 * repeats) never do, so a namespace first seen already existing is never owned, whatever it
 * carries. Adoption, once reported, stays. A claim the server's own records contradict — the
 * uid recorded before by another environment's record, or listed unrecorded by an inventory —
 * is no proof either: the namespace existed before the claiming session, so it is adopted.
 */
function ownershipOf(
  p: NamespaceStatusPayload,
  previous: Ownership | undefined,
  disputed: (p: NamespaceStatusPayload) => boolean,
): Ownership {
  if (previous === 'adopted' || p.detail?.adopted === true) return 'adopted';
  if (p.cause === 'created' && p.namespaceUid !== undefined && p.state !== 'missing') {
    // A claim already proven (a late replay of the creating session) keeps its proof.
    if (previous !== 'owned' && disputed(p)) return 'adopted';
    return 'owned';
  }
  return previous ?? 'unknown';
}

/**
 * The resources of one environment in memory: the latest generation of the resources a batch
 * names, as stored, and the rows the batch adds; the rest of the environment's resources (older
 * generations, other namespaces) only as counts — a namespace re-created 10,000 times costs a
 * batch no more than one re-created once.
 */
export class ResourceSet {
  private readonly rows: Resource[] = [];
  private readonly latest = new Map<string, Resource>();
  /** The counts of the stored resources not in `rows`. */
  private readonly others: ResourceCounts;

  /** `stored`: the counts of all the environment's stored resources (none: a new environment). */
  constructor(stored: ResourceCounts = { total: 0, live: 0 }) {
    this.others = { ...stored };
  }

  private static identity(plugin: string, targetKey: string, namespaceName: string): string {
    return JSON.stringify([plugin, targetKey, namespaceName]);
  }

  /** A stored row (the latest generation of its resource); its counts move from `others` to it. */
  add(r: Resource): void {
    const c = countsOf(r);
    this.others.total -= c.total;
    this.others.live -= c.live;
    this.keep(r);
  }

  private keep(r: Resource): void {
    this.rows.push(r);
    const id = ResourceSet.identity(r.plugin, r.target_key, r.namespace_name);
    const current = this.latest.get(id);
    if (!current || r.generation > current.generation) this.latest.set(id, r);
  }

  /** The counts of every resource of the environment, stored or new, as they are now. */
  counts(): ResourceCounts {
    const out = { ...this.others };
    for (const r of this.rows) {
      const c = countsOf(r);
      out.total += c.total;
      out.live += c.live;
    }
    return out;
  }

  /**
   * One namespaceStatus applied to the environment's resources; returns the rows it changed. The
   * resource is identified by (plugin, target, namespace name); a namespace uid different from
   * the one recorded means the namespace was deleted and re-created: the old generation is marked
   * missing and a new row (generation + 1) starts. Without a uid the event applies to the latest
   * generation. An event its host took before the last one applied to the latest generation (a
   * late replay) changes nothing: it would move the record backwards.
   */
  apply(
    environmentId: string,
    e: TendEvent<'namespaceStatus'>,
    now: string,
    /** False for a read-only command's event: a `ready` it reports is not activity. */
    activity = true,
    /** Whether the server's records contradict the event's claim that tend created its namespace. */
    disputed: (p: NamespaceStatusPayload) => boolean = () => false,
    /**
     * The start of the event's session (its sessionStarted's `timestamp`), if known: a claim
     * that makes the resource owned records its window, from there to `now` (a claim of a
     * session never seen starting opens it at `now`).
     */
    sessionStartedAt: string | null = null,
  ): Resource[] {
    const p = e.payload;
    const tkey = targetKey(p.target);
    const uid = p.namespaceUid ?? null;
    const current = this.latest.get(ResourceSet.identity(p.pluginName, tkey, p.namespaceName));
    if (
      current &&
      takenBefore(e.sequence, { counter: current.sequence_counter, number: current.sequence_number })
    ) {
      return [];
    }
    const sequence = {
      sequence_counter: e.sequence?.counter ?? null,
      sequence_number: e.sequence?.number ?? null,
    };
    const recreated = current && uid && current.namespace_uid && current.namespace_uid !== uid;
    if (current && !recreated) {
      current.namespace_uid = current.namespace_uid ?? uid;
      current.provider = p.providerName;
      current.role = p.role;
      const ownership = ownershipOf(p, current.ownership, disputed);
      if (ownership === 'owned' && current.ownership !== 'owned') {
        current.claim_started_at = sessionStartedAt ?? now;
        current.claim_received_at = now;
      }
      current.ownership = ownership;
      current.state = p.state;
      current.last_cause = p.cause;
      current.detail = p.detail ? JSON.stringify(p.detail) : current.detail;
      current.last_seen_at = now;
      current.last_activity_at = p.state === 'ready' && activity ? now : current.last_activity_at;
      current.missing_since = p.state === 'missing' ? (current.missing_since ?? now) : null;
      // An event without a sequence (an older client) leaves the last one known.
      if (e.sequence) Object.assign(current, sequence);
      return [current];
    }
    const changed: Resource[] = [];
    if (current && recreated && current.state !== 'missing') {
      current.state = 'missing';
      current.missing_since = now;
      current.last_seen_at = now;
      if (e.sequence) Object.assign(current, sequence);
      changed.push(current);
    }
    const ownership = ownershipOf(p, undefined, disputed);
    const next: Resource = {
      id: newId(),
      environment_id: environmentId,
      plugin: p.pluginName,
      provider: p.providerName,
      target_kind: p.target.kind,
      target: JSON.stringify(p.target),
      target_key: tkey,
      namespace_name: p.namespaceName,
      namespace_uid: uid,
      generation: (current?.generation ?? 0) + 1,
      role: p.role,
      ownership,
      state: p.state,
      last_cause: p.cause,
      detail: p.detail ? JSON.stringify(p.detail) : null,
      first_seen_at: now,
      last_seen_at: now,
      last_activity_at: p.state === 'ready' && activity ? now : null,
      missing_since: p.state === 'missing' ? now : null,
      ...sequence,
      claim_started_at: ownership === 'owned' ? (sessionStartedAt ?? now) : null,
      claim_received_at: ownership === 'owned' ? now : null,
    };
    this.keep(next);
    changed.push(next);
    return changed;
  }
}
