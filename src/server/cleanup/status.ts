/**
 * The state of cleanup as people see it — halt switch, last pass, open breakers, executors,
 * inventories held back as suspect and unrecorded namespaces — read once for both `GET /api/v1/cleanup/status` and the dashboard's
 * Cleanup page (a reader sees only the breakers and namespaces of the projects it sees); and the
 * gauges `/metrics` reports of it.
 */
import type { PassOutcome } from '../../api/cleanup.js';
import { canSee, type VisibleProjects } from '../db/visible-projects.js';
import type { CleanupControlRepository } from '../db/repositories/cleanup-control.js';
import type { CleanupDecisionRepository } from '../db/repositories/cleanup-decisions.js';
import type { CleanupInventoryRepository } from '../db/repositories/cleanup-inventories.js';
import type { CleanupGauges } from '../metrics.js';

export interface CleanupStatus {
  halted: boolean;
  haltedBy: string | null;
  haltedAt: string | null;
  lastPassAt: string | null;
  lastPassMs: number | null;
  /** How the last pass ended (`ok`, `partial`, `failed`, `skipped`); null: none yet. */
  lastPassOutcome: PassOutcome | null;
  /** Why it was not `ok`. */
  lastPassNote: string | null;
  breakers: { project: string; openedAt: string; due: number; active: number }[];
  executors: {
    id: string;
    name: string;
    kind: string;
    version: string;
    targetKey: string;
    pluginName: string;
    description: string;
    lastSeenAt: string;
  }[];
  /** Targets whose last complete inventory was held back: it would have marked too much missing. */
  suspectInventories: {
    targetKey: string;
    pluginName: string;
    reason: string;
    since: string;
    lastSeenAt: string;
    wouldMarkMissing: number;
    recorded: number;
  }[];
  unrecorded: {
    targetKey: string;
    namespace: string;
    uid: string;
    phase: string;
    project: string | null;
    environment: string | null;
    environmentId: string | null;
    /** What its plugin says of it (a path, …). */
    detail: Record<string, string>;
    firstSeenAt: string;
    lastSeenAt: string;
  }[];
}

export async function cleanupStatus(
  cleanup: { control: CleanupControlRepository; inventories: CleanupInventoryRepository },
  visible: VisibleProjects,
  unrecordedLimit?: number,
): Promise<CleanupStatus> {
  const [control, breakers, executors, suspect, unrecorded] = await Promise.all([
    cleanup.control.control(),
    cleanup.control.breakers(),
    cleanup.inventories.executors(),
    cleanup.inventories.suspectInventories(),
    cleanup.inventories.unrecordedNamespaces(unrecordedLimit),
  ]);
  return {
    halted: Boolean(control.halted),
    haltedBy: control.halted_by,
    haltedAt: control.halted_at,
    lastPassAt: control.last_pass_at,
    lastPassMs: control.last_pass_ms === null ? null : Number(control.last_pass_ms),
    lastPassOutcome: (control.last_pass_outcome as PassOutcome | null) ?? null,
    lastPassNote: control.last_pass_note ?? null,
    breakers: breakers
      .filter((b) => canSee(visible, b.project))
      .map((b) => ({
        project: b.project,
        openedAt: b.opened_at,
        due: Number(b.due_count),
        active: Number(b.active_count),
      })),
    executors: executors.map((e) => ({
      id: e.id,
      name: e.name,
      kind: e.kind,
      version: e.version,
      targetKey: e.target_key,
      pluginName: e.plugin,
      description: e.description,
      lastSeenAt: e.last_seen_at,
    })),
    // Per target, like executors: a project-bound reader sees them too (counts, no names).
    suspectInventories: suspect.map((i) => ({
      targetKey: i.target_key,
      pluginName: i.plugin,
      reason: i.suspect_reason!,
      since: i.suspect_since!,
      lastSeenAt: i.received_at,
      wouldMarkMissing: Number(i.suspect_missing),
      recorded: Number(i.suspect_recorded),
    })),
    unrecorded: unrecorded
      .filter((u) => visible === 'all' || (u.project !== null && canSee(visible, u.project)))
      .map((u) => ({
        targetKey: u.target_key,
        namespace: u.namespace_name,
        uid: u.uid,
        phase: u.phase,
        project: u.project,
        environment: u.environment,
        environmentId: u.environment_id,
        detail: u.detail === null ? {} : (JSON.parse(u.detail) as Record<string, string>),
        firstSeenAt: u.first_seen_at,
        lastSeenAt: u.seen_at,
      })),
  };
}

/** Gauges for /metrics, read at scrape time so every replica reports the same. */
export async function cleanupGauges(
  cleanup: {
    control: CleanupControlRepository;
    decisions: CleanupDecisionRepository;
    inventories: CleanupInventoryRepository;
  },
  now: Date,
): Promise<CleanupGauges> {
  const [blocked, breakers, executors, control] = await Promise.all([
    cleanup.decisions.blockedCounts(),
    cleanup.control.breakers(),
    cleanup.inventories.executors(),
    cleanup.control.control(),
  ]);
  const executorsLastSeen: Record<string, number> = {};
  for (const e of executors) {
    const age = (now.getTime() - Date.parse(e.last_seen_at)) / 1000;
    executorsLastSeen[e.target_key] = Math.min(executorsLastSeen[e.target_key] ?? Infinity, age);
  }
  return {
    blocked,
    breakers: breakers.map((b) => b.project),
    executorsLastSeen,
    lastPassOutcome: control.last_pass_outcome ?? null,
  };
}
