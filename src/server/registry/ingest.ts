/**
 * Ingest: a validated batch of events becomes stored events and changes to the registry of
 * environments, sessions and resources — in one transaction, exactly once per event id.
 *
 * Set-based: a fixed number of statements per batch whatever its size and mix. The sessions,
 * environments and resources the batch touches are read with one query each; the events are
 * applied in memory in the order of the batch; everything is written back with one multi-row
 * insert or upsert per table — on PostgreSQL all of them in one statement, so a batch costs five
 * round trips (six with namespace events on known environments).
 *
 * Exactly once, also across replicas on PostgreSQL:
 * - the environments a batch touches are read `FOR UPDATE`, in key order (no deadlock between
 *   two batches); every write to an environment's resources happens under that row lock, so
 *   reading them, changing them in memory and writing them back loses no concurrent change;
 * - the events insert (`ON CONFLICT (id) DO NOTHING`, sorted by id) decides whether the write
 *   stands: a replica inserting the same event at the same moment waits on the primary key until
 *   the other commits, then sees a conflict. When none of the batch's events is new (a re-sent
 *   batch), the transaction is rolled back: nothing changes. When only some are, it starts again,
 *   first reading which events are stored, and applies the rest;
 * - an environment created by another replica at the same moment makes the insert of ours
 *   fail on the unique (project, name, namespace): the transaction is retried and finds it.
 * On SQLite, one connection runs one transaction at a time: no other writer can interleave. The
 * batches that arrive while one is written are written together, each in a savepoint, with one
 * commit (db/group-commit.ts): a batch that is refused or retried is rolled back alone.
 *
 * Activity time is the server's receive time of the batch, never the client's clock.
 *
 * Here: the transaction and its retries. What the events mean is plan.ts and resources.ts; the
 * SQL is src/server/db/ (bulk.ts, repositories/registry.ts).
 */
import type { Kysely, Transaction } from 'kysely';
import type { NamespaceStatusPayload, TendEvent } from '../../events/catalog.js';
import { byKey, BulkStatements } from '../db/bulk.js';
import type { DialectName } from '../db/dialect.js';
import { GroupCommit } from '../db/group-commit.js';
import { fromWire, type IngestResult, type WireEvents } from '../db/event-wire.js';
import {
  environmentRows,
  environmentsUpsert,
  eventRow,
  eventsInsert,
  loadEnvironments,
  loadStoredResources,
  uidRecords,
  loadSessions,
  projectsInsert,
  resourceRows,
  resourcesUpsert,
  sessionRows,
  sessionsUpsert,
  storedEventIds,
  type EnvironmentRow,
  type ResourceIdentity,
  type UidRecord,
} from '../db/repositories/registry.js';
import type { Database, Resource } from '../db/schema.js';
import { targetKey } from '../../cleanup/targets.js';
import { environmentKey } from './keys.js';
import { sessionOwners } from './ownership.js';
import { applyTouch, knownSessions, newEnvironment, planBatch, type EnvironmentTouch } from './plan.js';
import { ResourceSet, resourceSets, setEnvironmentState } from './resources.js';

/**
 * This module as a task of the SQLite writer thread (db/sqlite-writer.ts, WriterTaskModule): its
 * name, and what registry/batch.ts sends it — the events as columns of strings (toWire), which
 * cross to the thread as copies of their bytes where objects are serialised and rebuilt field by
 * field (a batch of 500 events: about 2 ms of the thread's time).
 */
export const ingestTask = 'registry/ingest';

export interface IngestTaskPayload {
  events: WireEvents;
  receivedAt: string;
  tokenProject: string | null;
}

/** The writer thread's entry: ingestEvents with its connection, once the batch is committed. */
export function runInWriter(db: Kysely<Database>, payload: IngestTaskPayload): Promise<IngestResult> {
  return ingestEvents(
    db,
    'sqlite',
    fromWire(payload.events),
    new Date(payload.receivedAt),
    payload.tokenProject,
  );
}

/** Some events of the batch were stored already: the transaction is retried without them. */
class ConcurrentIngest extends Error {}

/** Every event of the batch was stored already: the transaction is rolled back. */
class AllStored extends Error {}

/** PostgreSQL errors after which the whole batch can simply be retried. */
const retryableCodes = new Set(['40001', '40P01', '23505']);

/**
 * How long a namespace may be listed unrecorded by an inventory and still be claimed as created
 * by tend. A command's events reach the server a moment after it creates its namespace (longer on
 * a busy machine), and an inventory taken in between lists it unrecorded; that sighting would
 * otherwise turn every such namespace adopted. A namespace seen unrecorded when already older
 * than this existed before any claim that arrives now: the claim is disputed. Within the grace a
 * forged claim proves nothing the claiming session's window (checked again by the planner and
 * the executor against the cluster's creationTimestamp) does not already bound.
 */
export const deliveryGraceMs = 5 * 60_000;

/** Whether an inventory listed this unrecorded namespace when it was older than the grace (or of unknown age). */
function listedUnrecordedTooLong(r: UidRecord): boolean {
  return r.unrecordedAtAgeMs === undefined || !(r.unrecordedAtAgeMs < deliveryGraceMs);
}

export async function ingestEvents(
  db: Kysely<Database>,
  dialect: DialectName,
  events: TendEvent[],
  receivedAt: Date,
  /** The project the sending token is bound to, if any (it owns the sessions it starts). */
  tokenProject: string | null = null,
): Promise<IngestResult> {
  // On SQLite, the writer connection's thread runs this very function (runInWriter below).
  // First optimistically, as if every event were new; after a batch turned out to hold some
  // stored events and some new ones, again, skipping the stored ones from the start.
  let skipStored = false;
  for (let attempt = 1; ; attempt++) {
    try {
      const work = (trx: Transaction<Database>) =>
        applyBatch(
          new BulkStatements(trx, dialect),
          events,
          receivedAt.toISOString(),
          skipStored,
          tokenProject,
        );
      // On SQLite, batches that arrive while one is written share its successor's commit. On
      // PostgreSQL each batch is a transaction of its own on the pool, batches in parallel (the
      // group commit would run them one after another there).
      return await (dialect === 'sqlite' ? GroupCommit.of(db).run(work) : db.transaction().execute(work));
    } catch (error) {
      if (error instanceof AllStored) return { accepted: 0, duplicates: events.length };
      if (error instanceof ConcurrentIngest && attempt < 5) {
        skipStored = true;
        continue;
      }
      const code = (error as { code?: unknown }).code;
      if (dialect !== 'postgres' || attempt >= 5 || typeof code !== 'string' || !retryableCodes.has(code)) {
        throw error;
      }
    }
  }
}

async function applyBatch(
  q: BulkStatements,
  events: TendEvent[],
  now: string,
  skipStored: boolean,
  tokenProject: string | null,
): Promise<IngestResult> {
  if (events.length === 0) return { accepted: 0, duplicates: 0 };

  const existing = new Set<string>();
  if (skipStored) {
    const ids = [...new Set(events.map((e) => e.id))];
    for (const id of await storedEventIds(q, ids)) existing.add(id);
  }
  const seen = new Set<string>();
  const candidates = events.filter((e) => {
    if (existing.has(e.id) || seen.has(e.id)) return false;
    seen.add(e.id);
    return true;
  });
  if (candidates.length === 0) return { accepted: 0, duplicates: events.length };

  const storedSessions = await loadSessions(q, [...new Set(candidates.map((e) => e.sessionId))]);
  // Throws (the transaction rolls back) when an event names another project's session.
  const owners = sessionOwners(candidates, storedSessions, tokenProject, (e) => events.indexOf(e));
  const plan = planBatch(candidates, knownSessions(storedSessions), now);
  for (const s of plan.sessions.values()) s.project ??= owners.get(s.id) ?? null;

  // The environments of the batch, locked (PostgreSQL) in key order; new ones get their id now.
  const touches = [...plan.touches].sort(byKey(([key]) => key));
  const stored = new Map<string, EnvironmentRow>();
  for (const row of await loadEnvironments(
    q,
    touches.map(([, t]) => t.identity),
  ))
    stored.set(environmentKey(row), row);
  const environments = new Map<string, { row: EnvironmentRow; isNew: boolean; touch: EnvironmentTouch }>();
  for (const [key, touch] of touches) {
    const row = stored.get(key);
    environments.set(key, { row: row ?? newEnvironment(touch.identity, now), isNew: !row, touch });
  }

  // Resources of the environments with namespace events, read under the environment's lock:
  // the latest generation of each one the batch names, and the counts of all of them (the state
  // of the environment depends on every generation).
  const withNamespaces = [...environments.values()].filter((e) => e.touch.namespaceEvents.length > 0);
  const storedResources = await loadStoredResources(
    q,
    resourceIdentities(withNamespaces.filter((e) => !e.isNew)),
  );
  const resources = resourceSets(storedResources.latest, storedResources.counts);
  // Claims of creation are checked against what the server recorded of the uid before.
  const claimedUids = new Set<string>();
  for (const { touch } of withNamespaces) {
    for (const { event } of touch.namespaceEvents) {
      if (event.payload.cause === 'created' && event.payload.namespaceUid)
        claimedUids.add(event.payload.namespaceUid);
    }
  }
  const recorded = await uidRecords(q, [...claimedUids]);
  const sessionStarts = new Map(storedSessions.map((r) => [r.id, r.client_started_at]));
  const changedResources = new Map<string, Resource>();
  for (const { row, touch } of withNamespaces) {
    const own = resources.get(row.id) ?? new ResourceSet();
    // The same namespace (name and uid; on the same target for a resource) recorded before by
    // another environment's record, or listed unrecorded by an inventory once it was older than
    // the delivery grace: it existed before.
    const disputed = (p: NamespaceStatusPayload) =>
      recorded.some(
        (r) =>
          r.uid === p.namespaceUid &&
          r.namespaceName === p.namespaceName &&
          (r.environmentId === undefined
            ? listedUnrecordedTooLong(r)
            : r.environmentId !== row.id && r.targetKey === targetKey(p.target)),
      );
    for (const { event, activity } of touch.namespaceEvents) {
      // The claiming session's start, by its own clock: from this batch's sessionStarted, or stored.
      const startedAt =
        plan.sessions.get(event.sessionId)?.client_started_at ?? sessionStarts.get(event.sessionId) ?? null;
      for (const r of own.apply(row.id, event, now, activity, disputed, startedAt))
        changedResources.set(r.id, r);
    }
    setEnvironmentState(row, own.counts(), now);
  }

  for (const { row, touch } of environments.values()) applyTouch(row, touch, now);
  for (const s of plan.sessions.values()) {
    const identity = plan.known.get(s.id)?.identity;
    if (identity) s.environment_id = environments.get(environmentKey(identity))?.row.id ?? null;
  }
  const newProjects = [
    ...new Set([...environments.values()].filter((e) => e.isNew).map((e) => e.row.project)),
  ].sort();
  const eventRows = [...candidates].sort(byKey((e) => e.id)).map((e) => {
    const key = plan.eventEnvironment.get(e.id);
    return eventRow(e, now, key === undefined ? null : environments.get(key)!.row.id);
  });
  // One write (one statement on PostgreSQL). The events insert decides whether the rest stands:
  // a replica inserting the same event concurrently waits on the primary key, then sees a
  // conflict. Environments before the resources and sessions that refer to them.
  const [inserted = 0] = await q.insertAll([
    [eventsInsert, eventRows],
    [projectsInsert, newProjects.map((name) => [name, now])],
    [environmentsUpsert, environmentRows([...environments.values()], now)],
    [resourcesUpsert, resourceRows(changedResources.values())],
    [sessionsUpsert, sessionRows([...plan.sessions.values()])],
  ]);
  // All stored before (a re-sent batch): the transaction is rolled back, nothing changes.
  if (inserted === 0) throw new AllStored();
  // Some stored before, or by another replica at this very moment: start again and skip them.
  if (inserted < candidates.length) throw new ConcurrentIngest('some events of the batch are stored');
  return { accepted: inserted, duplicates: events.length - inserted };
}

/** The resources the namespace events of these environments name, each once. */
function resourceIdentities(
  environments: { row: EnvironmentRow; touch: EnvironmentTouch }[],
): ResourceIdentity[] {
  const out = new Map<string, ResourceIdentity>();
  for (const { row, touch } of environments) {
    for (const { event } of touch.namespaceEvents) {
      const p = event.payload;
      const identity = {
        environmentId: row.id,
        plugin: p.pluginName,
        targetKey: targetKey(p.target),
        namespaceName: p.namespaceName,
      };
      out.set(JSON.stringify(Object.values(identity)), identity);
    }
  }
  return [...out.values()];
}
