/**
 * Ingest: a validated batch of events becomes stored events and changes to the registry of
 * environments, sessions and resources — in one transaction, exactly once per event id.
 *
 * Exactly once, also across replicas: the batch first inserts its events with
 * `ON CONFLICT (id) DO NOTHING RETURNING id`, and only the events this transaction inserted are
 * applied to the registry. A replica ingesting the same event concurrently waits on the unique
 * index until the first commits, then sees a duplicate. Registry rows are upserts on unique keys
 * (environment identity, session id, resource generation), so concurrent batches never create
 * two rows for one thing.
 *
 * Activity time is the server's receive time of the batch, never the client's clock.
 */
import { CompiledQuery, sql, type Kysely, type Transaction } from 'kysely';
import { ulid } from 'ulidx';
import type {
  NamespaceStatusPayload,
  SessionFailedPayload,
  SessionHeartbeatPayload,
  SessionStartedPayload,
  TendEvent,
} from '../../events/catalog.js';
import type { DialectName } from '../db/database.js';
import type {
  Database,
  EnvironmentsTable,
  Ownership,
  Resource,
  SessionStatus,
  SessionsTable,
} from '../db/schema.js';
import { environmentKey, targetKey, type EnvironmentIdentity } from './keys.js';

export interface IngestResult {
  accepted: number;
  duplicates: number;
}

interface Activity {
  type: string;
  session: string;
  command: string | null;
  user: string | null;
}

interface EnvironmentTouch {
  identity: EnvironmentIdentity;
  activity?: Activity;
  /** Set when the batch holds a sessionStarted for the environment: its policy, or null. */
  policy?: { afterInactivity: string; action: string } | null;
  owner?: string;
  eventIds: string[];
  namespaceEvents: { event: TendEvent<'namespaceStatus'> }[];
}

interface KnownSession {
  identity?: EnvironmentIdentity;
  command: string | null;
  user: string | null;
}

type SessionUpdate = Partial<SessionsTable> & { id: string; status: SessionStatus; last_event_at: string };

const chunkSize = 1000;

function chunks<T>(items: T[], size = chunkSize): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/** PostgreSQL errors after which the whole batch can simply be retried. */
const retryableCodes = new Set(['40001', '40P01', '23505']);

export async function ingestEvents(
  db: Kysely<Database>,
  dialect: DialectName,
  events: TendEvent[],
  receivedAt: Date,
): Promise<IngestResult> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await db
        .transaction()
        .execute((trx) => applyBatch(trx, dialect, events, receivedAt.toISOString()));
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (dialect !== 'postgres' || attempt >= 5 || typeof code !== 'string' || !retryableCodes.has(code)) {
        throw error;
      }
    }
  }
}

async function applyBatch(
  trx: Transaction<Database>,
  dialect: DialectName,
  events: TendEvent[],
  now: string,
): Promise<IngestResult> {
  if (events.length === 0) return { accepted: 0, duplicates: 0 };

  // Events stored before (a re-sent batch) are skipped without any write.
  const existing = new Set<string>();
  for (const ids of chunks([...new Set(events.map((e) => e.id))])) {
    const rows = await trx.selectFrom('events').select('id').where('id', 'in', ids).execute();
    for (const row of rows) existing.add(row.id);
  }
  const seen = new Set<string>();
  const candidates = events.filter((e) => {
    if (existing.has(e.id) || seen.has(e.id)) return false;
    seen.add(e.id);
    return true;
  });
  if (candidates.length === 0) return { accepted: 0, duplicates: events.length };

  const known = await loadSessions(trx, [...new Set(candidates.map((e) => e.sessionId))]);
  let plan = planBatch(candidates, new Map(known), now);

  const projects = [...new Set([...plan.touches.values()].map((t) => t.identity.project))].sort();
  if (projects.length > 0) {
    await trx
      .insertInto('projects')
      .values(projects.map((name) => ({ name, created_at: now })))
      .onConflict((oc) => oc.column('name').doNothing())
      .execute();
  }
  const environmentIds = await upsertEnvironments(trx, [...plan.touches.values()], now);

  // The insert decides which events this transaction applies: a replica inserting the same
  // event concurrently waits on the primary key, then sees it as a conflict.
  const inserted = new Set<string>();
  for (const chunk of chunks(candidates, 500)) {
    const rows = chunk.map((e) => {
      const key = plan.eventEnvironment.get(e.id);
      return [
        e.id,
        e.type,
        e.sessionId,
        e.timestamp,
        now,
        key === undefined ? null : (environmentIds.get(key) ?? null),
        JSON.stringify(e.payload),
      ];
    });
    for (const id of await insertEvents(trx, dialect, rows)) inserted.add(id);
  }
  if (inserted.size === 0) return { accepted: 0, duplicates: events.length };
  if (inserted.size < candidates.length) {
    // Another replica stored some of these events at this very moment: apply only ours.
    plan = planBatch(
      candidates.filter((e) => inserted.has(e.id)),
      new Map(known),
      now,
    );
  }

  for (const [key, t] of [...plan.touches].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    if (t.namespaceEvents.length === 0) continue;
    const id = environmentIds.get(key)!;
    for (const { event } of t.namespaceEvents) await applyNamespaceStatus(trx, id, event, now);
    await recomputeEnvironmentState(trx, id, now);
  }

  for (const s of plan.sessions.values()) {
    const identity = plan.known.get(s.id)?.identity;
    if (identity) s.environment_id = environmentIds.get(environmentKey(identity)) ?? null;
  }
  await upsertSessions(trx, [...plan.sessions.values()]);
  return { accepted: inserted.size, duplicates: events.length - inserted.size };
}

interface BatchPlan {
  touches: Map<string, EnvironmentTouch>;
  sessions: Map<string, SessionUpdate>;
  /** Environment key of each event that belongs to one. */
  eventEnvironment: Map<string, string>;
  known: Map<string, KnownSession>;
}

/** What the events change, worked out in memory: environments touched, session updates. */
function planBatch(fresh: TendEvent[], known: Map<string, KnownSession>, now: string): BatchPlan {
  const touches = new Map<string, EnvironmentTouch>();
  const eventEnvironment = new Map<string, string>();
  const sessions = new Map<string, SessionUpdate>();

  const touch = (identity: EnvironmentIdentity, eventId: string): EnvironmentTouch => {
    const key = environmentKey(identity);
    let t = touches.get(key);
    if (!t) {
      t = { identity, eventIds: [], namespaceEvents: [] };
      touches.set(key, t);
    }
    t.eventIds.push(eventId);
    eventEnvironment.set(eventId, key);
    return t;
  };
  const session = (id: string): SessionUpdate => {
    let s = sessions.get(id);
    if (!s) {
      s = { id, status: 'unknown', last_event_at: now };
      sessions.set(id, s);
    }
    return s;
  };
  const activityOf = (e: TendEvent): Activity => {
    const k = known.get(e.sessionId);
    return { type: e.type, session: e.sessionId, command: k?.command ?? null, user: k?.user ?? null };
  };

  for (const e of fresh) {
    switch (e.type) {
      case 'sessionStarted': {
        const p: SessionStartedPayload = e.payload;
        const identity = { project: p.project, name: p.environment, namespace: p.namespace };
        known.set(e.sessionId, { identity, command: p.command, user: p.user });
        const t = touch(identity, e.id);
        t.activity = activityOf(e);
        t.policy = p.cleanupPolicy ? { ...p.cleanupPolicy } : null;
        t.owner ??= p.user;
        const s = session(e.sessionId);
        Object.assign(s, {
          project: p.project,
          environment: p.environment,
          namespace: p.namespace,
          command: p.command,
          args: JSON.stringify(p.args),
          user_name: p.user,
          host_id: p.hostId,
          cli_version: p.cliVersion,
          // Events may arrive out of order: a session that already ended stays ended.
          status: s.status === 'unknown' ? 'running' : s.status,
          started_at: now,
        } satisfies Partial<SessionUpdate>);
        break;
      }
      case 'sessionHeartbeat': {
        const p: SessionHeartbeatPayload = e.payload;
        const identity = { project: p.project, name: p.environment, namespace: p.namespace };
        const k = known.get(e.sessionId);
        if (!k?.identity)
          known.set(e.sessionId, { identity, command: k?.command ?? null, user: k?.user ?? null });
        touch(identity, e.id).activity = activityOf(e);
        const s = session(e.sessionId);
        s.last_heartbeat_at = now;
        s.project ??= p.project;
        s.environment ??= p.environment;
        s.namespace ??= p.namespace;
        break;
      }
      case 'sessionCompleted':
      case 'sessionFailed': {
        const identity = known.get(e.sessionId)?.identity;
        if (identity) touch(identity, e.id).activity = activityOf(e);
        const s = session(e.sessionId);
        s.ended_at = now;
        if (e.type === 'sessionFailed') {
          const p: SessionFailedPayload = e.payload;
          s.status = 'failed';
          s.error_code = p.error.code;
          s.error_message = p.error.message.slice(0, 4096);
        } else {
          s.status = 'completed';
        }
        break;
      }
      case 'namespaceStatus': {
        const p: NamespaceStatusPayload = e.payload;
        // A namespace belongs to the environment of the session that touched it (a build or
        // system namespace too); without a known session, to the environment it names.
        const k = known.get(e.sessionId)?.identity;
        const identity =
          k && k.project === p.project && k.name === p.environment
            ? k
            : { project: p.project, name: p.environment, namespace: p.namespaceName };
        const t = touch(identity, e.id);
        if (p.state === 'ready') t.activity = activityOf(e);
        t.namespaceEvents.push({ event: e });
        break;
      }
      case 'actionStatus':
      case 'log': {
        const identity = known.get(e.sessionId)?.identity;
        if (identity) touch(identity, e.id).activity = activityOf(e);
        break;
      }
    }
  }
  // Every session that sent something this batch was last heard of now.
  for (const e of fresh) session(e.sessionId);
  return { touches, sessions, eventEnvironment, known };
}

/**
 * `INSERT INTO events … ON CONFLICT (id) DO NOTHING RETURNING id`, written directly: the hot
 * path of ingest, where building 3,500 values through the query builder costs more than the
 * database does. Returns the ids this statement inserted.
 */
async function insertEvents(
  trx: Transaction<Database>,
  dialect: DialectName,
  rows: (string | null)[][],
): Promise<string[]> {
  const width = 7;
  const tuples = rows.map((_, r) =>
    dialect === 'postgres'
      ? `(${Array.from({ length: width }, (_, c) => `$${r * width + c + 1}`).join(', ')})`
      : `(${'?, '.repeat(width - 1)}?)`,
  );
  const text =
    'insert into events (id, type, session_id, client_timestamp, received_at, environment_id, payload) values ' +
    tuples.join(', ') +
    ' on conflict (id) do nothing returning id';
  const result = await trx.executeQuery<{ id: string }>(CompiledQuery.raw(text, rows.flat()));
  return result.rows.map((r) => r.id);
}

async function loadSessions(trx: Transaction<Database>, ids: string[]): Promise<Map<string, KnownSession>> {
  const known = new Map<string, KnownSession>();
  for (const chunk of chunks(ids)) {
    const rows = await trx
      .selectFrom('sessions')
      .select(['id', 'project', 'environment', 'namespace', 'command', 'user_name'])
      .where('id', 'in', chunk)
      .execute();
    for (const r of rows) {
      known.set(r.id, {
        identity:
          r.project && r.environment && r.namespace
            ? { project: r.project, name: r.environment, namespace: r.namespace }
            : undefined,
        command: r.command,
        user: r.user_name,
      });
    }
  }
  return known;
}

/** `CASE WHEN excluded.last_activity_at >= current THEN excluded.<column> ELSE current END`. */
function newer(column: keyof EnvironmentsTable) {
  return sql<string>`case when excluded.last_activity_at >= environments.last_activity_at then excluded.${sql.ref(column)} else environments.${sql.ref(column)} end`;
}

/**
 * Upserts the touched environments, a few statements per batch: one per shape of update
 * (with or without a new policy, with or without activity), rows in key order so concurrent
 * transactions lock them in the same order. Returns the id of each, by environment key.
 */
async function upsertEnvironments(
  trx: Transaction<Database>,
  touches: EnvironmentTouch[],
  now: string,
): Promise<Map<string, string>> {
  const ids = new Map<string, string>();
  const groups = new Map<string, EnvironmentTouch[]>();
  for (const t of touches) {
    const shape = `${t.policy !== undefined}/${t.activity !== undefined}`;
    groups.set(shape, [...(groups.get(shape) ?? []), t]);
  }
  for (const group of groups.values()) {
    const first = group[0]!;
    const withPolicy = first.policy !== undefined;
    const withActivity = first.activity !== undefined;
    const sorted = group
      .map((t) => ({ key: environmentKey(t.identity), t }))
      .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    for (const chunk of chunks(sorted, 500)) {
      const rows = await trx
        .insertInto('environments')
        .values(
          chunk.map(({ t }) => ({
            id: ulid(),
            project: t.identity.project,
            name: t.identity.name,
            namespace: t.identity.namespace,
            state: 'active' as const,
            owner: t.owner ?? null,
            protected: 0,
            policy_after_inactivity: t.policy?.afterInactivity ?? null,
            policy_action: t.policy?.action ?? null,
            created_at: now,
            updated_at: now,
            last_activity_at: now,
            last_activity_session: t.activity?.session ?? null,
            last_activity_command: t.activity?.command ?? null,
            last_activity_user: t.activity?.user ?? null,
            last_activity_type: t.activity?.type ?? null,
          })),
        )
        .onConflict((oc) =>
          oc.columns(['project', 'name', 'namespace']).doUpdateSet((eb) => ({
            updated_at: eb.ref('excluded.updated_at'),
            owner: sql<string | null>`coalesce(environments.owner, excluded.owner)`,
            ...(withPolicy
              ? {
                  policy_after_inactivity: eb.ref('excluded.policy_after_inactivity'),
                  policy_action: eb.ref('excluded.policy_action'),
                }
              : {}),
            ...(withActivity
              ? {
                  last_activity_session: newer('last_activity_session'),
                  last_activity_command: newer('last_activity_command'),
                  last_activity_user: newer('last_activity_user'),
                  last_activity_type: newer('last_activity_type'),
                  last_activity_at: newer('last_activity_at'),
                }
              : {}),
          })),
        )
        .returning(['id', 'project', 'name', 'namespace'])
        .execute();
      for (const r of rows) ids.set(environmentKey(r), r.id);
    }
  }
  return ids;
}

async function upsertSessions(trx: Transaction<Database>, updates: SessionUpdate[]): Promise<void> {
  if (updates.length === 0) return;
  const sorted = [...updates].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  for (const chunk of chunks(sorted, 500)) await upsertSessionChunk(trx, chunk);
}

async function upsertSessionChunk(trx: Transaction<Database>, updates: SessionUpdate[]): Promise<void> {
  const keep = (column: keyof SessionsTable) =>
    sql<string | null>`coalesce(excluded.${sql.ref(column)}, sessions.${sql.ref(column)})`;
  await trx
    .insertInto('sessions')
    .values(
      updates.map((s) => ({
        id: s.id,
        environment_id: s.environment_id ?? null,
        project: s.project ?? null,
        environment: s.environment ?? null,
        namespace: s.namespace ?? null,
        command: s.command ?? null,
        args: s.args ?? null,
        user_name: s.user_name ?? null,
        host_id: s.host_id ?? null,
        cli_version: s.cli_version ?? null,
        status: s.status,
        started_at: s.started_at ?? null,
        ended_at: s.ended_at ?? null,
        last_heartbeat_at: s.last_heartbeat_at ?? null,
        last_event_at: s.last_event_at,
        error_code: s.error_code ?? null,
        error_message: s.error_message ?? null,
      })),
    )
    .onConflict((oc) =>
      oc.column('id').doUpdateSet({
        environment_id: keep('environment_id'),
        project: keep('project'),
        environment: keep('environment'),
        namespace: keep('namespace'),
        command: keep('command'),
        args: keep('args'),
        user_name: keep('user_name'),
        host_id: keep('host_id'),
        cli_version: keep('cli_version'),
        started_at: keep('started_at'),
        ended_at: keep('ended_at'),
        last_heartbeat_at: keep('last_heartbeat_at'),
        error_code: keep('error_code'),
        error_message: keep('error_message'),
        // A session that ended stays ended; "unknown" (no status news) keeps what is there.
        status: sql<SessionStatus>`case when excluded.status = 'unknown' then sessions.status when sessions.status in ('completed', 'failed') and excluded.status = 'running' then sessions.status else excluded.status end`,
        last_event_at: sql<string>`case when excluded.last_event_at > sessions.last_event_at then excluded.last_event_at else sessions.last_event_at end`,
      }),
    )
    .execute();
}

function ownershipOf(p: NamespaceStatusPayload, previous: Ownership | undefined): Ownership {
  const d = p.detail ?? {};
  if (d.adopted === true) return 'adopted';
  if (p.cause === 'created' || d.owned === true || d.managedBy === 'tend') return 'owned';
  return previous ?? 'unknown';
}

/**
 * One namespaceStatus applied to the environment's resources. The resource is identified by
 * (plugin, target, namespace name); a namespace uid different from the one recorded means the
 * namespace was deleted and re-created: the old generation is marked missing and a new row
 * (generation + 1) starts. Without a uid the event applies to the latest generation.
 */
async function applyNamespaceStatus(
  trx: Transaction<Database>,
  environmentId: string,
  e: TendEvent<'namespaceStatus'>,
  now: string,
): Promise<void> {
  const p = e.payload;
  const tkey = targetKey(p.target);
  const uid = p.namespaceUid ?? null;
  const latest = async () =>
    trx
      .selectFrom('resources')
      .selectAll()
      .where('environment_id', '=', environmentId)
      .where('plugin', '=', p.pluginName)
      .where('target_key', '=', tkey)
      .where('namespace_name', '=', p.namespaceName)
      .orderBy('generation', 'desc')
      .limit(1)
      .executeTakeFirst();

  const update = async (current: Resource) => {
    await trx
      .updateTable('resources')
      .set({
        namespace_uid: current.namespace_uid ?? uid,
        provider: p.providerName,
        role: p.role,
        ownership: ownershipOf(p, current.ownership),
        state: p.state,
        last_cause: p.cause,
        detail: p.detail ? JSON.stringify(p.detail) : current.detail,
        last_seen_at: now,
        last_activity_at: p.state === 'ready' ? now : current.last_activity_at,
        missing_since: p.state === 'missing' ? (current.missing_since ?? now) : null,
      })
      .where('id', '=', current.id)
      .execute();
  };

  for (let attempt = 0; attempt < 3; attempt++) {
    const current = await latest();
    const recreated = current && uid && current.namespace_uid && current.namespace_uid !== uid;
    if (current && !recreated) return update(current);
    if (current && recreated && current.state !== 'missing') {
      await trx
        .updateTable('resources')
        .set({ state: 'missing', missing_since: now, last_seen_at: now })
        .where('id', '=', current.id)
        .execute();
    }
    const inserted = await trx
      .insertInto('resources')
      .values({
        id: ulid(),
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
        ownership: ownershipOf(p, undefined),
        state: p.state,
        last_cause: p.cause,
        detail: p.detail ? JSON.stringify(p.detail) : null,
        first_seen_at: now,
        last_seen_at: now,
        last_activity_at: p.state === 'ready' ? now : null,
        missing_since: p.state === 'missing' ? now : null,
      })
      .onConflict((oc) =>
        oc.columns(['environment_id', 'plugin', 'target_key', 'namespace_name', 'generation']).doNothing(),
      )
      .returning('id')
      .execute();
    if (inserted.length > 0) return;
    // Another replica created this generation at the same moment: read it again and apply.
  }
}

/**
 * An environment is `cleaned` when it has resources and all of them (other than shared system
 * namespaces, which are never its own) are missing; otherwise `active`.
 */
async function recomputeEnvironmentState(trx: Transaction<Database>, id: string, now: string): Promise<void> {
  const counts = await trx
    .selectFrom('resources')
    .select((eb) => [
      eb.fn.countAll<number>().as('total'),
      eb.fn.count<number>(eb.case().when('state', '!=', 'missing').then(1).end()).as('live'),
    ])
    .where('environment_id', '=', id)
    .where('role', '!=', 'system')
    .executeTakeFirstOrThrow();
  const cleaned = Number(counts.total) > 0 && Number(counts.live) === 0;
  await trx
    .updateTable('environments')
    .set(
      cleaned
        ? { state: 'cleaned', cleaned_at: sql<string>`coalesce(cleaned_at, ${now})` }
        : { state: 'active', cleaned_at: null },
    )
    .where('id', '=', id)
    .execute();
}
