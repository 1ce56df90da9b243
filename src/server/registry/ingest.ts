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
 * On SQLite, one connection runs one transaction at a time: no other writer can interleave.
 *
 * Activity time is the server's receive time of the batch, never the client's clock.
 */
import { CompiledQuery, type Kysely, type Transaction } from 'kysely';
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

/** The columns of an environment that ingest reads and writes. */
const environmentColumns = [
  'id',
  'project',
  'name',
  'namespace',
  'state',
  'owner',
  'policy_after_inactivity',
  'policy_action',
  'cleaned_at',
  'last_activity_at',
  'last_activity_session',
  'last_activity_command',
  'last_activity_user',
  'last_activity_type',
] as const satisfies readonly (keyof EnvironmentsTable)[];

type EnvironmentRow = Pick<EnvironmentsTable, (typeof environmentColumns)[number]>;

/** Of those, the environment's identity: written once, when it is created. */
const environmentIdentityColumns = new Set(['id', 'project', 'name', 'namespace']);

/** Some events of the batch were stored already: the transaction is retried without them. */
class ConcurrentIngest extends Error {}

/** Every event of the batch was stored already: the transaction is rolled back. */
class AllStored extends Error {}

/** PostgreSQL errors after which the whole batch can simply be retried. */
const retryableCodes = new Set(['40001', '40P01', '23505']);

export async function ingestEvents(
  db: Kysely<Database>,
  dialect: DialectName,
  events: TendEvent[],
  receivedAt: Date,
): Promise<IngestResult> {
  // First optimistically, as if every event were new; after a batch turned out to hold some
  // stored events and some new ones, again, skipping the stored ones from the start.
  let skipStored = false;
  for (let attempt = 1; ; attempt++) {
    try {
      return await db
        .transaction()
        .execute((trx) =>
          applyBatch(new Statements(trx, dialect), events, receivedAt.toISOString(), skipStored),
        );
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

const byKey =
  <T>(key: (t: T) => string) =>
  (a: T, b: T) => {
    const x = key(a);
    const y = key(b);
    return x < y ? -1 : x > y ? 1 : 0;
  };

async function applyBatch(
  q: Statements,
  events: TendEvent[],
  now: string,
  skipStored: boolean,
): Promise<IngestResult> {
  if (events.length === 0) return { accepted: 0, duplicates: 0 };

  const existing = new Set<string>();
  if (skipStored) {
    const ids = [...new Set(events.map((e) => e.id))];
    for (const r of await q.selectIn<{ id: string }>('id', 'events', 'id', ids)) existing.add(r.id);
  }
  const seen = new Set<string>();
  const candidates = events.filter((e) => {
    if (existing.has(e.id) || seen.has(e.id)) return false;
    seen.add(e.id);
    return true;
  });
  if (candidates.length === 0) return { accepted: 0, duplicates: events.length };

  const known = await loadSessions(q, [...new Set(candidates.map((e) => e.sessionId))]);
  const plan = planBatch(candidates, new Map(known), now);

  // The environments of the batch, locked (PostgreSQL) in key order; new ones get their id now.
  const touches = [...plan.touches].sort(byKey(([key]) => key));
  const stored = await loadEnvironments(
    q,
    touches.map(([, t]) => t.identity),
  );
  const environments = new Map<string, { row: EnvironmentRow; isNew: boolean; touch: EnvironmentTouch }>();
  for (const [key, touch] of touches) {
    const row = stored.get(key);
    environments.set(key, { row: row ?? newEnvironment(touch.identity, now), isNew: !row, touch });
  }

  // Resources of the environments with namespace events: all generations (the state of the
  // environment depends on all of them), read under the environment's lock.
  const withNamespaces = [...environments.values()].filter((e) => e.touch.namespaceEvents.length > 0);
  const resources = await loadResources(
    q,
    withNamespaces.filter((e) => !e.isNew).map((e) => e.row.id),
  );
  const changedResources = new Map<string, Resource>();
  for (const { row, touch } of withNamespaces) {
    const own = resources.get(row.id) ?? new ResourceSet();
    for (const { event } of touch.namespaceEvents) {
      for (const r of own.apply(row.id, event, now)) changedResources.set(r.id, r);
    }
    setEnvironmentState(row, own.all(), now);
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
    return [
      e.id,
      e.type,
      e.sessionId,
      e.timestamp,
      now,
      key === undefined ? null : environments.get(key)!.row.id,
      JSON.stringify(e.payload),
    ];
  });
  // One write (one statement on PostgreSQL). The events insert decides whether the rest stands:
  // a replica inserting the same event concurrently waits on the primary key, then sees a
  // conflict. Environments before the resources and sessions that refer to them.
  const [inserted = 0] = await q.insertAll([
    [eventsInsert, eventRows],
    [projectsInsert, newProjects.map((name) => [name, now])],
    [environmentsUpsert, environmentRows([...environments.values()], now)],
    [resourcesUpsert, [...changedResources.values()].map((r) => resourceColumns.map((c) => r[c]))],
    [sessionsUpsert, sessionRows([...plan.sessions.values()])],
  ]);
  // All stored before (a re-sent batch): the transaction is rolled back, nothing changes.
  if (inserted === 0) throw new AllStored();
  // Some stored before, or by another replica at this very moment: start again and skip them.
  if (inserted < candidates.length) throw new ConcurrentIngest('some events of the batch are stored');
  return { accepted: inserted, duplicates: events.length - inserted };
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

// ---------------------------------------------------------------------------------------------
// Statements. The hot path writes SQL text directly: building thousands of values through the
// query builder costs more than the database does. Values are always parameters: on SQLite as
// `VALUES (?, …), …` (prepared once per shape, see database.ts), on PostgreSQL as one array per
// column (`unnest($1::text[], …)`, `= any($1::text[])`), so the server parses a short statement
// instead of one with thousands of parameters.

interface InsertStatement {
  table: string;
  columns: readonly string[];
  /** PostgreSQL type of columns that are not text. */
  types?: Readonly<Record<string, string>>;
  /** `on conflict …` */
  tail: string;
}

/** Most values per statement on SQLite (it allows 32,766 parameters). */
const maxSqliteParameters = 30_000;
/** Most rows per statement on PostgreSQL (arrays; bounded to keep one statement's work small). */
const maxPostgresRows = 5_000;

/** Characters JSON.stringify escapes differently from a PostgreSQL array literal. */
// eslint-disable-next-line no-control-regex -- control characters are what it looks for
const jsonOnlyEscapes = /[\u0000-\u001f\ud800-\udfff]/;

/**
 * A PostgreSQL array literal (`{"a","b",NULL,3}`) of text, integer or null values, for a
 * `$n::text[]` parameter. node-pg would build it element by element with two regular
 * expressions each, the largest allocation of a batch; inside double quotes an array literal
 * escapes only `"` and `\`, as JSON does, so one JSON.stringify of the column is the literal
 * (JSON's `null` reads as NULL) unless a string holds a character JSON escapes as `\n` or `\uXXXX`.
 */
export function postgresArray(values: readonly unknown[]): string {
  if (values.some((v) => typeof v === 'string' && jsonOnlyEscapes.test(v))) {
    return `{${values
      .map((v) => (v === null || v === undefined ? 'NULL' : `"${String(v).replace(/["\\]/g, '\\$&')}"`))
      .join(',')}}`;
  }
  return `{${JSON.stringify(values).slice(1, -1)}}`;
}

class Statements {
  private readonly textCache = new Map<string, string>();
  constructor(
    readonly trx: Transaction<Database>,
    readonly dialect: DialectName,
  ) {}

  private cached(key: string, make: () => string): string {
    let text = this.textCache.get(key);
    if (text === undefined) {
      text = make();
      if (this.textCache.size < 64) this.textCache.set(key, text);
    }
    return text;
  }

  /** SQLite: `(?, ?), (?, ?)`: `rows` tuples of `width` placeholders. */
  tuples(rows: number, width: number): string {
    return this.cached(`${rows}/${width}`, () => {
      const tuple = `(${'?, '.repeat(width - 1)}?)`;
      return Array.from({ length: rows }, () => tuple).join(', ');
    });
  }

  async query<R>(text: string, parameters: readonly unknown[]): Promise<R[]> {
    return (await this.trx.executeQuery<R>(CompiledQuery.raw(text, [...parameters]))).rows;
  }

  /**
   * Rows of `select <columns> from <table> where <column> in (…values)` (in slices on SQLite).
   */
  async selectIn<R>(columns: string, table: string, column: string, values: string[]): Promise<R[]> {
    if (values.length === 0) return [];
    if (this.dialect === 'postgres') {
      return this.query<R>(`select ${columns} from ${table} where ${column} = any($1::text[])`, [
        postgresArray(values),
      ]);
    }
    const out: R[] = [];
    for (let i = 0; i < values.length; i += 1000) {
      const slice = values.slice(i, i + 1000);
      const text = `select ${columns} from ${table} where ${column} in (${this.tuples(1, slice.length).slice(1, -1)})`;
      out.push(...(await this.query<R>(text, slice)));
    }
    return out;
  }

  /**
   * Several multi-row inserts, in order; how many rows each inserted or updated. On PostgreSQL
   * one statement (each insert a data-modifying `WITH` part; foreign keys are checked at the end
   * of the statement), one round trip instead of one per table.
   */
  async insertAll(parts: [InsertStatement, unknown[][]][]): Promise<number[]> {
    if (this.dialect !== 'postgres' || parts.some(([, rows]) => rows.length > maxPostgresRows)) {
      const affected: number[] = [];
      for (const [statement, rows] of parts)
        affected.push(rows.length > 0 ? await this.insert(statement, rows) : 0);
      return affected;
    }
    const used = parts.flatMap(([, rows], i) => (rows.length > 0 ? [i] : []));
    if (used.length === 0) return parts.map(() => 0);
    let n = 0;
    const withParts = used.map((i) => `w${i} as (${this.unnestInsert(parts[i]![0], () => ++n)} returning 1)`);
    const [counts] = await this.query<Record<string, number>>(
      `with ${withParts.join(', ')} select ${used.map((i) => `(select count(*) from w${i}) as w${i}`).join(', ')}`,
      used.flatMap((i) => {
        const [statement, rows] = parts[i]!;
        return statement.columns.map((_, c) => postgresArray(rows.map((row) => row[c])));
      }),
    );
    return parts.map((_, i) => Number(counts?.[`w${i}`] ?? 0));
  }

  /** `insert into t (a, b) select * from unnest($1::text[], $2::integer[]) <tail>`. */
  private unnestInsert(statement: InsertStatement, parameter: () => number): string {
    return (
      `insert into ${statement.table} (${statement.columns.join(', ')}) select * from unnest(` +
      statement.columns.map((c) => `$${parameter()}::${statement.types?.[c] ?? 'text'}[]`).join(', ') +
      `) ${statement.tail}`
    );
  }

  /** A multi-row insert, in slices; how many rows it inserted or updated. */
  async insert(statement: InsertStatement, rows: unknown[][]): Promise<number> {
    let affected = 0;
    const run = async (text: string, parameters: unknown[]) => {
      const result = await this.trx.executeQuery(CompiledQuery.raw(text, parameters));
      affected += Number(result.numAffectedRows ?? 0);
    };
    const head = `insert into ${statement.table} (${statement.columns.join(', ')})`;
    if (this.dialect === 'postgres') {
      let n = 0;
      const text = this.cached(head, () => this.unnestInsert(statement, () => ++n));
      for (let i = 0; i < rows.length; i += maxPostgresRows) {
        const slice = rows.slice(i, i + maxPostgresRows);
        await run(
          text,
          statement.columns.map((_, c) => postgresArray(slice.map((row) => row[c]))),
        );
      }
      return affected;
    }
    const width = statement.columns.length;
    const perStatement = Math.max(1, Math.floor(maxSqliteParameters / width));
    for (let i = 0; i < rows.length; i += perStatement) {
      const slice = rows.slice(i, i + perStatement);
      await run(`${head} values ${this.tuples(slice.length, width)} ${statement.tail}`, slice.flat());
    }
    return affected;
  }
}

const eventsInsert: InsertStatement = {
  table: 'events',
  columns: ['id', 'type', 'session_id', 'client_timestamp', 'received_at', 'environment_id', 'payload'],
  tail: 'on conflict (id) do nothing',
};

const projectsInsert: InsertStatement = {
  table: 'projects',
  columns: ['name', 'created_at'],
  tail: 'on conflict (name) do nothing',
};

async function loadSessions(q: Statements, ids: string[]): Promise<Map<string, KnownSession>> {
  const known = new Map<string, KnownSession>();
  const rows = await q.selectIn<{
    id: string;
    project: string | null;
    environment: string | null;
    namespace: string | null;
    command: string | null;
    user_name: string | null;
  }>('id, project, environment, namespace, command, user_name', 'sessions', 'id', ids);
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
  return known;
}

/**
 * The stored environments with these identities (sorted by key), by key. On PostgreSQL the rows
 * are locked until the end of the transaction, in key order.
 */
async function loadEnvironments(
  q: Statements,
  identities: EnvironmentIdentity[],
): Promise<Map<string, EnvironmentRow>> {
  const out = new Map<string, EnvironmentRow>();
  if (q.dialect === 'postgres') {
    if (identities.length === 0) return out;
    const rows = await q.query<EnvironmentRow>(
      `select ${environmentColumns.join(', ')} from environments ` +
        'where (project, name, namespace) in (select * from unnest($1::text[], $2::text[], $3::text[])) ' +
        'order by project, name, namespace for update',
      [
        postgresArray(identities.map((e) => e.project)),
        postgresArray(identities.map((e) => e.name)),
        postgresArray(identities.map((e) => e.namespace)),
      ],
    );
    for (const r of rows) out.set(environmentKey(r), r);
    return out;
  }
  for (let i = 0; i < identities.length; i += 1000) {
    const slice = identities.slice(i, i + 1000);
    const rows = await q.query<EnvironmentRow>(
      `select ${environmentColumns.join(', ')} from environments where (project, name, namespace) in (values ${q.tuples(slice.length, 3)})`,
      slice.flatMap((e) => [e.project, e.name, e.namespace]),
    );
    for (const r of rows) out.set(environmentKey(r), r);
  }
  return out;
}

function newEnvironment(identity: EnvironmentIdentity, now: string): EnvironmentRow {
  return {
    id: ulid(),
    project: identity.project,
    name: identity.name,
    namespace: identity.namespace,
    state: 'active',
    owner: null,
    policy_after_inactivity: null,
    policy_action: null,
    cleaned_at: null,
    last_activity_at: now,
    last_activity_session: null,
    last_activity_command: null,
    last_activity_user: null,
    last_activity_type: null,
  };
}

/** What the batch changes on the environment row: owner, policy, last activity. */
function applyTouch(row: EnvironmentRow, t: EnvironmentTouch, now: string): void {
  // The first session seen in the environment owns it.
  row.owner ??= t.owner ?? null;
  if (t.policy !== undefined) {
    row.policy_after_inactivity = t.policy?.afterInactivity ?? null;
    row.policy_action = t.policy?.action ?? null;
  }
  // The receive time only moves forward: a batch never makes the activity older.
  if (t.activity && now >= row.last_activity_at) {
    row.last_activity_at = now;
    row.last_activity_session = t.activity.session;
    row.last_activity_command = t.activity.command;
    row.last_activity_user = t.activity.user;
    row.last_activity_type = t.activity.type;
  }
}

/**
 * An environment is `cleaned` when it has resources and all of them (other than shared system
 * namespaces, which are never its own) are missing; otherwise `active`.
 */
function setEnvironmentState(row: EnvironmentRow, resources: Iterable<Resource>, now: string): void {
  let total = 0;
  let live = 0;
  for (const r of resources) {
    if (r.role === 'system') continue;
    total++;
    if (r.state !== 'missing') live++;
  }
  if (total > 0 && live === 0) {
    row.state = 'cleaned';
    row.cleaned_at ??= now;
  } else {
    row.state = 'active';
    row.cleaned_at = null;
  }
}

/**
 * Rows of the environments upsert: new environments inserted, touched ones updated (rows in key
 * order). Only the columns ingest owns are updated: protection and keep-alive belong to the API.
 * A new environment another replica inserted meanwhile fails the insert on the unique identity:
 * the batch is retried.
 */
function environmentRows(environments: { row: EnvironmentRow }[], now: string): unknown[][] {
  return environments.map(({ row }) => [
    ...environmentColumns.map((c) => row[c]),
    0, // protected
    now, // created_at
    now, // updated_at
  ]);
}

const updateFromExcluded = (columns: string[]) => columns.map((c) => `${c} = excluded.${c}`).join(', ');

const environmentsUpsert: InsertStatement = {
  table: 'environments',
  columns: [...environmentColumns, 'protected', 'created_at', 'updated_at'],
  types: { protected: 'integer' },
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
] as const satisfies readonly (keyof Resource)[];

const resourcesUpsert: InsertStatement = {
  table: 'resources',
  columns: resourceColumns,
  types: { generation: 'integer' },
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
    ]),
};

/** All resources of these environments, by environment id. */
async function loadResources(q: Statements, environmentIds: string[]): Promise<Map<string, ResourceSet>> {
  const out = new Map<string, ResourceSet>();
  const rows = await q.selectIn<Resource>(
    resourceColumns.join(', '),
    'resources',
    'environment_id',
    environmentIds,
  );
  for (const r of rows) {
    let set = out.get(r.environment_id);
    if (!set) out.set(r.environment_id, (set = new ResourceSet()));
    set.add({ ...r, generation: Number(r.generation) });
  }
  return out;
}

function ownershipOf(p: NamespaceStatusPayload, previous: Ownership | undefined): Ownership {
  const d = p.detail ?? {};
  if (d.adopted === true) return 'adopted';
  if (p.cause === 'created' || d.owned === true || d.managedBy === 'tend') return 'owned';
  return previous ?? 'unknown';
}

/** The resources of one environment in memory: every generation, the latest of each identity. */
class ResourceSet {
  private readonly rows: Resource[] = [];
  private readonly latest = new Map<string, Resource>();

  private static identity(plugin: string, targetKey: string, namespaceName: string): string {
    return JSON.stringify([plugin, targetKey, namespaceName]);
  }

  add(r: Resource): void {
    this.rows.push(r);
    const id = ResourceSet.identity(r.plugin, r.target_key, r.namespace_name);
    const current = this.latest.get(id);
    if (!current || r.generation > current.generation) this.latest.set(id, r);
  }

  all(): Iterable<Resource> {
    return this.rows;
  }

  /**
   * One namespaceStatus applied to the environment's resources; returns the rows it changed. The
   * resource is identified by (plugin, target, namespace name); a namespace uid different from
   * the one recorded means the namespace was deleted and re-created: the old generation is marked
   * missing and a new row (generation + 1) starts. Without a uid the event applies to the latest
   * generation.
   */
  apply(environmentId: string, e: TendEvent<'namespaceStatus'>, now: string): Resource[] {
    const p = e.payload;
    const tkey = targetKey(p.target);
    const uid = p.namespaceUid ?? null;
    const current = this.latest.get(ResourceSet.identity(p.pluginName, tkey, p.namespaceName));
    const recreated = current && uid && current.namespace_uid && current.namespace_uid !== uid;
    if (current && !recreated) {
      current.namespace_uid = current.namespace_uid ?? uid;
      current.provider = p.providerName;
      current.role = p.role;
      current.ownership = ownershipOf(p, current.ownership);
      current.state = p.state;
      current.last_cause = p.cause;
      current.detail = p.detail ? JSON.stringify(p.detail) : current.detail;
      current.last_seen_at = now;
      current.last_activity_at = p.state === 'ready' ? now : current.last_activity_at;
      current.missing_since = p.state === 'missing' ? (current.missing_since ?? now) : null;
      return [current];
    }
    const changed: Resource[] = [];
    if (current && recreated && current.state !== 'missing') {
      current.state = 'missing';
      current.missing_since = now;
      current.last_seen_at = now;
      changed.push(current);
    }
    const next: Resource = {
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
    };
    this.add(next);
    changed.push(next);
    return changed;
  }
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
  'ended_at',
  'last_heartbeat_at',
  'last_event_at',
  'error_code',
  'error_message',
] as const satisfies readonly (keyof SessionsTable)[];

/** Session columns merged as "the newest value when there is one". */
const keptSessionColumns = sessionColumns.filter(
  (c) => c !== 'id' && c !== 'status' && c !== 'last_event_at',
);

const sessionsUpsert: InsertStatement = {
  table: 'sessions',
  columns: sessionColumns,
  tail:
    'on conflict (id) do update set ' +
    [
      ...keptSessionColumns.map((c) => `${c} = coalesce(excluded.${c}, sessions.${c})`),
      // A session that ended stays ended; "unknown" (no status news) keeps what is there.
      "status = case when excluded.status = 'unknown' then sessions.status when sessions.status in ('completed', 'failed') and excluded.status = 'running' then sessions.status else excluded.status end",
      'last_event_at = case when excluded.last_event_at > sessions.last_event_at then excluded.last_event_at else sessions.last_event_at end',
    ].join(', '),
};

/** Rows of the sessions upsert, merged into what is stored (in id order: concurrent batches lock alike). */
function sessionRows(updates: SessionUpdate[]): unknown[][] {
  return [...updates].sort(byKey((s) => s.id)).map((s) => sessionColumns.map((c) => s[c] ?? null));
}
