/**
 * Webhooks and their deliveries, and the GitHub side of pull-request environments: the
 * webhooks (with their signing secrets), the persisted deliveries (enqueued once per webhook,
 * event and key; claimed under a short lease so one replica sends each; retried with backoff),
 * the warnings and `cleanup-done` entries deliveries are made of, and a pull request's state
 * applied to its environments together with the GitHub delivery that said so (a delivery seen
 * before is refused: replays change nothing).
 */
import { sql, type Kysely } from 'kysely';
import { encodeTime } from 'ulidx';
import type {
  AuditEntry,
  CleanupDecisionRow,
  Database,
  DatabaseOrTransaction,
  WebhookDeliveryRow,
  WebhookRow,
} from '../schema.js';
import { chunks } from '../bulk.js';
import { writeAudit } from './audit.js';
import type { VisibleProjects } from '../visible-projects.js';
import { inVisibleProjects } from '../visible-projects.js';

export interface NewDelivery {
  /** The delivery id: in the body and the `tend-delivery` header, the same on every attempt. */
  id: string;
  webhookId: string;
  event: string;
  dedupeKey: string;
  project: string | null;
  environmentId: string | null;
  body: string;
}

/** What a GitHub pull_request delivery changes. */
export interface PullRequestUpdate {
  signature: string;
  deliveryId: string;
  action: string;
  repository: string;
  number: number;
  /** `open`, `closed`, `merged`; undefined: the action changes nothing of the state. */
  state?: 'open' | 'closed' | 'merged';
}

export class NotificationRepository {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly reader: Kysely<Database> = db,
  ) {}

  // ── webhooks ─────────────────────────────────────────────────────────────────────────────

  async addWebhook(row: WebhookRow): Promise<void> {
    await this.db.insertInto('webhooks').values(row).execute();
  }

  listWebhooks(db: DatabaseOrTransaction = this.reader): Promise<WebhookRow[]> {
    return db.selectFrom('webhooks').selectAll().orderBy('created_at').orderBy('id').execute();
  }

  /** Removes the webhook and its deliveries not yet sent; false when there is none. */
  async removeWebhook(id: string): Promise<WebhookRow | undefined> {
    return this.db.transaction().execute(async (trx) => {
      const row = await trx.selectFrom('webhooks').selectAll().where('id', '=', id).executeTakeFirst();
      if (!row) return undefined;
      await trx
        .deleteFrom('webhook_deliveries')
        .where('webhook_id', '=', id)
        .where('state', '=', 'pending')
        .execute();
      await trx.deleteFrom('webhooks').where('id', '=', id).execute();
      return row;
    });
  }

  // ── what deliveries are made of ──────────────────────────────────────────────────────────

  /** Scheduled decisions inside their warning period (warn_at ≤ now < due_at). */
  warnings(now: Date): Promise<CleanupDecisionRow[]> {
    const at = now.toISOString();
    return this.reader
      .selectFrom('cleanup_decisions')
      .selectAll()
      .where('warn_at', '<=', at)
      .where('due_at', '>', at)
      .where('kind', '=', 'scheduled')
      .orderBy('due_at')
      .orderBy('resource_id')
      .limit(5000)
      .execute();
  }

  /**
   * Why a warning made of the decision due at `dueAt` no longer holds, or undefined while it does.
   * Read from the environment record, which a protect, a keep-alive or a command changes at once,
   * not from the decisions, which only the next planning pass brings up to date: a warning sent
   * seconds after `tend protect` would announce what will not happen.
   */
  async warningObsolete(environmentId: string, dueAt: string): Promise<string | undefined> {
    const [env, decision] = await Promise.all([
      this.reader
        .selectFrom('environments')
        .select(['state', 'protected', 'keep_alive_until', 'last_activity_at'])
        .where('id', '=', environmentId)
        .executeTakeFirst(),
      this.reader
        .selectFrom('cleanup_decisions')
        .select('last_activity_at')
        .where('environment_id', '=', environmentId)
        .where('due_at', '=', dueAt)
        .where('kind', '=', 'scheduled')
        .executeTakeFirst(),
    ]);
    if (!env) return 'the environment is no longer recorded';
    if (env.state !== 'active') return `the environment is ${env.state}`;
    if (Number(env.protected) === 1) return 'the environment was protected';
    if (env.keep_alive_until !== null && env.keep_alive_until >= dueAt) {
      return `the environment is kept alive until ${env.keep_alive_until}`;
    }
    if (!decision) return 'the planner no longer schedules it for that time';
    if (decision.last_activity_at !== null && env.last_activity_at > decision.last_activity_at) {
      return `the environment was used at ${env.last_activity_at}`;
    }
    return undefined;
  }

  /** Ends a claimed delivery that will not be sent, with the reason as its last error; audited. */
  async drop(d: WebhookDeliveryRow, owner: string, reason: string, now: Date): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      const result = await trx
        .updateTable('webhook_deliveries')
        .set({
          state: 'dropped',
          last_error: reason,
          lease_owner: null,
          lease_expires_at: null,
          finished_at: now.toISOString(),
        })
        .where('id', '=', d.id)
        .where('lease_owner', '=', owner)
        .executeTakeFirst();
      if (Number(result.numUpdatedRows) === 0) return;
      await writeAudit(trx, now, [
        {
          actor: 'notifications',
          action: 'webhook-dropped',
          environmentId: d.environment_id,
          detail: { project: d.project, deliveryId: d.id, webhookId: d.webhook_id, event: d.event, reason },
        },
      ]);
    });
  }

  /** `cleanup-done` audit entries written at or after `since` (the primary key's time prefix). */
  doneEntries(since: Date, afterId: string | undefined, limit: number): Promise<AuditEntry[]> {
    const floor = encodeTime(Math.max(0, since.getTime()), 10) + '0'.repeat(16);
    return this.reader
      .selectFrom('audit_log')
      .selectAll()
      .where('id', '>=', floor)
      .$if(afterId !== undefined, (q) => q.where('id', '>', afterId!))
      .where('action', '=', 'cleanup-done')
      .orderBy('id')
      .limit(limit)
      .execute();
  }

  async cursor(): Promise<string | undefined> {
    const row = await this.db
      .selectFrom('notification_cursor')
      .select('audit_after')
      .where('id', '=', 'global')
      .executeTakeFirst();
    return row?.audit_after;
  }

  async setCursor(at: string): Promise<void> {
    await this.db
      .insertInto('notification_cursor')
      .values({ id: 'global', audit_after: at })
      .onConflict((oc) => oc.column('id').doUpdateSet({ audit_after: at }))
      .execute();
  }

  // ── deliveries ───────────────────────────────────────────────────────────────────────────

  /** Enqueues the deliveries not enqueued before (once per webhook, event and key). */
  async enqueue(deliveries: NewDelivery[], now: Date): Promise<number> {
    let added = 0;
    const at = now.toISOString();
    for (const slice of chunks(deliveries, 200)) {
      const result = await this.db
        .insertInto('webhook_deliveries')
        .values(
          slice.map((d) => ({
            id: d.id,
            webhook_id: d.webhookId,
            event: d.event,
            dedupe_key: d.dedupeKey,
            project: d.project,
            environment_id: d.environmentId,
            body: d.body,
            state: 'pending' as const,
            attempts: 0,
            next_attempt_at: at,
            lease_owner: null,
            lease_expires_at: null,
            last_status: null,
            last_error: null,
            created_at: at,
            finished_at: null,
          })),
        )
        .onConflict((oc) => oc.columns(['webhook_id', 'event', 'dedupe_key']).doNothing())
        .executeTakeFirst();
      added += Number(result.numInsertedOrUpdatedRows ?? 0);
    }
    return added;
  }

  /**
   * Leases pending deliveries that are due: a conditional update per delivery, so two replicas
   * never send the same one at once.
   */
  async claim(owner: string, now: Date, leaseMs: number, max: number): Promise<WebhookDeliveryRow[]> {
    const at = now.toISOString();
    const candidates = await this.db
      .selectFrom('webhook_deliveries')
      .selectAll()
      .where('state', '=', 'pending')
      .where('next_attempt_at', '<=', at)
      .where((eb) => eb.or([eb('lease_expires_at', 'is', null), eb('lease_expires_at', '<', at)]))
      .orderBy('next_attempt_at')
      .orderBy('id')
      .limit(max)
      .execute();
    const claimed: WebhookDeliveryRow[] = [];
    const until = new Date(now.getTime() + leaseMs).toISOString();
    for (const d of candidates) {
      const result = await this.db
        .updateTable('webhook_deliveries')
        .set({ lease_owner: owner, lease_expires_at: until })
        .where('id', '=', d.id)
        .where('state', '=', 'pending')
        .where((eb) =>
          d.lease_expires_at === null
            ? eb('lease_expires_at', 'is', null)
            : eb('lease_expires_at', '=', d.lease_expires_at),
        )
        .executeTakeFirst();
      if (Number(result.numUpdatedRows) === 1) {
        claimed.push({ ...d, lease_owner: owner, lease_expires_at: until });
      }
    }
    return claimed;
  }

  /** Records an attempt: delivered, retried at `retryAt`, or failed for good. */
  async finishAttempt(
    d: WebhookDeliveryRow,
    owner: string,
    outcome: { state: 'delivered' | 'pending' | 'failed'; status: number | null; error: string | null },
    now: Date,
    retryAt?: Date,
  ): Promise<void> {
    await this.db
      .updateTable('webhook_deliveries')
      .set({
        state: outcome.state,
        attempts: sql<number>`attempts + 1`,
        last_status: outcome.status,
        last_error: outcome.error,
        lease_owner: null,
        lease_expires_at: null,
        next_attempt_at: (retryAt ?? now).toISOString(),
        finished_at: outcome.state === 'pending' ? null : now.toISOString(),
      })
      .where('id', '=', d.id)
      .where('lease_owner', '=', owner)
      .execute();
  }

  /** Per webhook: deliveries by state and the last error of a pending or failed one. */
  async deliveryCounts(): Promise<
    Map<string, { pending: number; delivered: number; failed: number; lastError: string | null }>
  > {
    const rows = await this.reader
      .selectFrom('webhook_deliveries')
      .select([
        'webhook_id',
        'state',
        (eb) => eb.fn.countAll<number>().as('n'),
        (eb) => eb.fn.max('id').as('last'),
      ])
      .groupBy(['webhook_id', 'state'])
      .execute();
    const out = new Map<
      string,
      { pending: number; delivered: number; failed: number; lastError: string | null }
    >();
    for (const r of rows) {
      if (r.state === 'dropped') continue;
      const entry = out.get(r.webhook_id) ?? { pending: 0, delivered: 0, failed: 0, lastError: null };
      entry[r.state] = Number(r.n);
      out.set(r.webhook_id, entry);
    }
    const errors = await this.reader
      .selectFrom('webhook_deliveries')
      .select(['webhook_id', 'last_error'])
      .where('state', 'in', ['pending', 'failed'])
      .where('last_error', 'is not', null)
      .orderBy('id', 'desc')
      .limit(1000)
      .execute();
    for (const e of errors) {
      const entry = out.get(e.webhook_id);
      if (entry && entry.lastError === null) entry.lastError = e.last_error;
    }
    return out;
  }

  webhook(id: string): Promise<WebhookRow | undefined> {
    return this.db.selectFrom('webhooks').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /** Recent deliveries, newest first (the dashboard). */
  /** The latest deliveries, each with its environment's name (null when it has none or is gone). */
  recentDeliveries(
    limit: number,
    visible: VisibleProjects = 'all',
  ): Promise<(WebhookDeliveryRow & { environment_name: string | null })[]> {
    let q = this.reader
      .selectFrom('webhook_deliveries as d')
      .leftJoin('environments as e', 'e.id', 'd.environment_id')
      .selectAll('d')
      .select('e.name as environment_name');
    if (visible !== 'all') q = q.where(inVisibleProjects(visible, 'd.project'));
    return q.orderBy('d.id', 'desc').limit(limit).execute();
  }

  // ── GitHub ───────────────────────────────────────────────────────────────────────────────

  /** True when a delivery with this id or signature was accepted before (a replay). */
  async seenGithubDelivery(signature: string, deliveryId: string): Promise<boolean> {
    const row = await this.db
      .selectFrom('github_deliveries')
      .select('signature')
      .where((eb) => eb.or([eb('signature', '=', signature), eb('delivery_id', '=', deliveryId)]))
      .executeTakeFirst();
    return row !== undefined;
  }

  /**
   * Applies a pull request's state to the active environments recorded for it, and records the
   * delivery, in one transaction. Returns how many environments it changed, or undefined when
   * the delivery was seen before (nothing changed) — a replay racing the first one loses here
   * on the primary key.
   */
  async applyPullRequest(u: PullRequestUpdate, now: Date): Promise<{ environments: number } | undefined> {
    try {
      return await this.db.transaction().execute(async (trx) => {
        const envs = await trx
          .selectFrom('environments')
          .select(['id', 'pull_request_state'])
          .where('pull_request_repository', '=', u.repository)
          .where('pull_request_number', '=', u.number)
          .where('state', '=', 'active')
          .execute();
        await trx
          .insertInto('github_deliveries')
          .values({
            signature: u.signature,
            delivery_id: u.deliveryId,
            event: 'pull_request',
            action: u.action,
            repository: u.repository,
            number: u.number,
            environments: envs.length,
            received_at: now.toISOString(),
          })
          .execute();
        if (u.state === undefined || envs.length === 0) return { environments: 0 };
        const closing = u.state !== 'open';
        const changed = envs.filter((e) =>
          closing
            ? e.pull_request_state !== 'closed' && e.pull_request_state !== 'merged'
            : e.pull_request_state !== 'open',
        );
        if (changed.length > 0) {
          await trx
            .updateTable('environments')
            .set({
              pull_request_state: u.state,
              pull_request_closed_at: closing ? now.toISOString() : null,
              updated_at: now.toISOString(),
            })
            .where(
              'id',
              'in',
              changed.map((e) => e.id),
            )
            .execute();
        }
        return { environments: changed.length };
      });
    } catch (error) {
      if (await this.seenGithubDelivery(u.signature, u.deliveryId)) return undefined;
      throw error;
    }
  }

  /**
   * Records a delivery that changes nothing (another event, another action, an unknown
   * repository), so that a replay of it is refused like any other. False when it was seen before.
   */
  async rememberIgnoredDelivery(
    d: {
      signature: string;
      deliveryId: string;
      event: string;
      action?: string;
      repository?: string;
      number?: number;
    },
    now: Date,
  ): Promise<boolean> {
    try {
      await this.db
        .insertInto('github_deliveries')
        .values({
          signature: d.signature,
          delivery_id: d.deliveryId,
          event: d.event.slice(0, 100),
          action: d.action ?? null,
          repository: d.repository ?? null,
          number: d.number ?? null,
          environments: 0,
          received_at: now.toISOString(),
        })
        .execute();
      return true;
    } catch (error) {
      if (await this.seenGithubDelivery(d.signature, d.deliveryId)) return false;
      throw error;
    }
  }

  /** Whether any environment (of any state) was recorded for the repository. */
  async knowsRepository(repository: string): Promise<boolean> {
    const row = await this.reader
      .selectFrom('environments')
      .select('id')
      .where('pull_request_repository', '=', repository)
      .limit(1)
      .executeTakeFirst();
    return row !== undefined;
  }
}
