/**
 * Environments with their resources, sessions and activity: the registry as the API reads it,
 * the changes people make to one (protect, keep-alive), and `cleaned` once cleanup has made all
 * its namespaces missing.
 */
import { sql, type Kysely } from 'kysely';
import { writeAudit } from './audit.js';
import { isSqlite } from '../dialect.js';
import type {
  Database,
  DatabaseOrTransaction,
  Environment,
  EnvironmentState,
  Resource,
  Session,
} from '../schema.js';
import { textProblem } from '../../../storable.js';
import { inVisibleProjects, type VisibleProjects } from '../visible-projects.js';

export interface EnvironmentFilter {
  /** Case-insensitive substring of the project, environment name, namespace or owner. */
  search?: string;
  project?: string;
  environment?: string;
  state?: EnvironmentState;
  /** Only environments whose last activity is before this time (ISO). */
  staleSince?: string;
  /** The projects the principal may see (absent: every project). */
  visible?: VisibleProjects;
}

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

interface Cursor {
  at: string;
  id: string;
}

export function encodeCursor(c: Cursor): string {
  return Buffer.from(JSON.stringify([c.at, c.id])).toString('base64url');
}

export function decodeCursor(value: string): Cursor | undefined {
  try {
    const parsed: unknown = JSON.parse(Buffer.from(value, 'base64url').toString('utf8'));
    // A forged cursor must not carry text the database refuses (NUL on PostgreSQL).
    if (
      Array.isArray(parsed) &&
      parsed.length === 2 &&
      parsed.every((x) => typeof x === 'string' && textProblem(x) === undefined)
    ) {
      return { at: parsed[0] as string, id: parsed[1] as string };
    }
  } catch {
    // fall through
  }
  return undefined;
}

/** One day of environments per state (`stateHistory`). */
export interface RecordedDay {
  counts: Record<string, number>;
  /** Estimated from first-seen and cleaned times, not recorded (the days before migration 0007). */
  estimated: boolean;
}

export interface TimelineEntry {
  id: string;
  type: string;
  sessionId: string;
  receivedAt: string;
  clientTimestamp: string;
  payload: Record<string, unknown>;
}

export class EnvironmentRepository {
  /** `reader` serves the reads outside a transaction (ServerDatabase.reader). */
  constructor(
    private readonly db: Kysely<Database>,
    private readonly reader: Kysely<Database> = db,
  ) {}

  /** The environments the filter selects (both dialects: LIKE with an explicit escape). */
  private filtered(filter: EnvironmentFilter) {
    let q = this.reader.selectFrom('environments');
    if (filter.visible && filter.visible !== 'all') q = q.where(inVisibleProjects(filter.visible));
    if (filter.project) q = q.where('project', '=', filter.project);
    if (filter.environment) q = q.where('name', '=', filter.environment);
    if (filter.state) q = q.where('state', '=', filter.state);
    if (filter.staleSince) q = q.where('last_activity_at', '<', filter.staleSince);
    if (filter.search) {
      const pattern = `%${filter.search.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
      q = q.where((eb) =>
        eb.or(
          (['project', 'name', 'namespace', 'owner'] as const).map(
            (column) => sql<boolean>`lower(${eb.ref(column)}) like ${pattern} escape '\\'`,
          ),
        ),
      );
    }
    return q;
  }

  /** Newest activity first; keyset pagination on (last_activity_at, id). */
  async list(filter: EnvironmentFilter, limit: number, cursor?: Cursor): Promise<Page<Environment>> {
    let q = this.filtered(filter).selectAll();
    if (cursor) {
      q = q.where((eb) =>
        eb.or([
          eb('last_activity_at', '<', cursor.at),
          eb.and([eb('last_activity_at', '=', cursor.at), eb('id', '<', cursor.id)]),
        ]),
      );
    }
    const rows = await q
      .orderBy('last_activity_at', 'desc')
      .orderBy('id', 'desc')
      .limit(limit + 1)
      .execute();
    const items = rows.slice(0, limit);
    const last = items[items.length - 1];
    return {
      items,
      nextCursor:
        rows.length > limit && last ? encodeCursor({ at: last.last_activity_at, id: last.id }) : null,
    };
  }

  async get(id: string): Promise<Environment | undefined> {
    return this.reader.selectFrom('environments').selectAll().where('id', '=', id).executeTakeFirst();
  }

  async resources(environmentId: string): Promise<Resource[]> {
    return this.reader
      .selectFrom('resources')
      .selectAll()
      .where('environment_id', '=', environmentId)
      .orderBy('namespace_name')
      .orderBy('generation', 'desc')
      .execute();
  }

  async recentSessions(environmentId: string, limit = 20): Promise<Session[]> {
    return this.reader
      .selectFrom('sessions')
      .selectAll()
      .where('environment_id', '=', environmentId)
      .orderBy('last_event_at', 'desc')
      .orderBy('id', 'desc')
      .limit(limit)
      .execute();
  }

  /** The environment's events, newest first (server receive time); only those of `type` when given. */
  async timeline(environmentId: string, limit = 100, type?: string): Promise<TimelineEntry[]> {
    let query = this.reader.selectFrom('events').selectAll().where('environment_id', '=', environmentId);
    if (type !== undefined) query = query.where('type', '=', type);
    const rows = await query.orderBy('received_at', 'desc').orderBy('id', 'desc').limit(limit).execute();
    return rows.map((r) => ({
      id: r.id,
      type: r.type,
      sessionId: r.session_id,
      receivedAt: r.received_at,
      clientTimestamp: r.client_timestamp,
      payload: JSON.parse(r.payload) as Record<string, unknown>,
    }));
  }

  /** How many environments are in each state: all of them, or those the filter selects. */
  async countByState(filter: EnvironmentFilter = {}): Promise<Record<string, number>> {
    const rows = await this.filtered(filter)
      .select(['state', (eb) => eb.fn.countAll<number>().as('n')])
      .groupBy('state')
      .execute();
    return Object.fromEntries(rows.map((r) => [r.state, Number(r.n)]));
  }

  /**
   * Records today's (UTC) count of environments per project and state, for the chart of
   * environments by state over time: states no longer held drop to 0, the rest are upserted.
   * Idempotent; replicas recording at once both write the same counts.
   */
  async recordStateCounts(now: Date): Promise<void> {
    const day = now.toISOString().slice(0, 10);
    const at = now.toISOString();
    await this.db.transaction().execute(async (trx) => {
      const rows = await trx
        .selectFrom('environments')
        .select(['project', 'state', (eb) => eb.fn.countAll<number>().as('n')])
        .groupBy(['project', 'state'])
        .execute();
      await trx
        .updateTable('environment_state_days')
        .set({ count: 0, recorded_at: at, estimated: 0 })
        .where('day', '=', day)
        .execute();
      if (rows.length === 0) return;
      await trx
        .insertInto('environment_state_days')
        .values(
          rows.map((r) => ({
            day,
            project: r.project,
            state: r.state,
            count: Number(r.n),
            recorded_at: at,
            estimated: 0,
          })),
        )
        .onConflict((oc) =>
          oc.columns(['day', 'project', 'state']).doUpdateSet((eb) => ({
            count: eb.ref('excluded.count'),
            recorded_at: eb.ref('excluded.recorded_at'),
            estimated: 0,
          })),
        )
        .execute();
    });
  }

  /**
   * Environments per state for each recorded UTC day from `since` (`YYYY-MM-DD`) on, summed over
   * the projects visible: day → state → count, and whether the day is an estimate (the
   * days before the table existed, migration 0007). Days never recorded are absent.
   */
  async stateHistory(since: string, visible: VisibleProjects): Promise<Map<string, RecordedDay>> {
    let q = this.reader
      .selectFrom('environment_state_days')
      .select([
        'day',
        'state',
        (eb) => eb.fn.sum<number>('count').as('n'),
        (eb) => eb.fn.max<number>('estimated').as('estimated'),
      ])
      .where('day', '>=', since);
    if (visible !== 'all') q = q.where(inVisibleProjects(visible));
    const rows = await q.groupBy(['day', 'state']).orderBy('day').execute();
    const days = new Map<string, RecordedDay>();
    for (const r of rows) {
      const recorded = days.get(r.day) ?? { counts: {}, estimated: false };
      recorded.counts[r.state] = Number(r.n);
      recorded.estimated ||= Number(r.estimated) === 1;
      days.set(r.day, recorded);
    }
    return days;
  }

  /** The environments whose records hold `namespace` (on any target) as not missing. */
  holdersOf(
    namespace: string,
  ): Promise<{ environment_id: string; project: string; name: string; target_key: string }[]> {
    return this.reader
      .selectFrom('resources')
      .innerJoin('environments', 'environments.id', 'resources.environment_id')
      .select([
        'resources.environment_id',
        'environments.project',
        'environments.name',
        'resources.target_key',
      ])
      .where('resources.namespace_name', '=', namespace)
      .where('resources.state', '!=', 'missing')
      .execute();
  }

  /** Sets protection and writes the audit entry, in one transaction. */
  async setProtected(id: string, value: boolean, actor: string, now: Date): Promise<Environment | undefined> {
    return this.change(id, actor, value ? 'protect' : 'unprotect', now, () => ({
      set: {
        protected: value ? 1 : 0,
        protected_by: value ? actor : null,
        protected_at: value ? now.toISOString() : null,
      },
    }));
  }

  /**
   * Keeps an environment alive until `until`, or leaves a later keep-alive as it is: a keep-alive
   * only ever extends (a shorter one would hand the environment to cleanup sooner than whoever
   * kept it alive was promised). The audit entry says which happened.
   */
  async keepAlive(id: string, until: Date, actor: string, now: Date): Promise<Environment | undefined> {
    return this.change(id, actor, 'keep-alive', now, (env) => {
      const current = env.keep_alive_until;
      if (current !== null && Date.parse(current) >= until.getTime()) {
        return { set: {}, detail: { until: current, requested: until.toISOString(), extended: false } };
      }
      return {
        set: { keep_alive_until: until.toISOString(), keep_alive_by: actor },
        detail: { until: until.toISOString(), extended: true },
      };
    });
  }

  /** `decide` sees the record as the transaction read it: a change never races a concurrent one. */
  private async change(
    id: string,
    actor: string,
    action: string,
    now: Date,
    decide: (env: Environment) => { set: Partial<Environment>; detail?: Record<string, unknown> },
  ): Promise<Environment | undefined> {
    return this.db.transaction().execute(async (trx) => {
      const env = await trx
        .selectFrom('environments')
        .selectAll()
        .where('id', '=', id)
        .$if(!isSqlite(trx), (q) => q.forUpdate())
        .executeTakeFirst();
      if (!env) return undefined;
      const { set, detail = {} } = decide(env);
      await trx
        .updateTable('environments')
        .set({ ...set, updated_at: now.toISOString() })
        .where('id', '=', id)
        .execute();
      await writeAudit(trx, now, [
        {
          actor,
          action,
          environmentId: id,
          detail: { project: env.project, environment: env.name, namespace: env.namespace, ...detail },
        },
      ]);
      return trx.selectFrom('environments').selectAll().where('id', '=', id).executeTakeFirst();
    });
  }
}

/**
 * An environment is `cleaned` when it has resources and all of them (other than shared system
 * namespaces) are missing; otherwise `active` (the rule ingest applies too).
 */
export async function refreshEnvironmentStates(
  trx: DatabaseOrTransaction,
  environmentIds: string[],
  at: string,
): Promise<void> {
  for (const id of environmentIds) {
    const rows = await trx
      .selectFrom('resources')
      .select(['state', 'role'])
      .where('environment_id', '=', id)
      .where('role', '!=', 'system')
      .execute();
    if (rows.length > 0 && rows.every((r) => r.state === 'missing')) {
      await trx
        .updateTable('environments')
        .set({ state: 'cleaned', cleaned_at: at, updated_at: at })
        .where('id', '=', id)
        .where('state', 'in', ['active', 'paused'])
        .execute();
    }
  }
}

/** Removes events received before `before`, in slices so a large backlog never holds a long lock. */
export async function pruneEvents(db: Kysely<Database>, before: string, slice = 5000): Promise<number> {
  let total = 0;
  for (;;) {
    const result = await db
      .deleteFrom('events')
      .where('id', 'in', db.selectFrom('events').select('id').where('received_at', '<', before).limit(slice))
      .executeTakeFirst();
    const n = Number(result.numDeletedRows);
    total += n;
    if (n < slice) return total;
  }
}
