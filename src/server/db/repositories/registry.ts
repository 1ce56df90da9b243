/**
 * The registry's tables as ingest reads and writes them, in bulk: the sessions, environments
 * and resources a batch touches (the environments locked on PostgreSQL, in key order), and the
 * one multi-row insert or upsert per table that writes the batch back (src/server/registry/
 * ingest.ts decides what the rows hold).
 */
import type { TendEvent } from '../../../events/catalog.js';
import {
  byKey,
  postgresArray,
  updateFromExcluded,
  type BulkStatements,
  type InsertStatement,
} from '../bulk.js';
import { payloadText } from '../event-wire.js';
import type { EnvironmentsTable, Resource, SessionStatus, SessionsTable } from '../schema.js';

export type SessionUpdate = Partial<SessionsTable> & {
  id: string;
  status: SessionStatus;
  last_event_at: string;
};

/** An environment's cleanup policy and pull request, as ingest records them and the planner reads them. */
export const environmentPolicyColumns = [
  'policy_after_inactivity',
  'policy_action',
  'policy_warn_before',
  'policy_after_close',
  'pull_request_repository',
  'pull_request_number',
  'pull_request_state',
  'pull_request_closed_at',
  'policy_schedule',
] as const satisfies readonly (keyof EnvironmentsTable)[];

/** The columns of an environment that ingest reads and writes. */
const environmentColumns = [
  'id',
  'project',
  'name',
  'namespace',
  'state',
  'owner',
  ...environmentPolicyColumns,
  'policy_archive',
  'paused_at',
  'paused_by',
  'cleaned_at',
  'last_activity_at',
  'last_activity_session',
  'last_activity_command',
  'last_activity_user',
  'last_activity_type',
  'started_sequence_counter',
  'started_sequence_number',
] as const satisfies readonly (keyof EnvironmentsTable)[];

export type EnvironmentRow = Pick<EnvironmentsTable, (typeof environmentColumns)[number]>;

/** Of those, the environment's identity: written once, when it is created. */
const environmentIdentityColumns = new Set(['id', 'project', 'name', 'namespace']);

export const eventsInsert: InsertStatement = {
  table: 'events',
  columns: ['id', 'type', 'session_id', 'client_timestamp', 'received_at', 'environment_id', 'payload'],
  tail: 'on conflict (id) do nothing',
};

export const projectsInsert: InsertStatement = {
  table: 'projects',
  columns: ['name', 'created_at'],
  tail: 'on conflict (name) do nothing',
};

export interface StoredSession {
  id: string;
  project: string | null;
  environment: string | null;
  namespace: string | null;
  command: string | null;
  user_name: string | null;
  client_started_at: string | null;
}

/** Which of these event ids are stored already. */
export async function storedEventIds(q: BulkStatements, ids: string[]): Promise<string[]> {
  return (await q.selectIn<{ id: string }>('id', 'events', 'id', ids)).map((r) => r.id);
}

/** A record of a namespace uid from before a batch: an environment's resource, or an inventory's unrecorded item. */
export interface UidRecord {
  uid: string;
  namespaceName: string;
  /** The resource's target key; undefined for an inventory item (keyed by its executor's target). */
  targetKey?: string;
  /** The environment whose record holds it; undefined for an unrecorded inventory item. */
  environmentId?: string;
  /**
   * For an unrecorded inventory item: how old the namespace was (its creationTimestamp to the
   * server's receipt of the inventory) when an inventory last listed it unrecorded; undefined when
   * the inventory did not say when it was created.
   */
  unrecordedAtAgeMs?: number;
}

/**
 * What the server recorded of these namespace uids before: the resources holding them, and the
 * items an executor's inventory lists that no record holds. A claim that tend created a namespace
 * is checked against them (ingest).
 */
export async function uidRecords(q: BulkStatements, uids: string[]): Promise<UidRecord[]> {
  if (uids.length === 0) return [];
  const resources = await q.selectIn<{
    namespace_uid: string;
    namespace_name: string;
    target_key: string;
    environment_id: string;
  }>('namespace_uid, namespace_name, target_key, environment_id', 'resources', 'namespace_uid', uids);
  const unrecorded = await q.selectIn<{
    uid: string;
    namespace_name: string;
    recorded: number;
    created_at: string | null;
    seen_at: string;
  }>('uid, namespace_name, recorded, created_at, seen_at', 'cleanup_inventory_items', 'uid', uids);
  return [
    ...resources.map((r) => ({
      uid: r.namespace_uid,
      namespaceName: r.namespace_name,
      targetKey: r.target_key,
      environmentId: r.environment_id,
    })),
    ...unrecorded
      .filter((r) => Number(r.recorded) === 0)
      .map((r) => ({
        uid: r.uid,
        namespaceName: r.namespace_name,
        unrecordedAtAgeMs:
          r.created_at === null ? undefined : Date.parse(r.seen_at) - Date.parse(r.created_at),
      })),
  ];
}

/** The stored sessions with these ids. */
export async function loadSessions(q: BulkStatements, ids: string[]): Promise<StoredSession[]> {
  return q.selectIn<StoredSession>(
    'id, project, environment, namespace, command, user_name, client_started_at',
    'sessions',
    'id',
    ids,
  );
}

/**
 * The stored environments with these identities (pass them sorted by key). On PostgreSQL the
 * rows are locked until the end of the transaction, in key order.
 */
export async function loadEnvironments(
  q: BulkStatements,
  identities: { project: string; name: string; namespace: string }[],
): Promise<EnvironmentRow[]> {
  if (q.dialect === 'postgres') {
    if (identities.length === 0) return [];
    return q.query<EnvironmentRow>(
      `select ${environmentColumns.join(', ')} from environments ` +
        'where (project, name, namespace) in (select * from unnest($1::text[], $2::text[], $3::text[])) ' +
        'order by project, name, namespace for update',
      [
        postgresArray(identities.map((e) => e.project)),
        postgresArray(identities.map((e) => e.name)),
        postgresArray(identities.map((e) => e.namespace)),
      ],
    );
  }
  const out: EnvironmentRow[] = [];
  for (let i = 0; i < identities.length; i += 1000) {
    const slice = identities.slice(i, i + 1000);
    out.push(
      ...(await q.query<EnvironmentRow>(
        `select ${environmentColumns.join(', ')} from environments where (project, name, namespace) in (values ${q.tuples(slice.length, 3)})`,
        slice.flatMap((e) => [e.project, e.name, e.namespace]),
      )),
    );
  }
  return out;
}

/** A row of the events insert. */
export function eventRow(e: TendEvent, receivedAt: string, environmentId: string | null): unknown[] {
  const payload = payloadText(e);
  return [e.id, e.type, e.sessionId, e.timestamp, receivedAt, environmentId, payload];
}

/**
 * Rows of the environments upsert: new environments inserted, touched ones updated (rows in key
 * order). Only the columns ingest owns are updated: protection and keep-alive belong to the API.
 * A new environment another replica inserted meanwhile fails the insert on the unique identity:
 * the batch is retried.
 */
export function environmentRows(environments: { row: EnvironmentRow }[], now: string): unknown[][] {
  return environments.map(({ row }) => [
    ...environmentColumns.map((c) => row[c]),
    0, // protected
    now, // created_at
    now, // updated_at
  ]);
}

export const environmentsUpsert: InsertStatement = {
  table: 'environments',
  columns: [...environmentColumns, 'protected', 'created_at', 'updated_at'],
  types: {
    protected: 'integer',
    pull_request_number: 'integer',
    policy_archive: 'integer',
    started_sequence_number: 'bigint',
  },
  tail:
    'on conflict (id) do update set ' +
    updateFromExcluded([
      ...environmentColumns.filter((c) => !environmentIdentityColumns.has(c)),
      'updated_at',
    ]),
};

const resourceColumns = [
  'id',
  'environment_id',
  'plugin',
  'provider',
  'target_kind',
  'target',
  'target_key',
  'namespace_name',
  'namespace_uid',
  'generation',
  'role',
  'ownership',
  'state',
  'last_cause',
  'detail',
  'first_seen_at',
  'last_seen_at',
  'last_activity_at',
  'missing_since',
  'sequence_counter',
  'sequence_number',
  'claim_started_at',
  'claim_received_at',
] as const satisfies readonly (keyof Resource)[];

export const resourcesUpsert: InsertStatement = {
  table: 'resources',
  columns: resourceColumns,
  types: { generation: 'integer', sequence_number: 'bigint' },
  tail:
    'on conflict (id) do update set ' +
    updateFromExcluded([
      'namespace_uid',
      'provider',
      'role',
      'ownership',
      'state',
      'last_cause',
      'detail',
      'last_seen_at',
      'last_activity_at',
      'missing_since',
      'sequence_counter',
      'sequence_number',
      'claim_started_at',
      'claim_received_at',
    ]),
};

/** Rows of the resources upsert. */
export function resourceRows(resources: Iterable<Resource>): unknown[][] {
  return [...resources].map((r) => resourceColumns.map((c) => r[c]));
}

/** A resource as a batch names it: its environment, plugin, target and namespace name. */
export interface ResourceIdentity {
  environmentId: string;
  plugin: string;
  targetKey: string;
  namespaceName: string;
}

/**
 * Of an environment's resources other than `role: system`: how many there are, and how many of
 * them are not missing — all that its state depends on.
 */
export interface ResourceCounts {
  total: number;
  live: number;
}

/** What a batch reads of the resources of its environments with namespace events. */
export interface StoredResources {
  /** The latest generation of each resource named that is recorded. */
  latest: Resource[];
  /** The counts of all the resources of the environments named (every generation), by environment id. */
  counts: Map<string, ResourceCounts>;
}

/**
 * The latest generations of these resources (each found through the unique `(environment_id,
 * plugin, target_key, namespace_name, generation)`: a lookup, however many generations there
 * are) and the counts of their environments' resources. On PostgreSQL one round trip.
 */
export async function loadStoredResources(
  q: BulkStatements,
  identities: readonly ResourceIdentity[],
): Promise<StoredResources> {
  if (identities.length === 0) return { latest: [], counts: new Map() };
  const latestOf = (k: [string, string, string, string]) =>
    `select ${resourceColumns.join(', ')} from resources where environment_id = ${k[0]} and plugin = ${k[1]} ` +
    `and target_key = ${k[2]} and namespace_name = ${k[3]} order by generation desc limit 1`;
  const counted =
    "environment_id, count(*) as total, sum(case when state = 'missing' then 0 else 1 end) as live";
  const countedWhere = "role <> 'system'";
  let latest: Resource[];
  let counts: { environment_id: string; total: number; live: number }[];
  if (q.dialect === 'postgres') {
    // Both answers as JSON in one row: one round trip instead of two.
    const [row] = await q.query<{ latest: Resource[]; counts: typeof counts }>(
      'select (select coalesce(json_agg(r), $5::json) from unnest($1::text[], $2::text[], $3::text[], $4::text[]) as k(e, p, t, n) ' +
        `cross join lateral (${latestOf(['k.e', 'k.p', 'k.t', 'k.n'])}) as r) as latest, ` +
        `(select coalesce(json_agg(c), $5::json) from (select ${counted} from resources ` +
        `where environment_id = any($1::text[]) and ${countedWhere} group by environment_id) as c) as counts`,
      [
        postgresArray(identities.map((i) => i.environmentId)),
        postgresArray(identities.map((i) => i.plugin)),
        postgresArray(identities.map((i) => i.targetKey)),
        postgresArray(identities.map((i) => i.namespaceName)),
        '[]',
      ],
    );
    latest = row?.latest ?? [];
    counts = row?.counts ?? [];
  } else {
    latest = [];
    // One prepared statement, run per resource: on SQLite a statement is a call, not a round trip.
    const text = latestOf(['?', '?', '?', '?']);
    for (const i of identities) {
      latest.push(
        ...(await q.query<Resource>(text, [i.environmentId, i.plugin, i.targetKey, i.namespaceName])),
      );
    }
    counts = await q.selectIn(
      counted,
      'resources',
      'environment_id',
      [...new Set(identities.map((i) => i.environmentId))],
      `and ${countedWhere} group by environment_id`,
    );
  }
  return {
    latest: latest.map((r) => ({ ...r, generation: Number(r.generation) })),
    counts: new Map(counts.map((r) => [r.environment_id, { total: Number(r.total), live: Number(r.live) }])),
  };
}

const sessionColumns = [
  'id',
  'environment_id',
  'project',
  'environment',
  'namespace',
  'command',
  'args',
  'user_name',
  'host_id',
  'cli_version',
  'status',
  'started_at',
  'client_started_at',
  'ended_at',
  'last_heartbeat_at',
  'last_event_at',
  'error_code',
  'error_message',
] as const satisfies readonly (keyof SessionsTable)[];

/** Session columns merged as "the newest value when there is one". */
const keptSessionColumns = sessionColumns.filter(
  (c) => c !== 'id' && c !== 'project' && c !== 'status' && c !== 'last_event_at',
);

export const sessionsUpsert: InsertStatement = {
  table: 'sessions',
  columns: sessionColumns,
  tail:
    'on conflict (id) do update set ' +
    [
      ...keptSessionColumns.map((c) => `${c} = coalesce(excluded.${c}, sessions.${c})`),
      // A session belongs to the project of its first event, forever (registry/ownership.ts).
      'project = coalesce(sessions.project, excluded.project)',
      // A session that ended stays ended; "unknown" (no status news) keeps what is there.
      "status = case when excluded.status = 'unknown' then sessions.status when sessions.status in ('completed', 'failed', 'stopped') and excluded.status = 'running' then sessions.status else excluded.status end",
      'last_event_at = case when excluded.last_event_at > sessions.last_event_at then excluded.last_event_at else sessions.last_event_at end',
    ].join(', '),
};

/** Rows of the sessions upsert, merged into what is stored (in id order: concurrent batches lock alike). */
export function sessionRows(updates: SessionUpdate[]): unknown[][] {
  return [...updates].sort(byKey((s) => s.id)).map((s) => sessionColumns.map((c) => s[c] ?? null));
}
