/**
 * The server's notifications: `cleanup.warning` (an environment entered its warning period:
 * once per environment and due time) and `cleanup.done` (a cleanup job finished done: once per
 * job) delivered to the webhooks that asked for them. Each pass enqueues what is new — from the
 * stored decisions and the audit log, so nothing depends on the process that planned or executed
 * surviving — then sends the deliveries that are due, each under a short lease (one replica sends
 * it), signed, and retried with backoff until delivered or out of attempts. Deliveries are rows:
 * a restart resumes them.
 */
import { randomUUID } from 'node:crypto';
import { TendError } from '../../errors.js';
import { redactUrl, redactUrlsIn } from '../../redact.js';
import { cliVersion } from '../../version.js';
import { NotificationRepository, type NewDelivery } from '../db/repositories/notifications.js';
import type { CleanupDecisionRow, Database, WebhookDeliveryRow, WebhookRow } from '../db/schema.js';
import { startPeriodic, type Periodic } from '../periodic.js';
import type { Kysely } from 'kysely';
import { ulid } from 'ulidx';
import {
  checkWebhook,
  deliveryHeader,
  eventHeader,
  formatNotice,
  generateWebhookSecret,
  signatureHeader,
  signDelivery,
  type Notice,
  type WebhookEvent,
  type WebhookFormat,
} from './webhooks.js';

export interface NotificationSettings {
  /** Pause between passes of the server's loop. */
  intervalMs: number;
  /** Backoff before retry n: base × 2^(n-1), at most 1 h. */
  retryBaseMs: number;
  /** Attempts before a delivery is given up (`failed`). */
  maxAttempts: number;
  /** One attempt's HTTP timeout. */
  timeoutMs: number;
  /** How long a replica holds a delivery it is sending. */
  leaseMs: number;
}

export const defaultNotificationSettings: NotificationSettings = {
  intervalMs: 2000,
  retryBaseMs: 10_000,
  maxAttempts: 8,
  timeoutMs: 10_000,
  leaseMs: 60_000,
};

/** How far back each pass re-reads the audit log (entries committed late by another replica). */
const auditOverlapMs = 60_000;

export interface WebhookInfo {
  id: string;
  url: string;
  events: WebhookEvent[];
  format: WebhookFormat;
  project: string | null;
  createdAt: string;
  createdBy: string;
}

export interface WebhookListing extends WebhookInfo {
  deliveries: { pending: number; delivered: number; failed: number; lastError: string | null };
}

export interface PassOutcome {
  enqueued: number;
  delivered: number;
  retried: number;
  failed: number;
  /** Warnings that no longer held when they were to be sent. */
  dropped: number;
}

export function webhookInfo(row: WebhookRow): WebhookInfo {
  return {
    id: row.id,
    url: redactUrl(row.url),
    events: JSON.parse(row.events) as WebhookEvent[],
    format: row.format as WebhookFormat,
    project: row.project,
    createdAt: row.created_at,
    createdBy: row.created_by,
  };
}

export function retryDelayMs(settings: NotificationSettings, attempt: number): number {
  return Math.min(3_600_000, settings.retryBaseMs * 2 ** Math.max(0, attempt - 1));
}

export class NotificationService {
  readonly repository: NotificationRepository;
  private readonly owner = randomUUID();
  /** Where people open the dashboard (keep-alive links); set once the server listens. */
  publicUrl = 'http://127.0.0.1:7420';

  constructor(
    db: Kysely<Database>,
    reader: Kysely<Database>,
    private readonly now: () => Date,
    readonly settings: NotificationSettings = defaultNotificationSettings,
  ) {
    this.repository = new NotificationRepository(db, reader);
  }

  /** A new webhook; its secret is returned only here. */
  async addWebhook(
    input: { url: string; events: readonly string[]; format?: string; project?: string },
    actor: string,
  ): Promise<{ webhook: WebhookInfo; secret: string }> {
    const checked = checkWebhook(input);
    const row: WebhookRow = {
      id: `wh_${ulid()}`,
      url: checked.url,
      events: JSON.stringify(checked.events),
      format: checked.format,
      project: checked.project,
      secret: generateWebhookSecret(),
      created_at: this.now().toISOString(),
      created_by: actor,
    };
    await this.repository.addWebhook(row);
    return { webhook: webhookInfo(row), secret: row.secret };
  }

  async listWebhooks(): Promise<WebhookInfo[]> {
    return (await this.repository.listWebhooks()).map(webhookInfo);
  }

  /** The webhooks with their deliveries: pending, delivered, failed and the last error. */
  async listWebhooksWithDeliveries(): Promise<WebhookListing[]> {
    const [webhooks, stats] = await Promise.all([this.listWebhooks(), this.repository.deliveryCounts()]);
    return webhooks.map((w) => ({
      ...w,
      deliveries: stats.get(w.id) ?? { pending: 0, delivered: 0, failed: 0, lastError: null },
    }));
  }

  async removeWebhook(id: string): Promise<WebhookInfo> {
    const row = await this.repository.removeWebhook(id);
    if (!row) {
      throw new TendError('TEND_WEBHOOK_NOT_FOUND', `no webhook with id "${id.slice(0, 64)}"`, {
        detail: { hint: 'list them with `tend server webhook list`' },
      });
    }
    return webhookInfo(row);
  }

  /**
   * The server's loop: a pass every `intervalMs`; a failing pass is logged and the next one
   * tried. `stop` waits for the pass in flight.
   */
  startLoop(log: { warn(details: Record<string, unknown>, message: string): void }): Periodic {
    return startPeriodic(
      this.settings.intervalMs,
      async () => {
        const outcome = await this.pass();
        if (outcome.failed > 0) {
          log.warn(
            { ...outcome },
            `${outcome.failed} webhook delivery(ies) failed for good (out of attempts)`,
          );
        }
      },
      (err) => log.warn({ err }, 'webhook notification pass failed; retrying'),
    );
  }

  /** One pass: enqueue what is new, then send what is due. */
  async pass(): Promise<PassOutcome> {
    const webhooks = await this.repository.listWebhooks();
    const enqueued = webhooks.length > 0 ? await this.enqueue(webhooks) : 0;
    return { enqueued, ...(await this.deliver(webhooks)) };
  }

  private keepAliveUrl(environmentId: string): string {
    return `${this.publicUrl.replace(/\/+$/, '')}/environments/${encodeURIComponent(environmentId)}`;
  }

  private async enqueue(webhooks: WebhookRow[]): Promise<number> {
    const now = this.now();
    const subscribed = (event: WebhookEvent, project: string) =>
      webhooks.filter(
        (w) =>
          (JSON.parse(w.events) as string[]).includes(event) && (w.project === null || w.project === project),
      );
    const deliveries: NewDelivery[] = [];
    const add = (w: WebhookRow, notice: Omit<Notice, 'deliveryId'>, key: string) => {
      const deliveryId = ulid(now.getTime());
      deliveries.push({
        id: deliveryId,
        webhookId: w.id,
        event: notice.event,
        dedupeKey: key,
        project: notice.environment.project,
        environmentId: notice.environment.id,
        body: formatNotice({ ...notice, deliveryId }, w.format as WebhookFormat),
      });
    };

    // Warnings: once per environment and due time (its first namespace speaks for it).
    const seen = new Set<string>();
    for (const d of await this.repository.warnings(now)) {
      const key = `${d.environment_id}@${d.due_at}`;
      if (seen.has(key)) continue;
      seen.add(key);
      const targets = subscribed('cleanup.warning', d.project);
      for (const w of targets) add(w, warningNotice(d, this.keepAliveUrl(d.environment_id)), key);
    }

    // Done: every cleanup-done entry since the cursor (re-reading a short overlap).
    const cursor = await this.repository.cursor();
    const since = new Date((cursor ? Date.parse(cursor) : now.getTime()) - auditOverlapMs);
    let afterId: string | undefined;
    let latest = cursor ?? now.toISOString();
    for (;;) {
      const entries = await this.repository.doneEntries(since, afterId, 500);
      for (const e of entries) {
        const detail = JSON.parse(e.detail ?? '{}') as Record<string, unknown>;
        const project = String(detail.project ?? '');
        const jobId = String(detail.jobId ?? e.id);
        for (const w of subscribed('cleanup.done', project)) {
          if (e.at < w.created_at) continue;
          add(
            w,
            {
              event: 'cleanup.done',
              environment: {
                id: e.environment_id ?? '',
                project,
                name: String(detail.environment ?? ''),
                namespace: String(detail.namespace ?? ''),
              },
              action: String(detail.cleanupAction ?? 'delete'),
              dueAt: e.at,
              reason: String(detail.message ?? ''),
              keepAliveUrl: this.keepAliveUrl(e.environment_id ?? ''),
              jobId,
            },
            jobId,
          );
        }
        if (e.at > latest) latest = e.at;
      }
      if (entries.length < 500) break;
      afterId = entries[entries.length - 1]!.id;
    }
    const added = deliveries.length > 0 ? await this.repository.enqueue(deliveries, now) : 0;
    await this.repository.setCursor(latest > now.toISOString() ? now.toISOString() : latest);
    return added;
  }

  private async deliver(webhooks: WebhookRow[]): Promise<Omit<PassOutcome, 'enqueued'>> {
    const outcome = { delivered: 0, retried: 0, failed: 0, dropped: 0 };
    const byId = new Map(webhooks.map((w) => [w.id, w]));
    const claimed = await this.repository.claim(this.owner, this.now(), this.settings.leaseMs, 50);
    await Promise.all(
      claimed.map(async (d) => {
        // A warning is checked against the record when it is sent, and again at every retry:
        // one that no longer holds is dropped (and audited), never sent late.
        const obsolete = await this.obsoleteWarning(d);
        if (obsolete !== undefined) {
          outcome.dropped++;
          await this.repository.drop(d, this.owner, obsolete, this.now());
          return;
        }
        const webhook = byId.get(d.webhook_id) ?? (await this.repository.webhook(d.webhook_id));
        const result = webhook
          ? await this.send(webhook, d)
          : { ok: false, status: null, error: 'the webhook was removed' };
        const now = this.now();
        const attempts = d.attempts + 1;
        if (result.ok) {
          outcome.delivered++;
          await this.repository.finishAttempt(
            d,
            this.owner,
            { state: 'delivered', status: result.status, error: null },
            now,
          );
        } else if (webhook && attempts < this.settings.maxAttempts) {
          outcome.retried++;
          const retryAt = new Date(now.getTime() + retryDelayMs(this.settings, attempts));
          await this.repository.finishAttempt(
            d,
            this.owner,
            { state: 'pending', status: result.status, error: result.error },
            now,
            retryAt,
          );
        } else {
          outcome.failed++;
          await this.repository.finishAttempt(
            d,
            this.owner,
            { state: 'failed', status: result.status, error: result.error },
            now,
          );
        }
      }),
    );
    return outcome;
  }

  /** Why a warning delivery would now announce what will not happen, or undefined. */
  private async obsoleteWarning(d: WebhookDeliveryRow): Promise<string | undefined> {
    if (d.event !== 'cleanup.warning' || d.environment_id === null) return undefined;
    // The dedupe key of a warning is `<environment id>@<due time>` (enqueue).
    const dueAt = d.dedupe_key.slice(d.dedupe_key.indexOf('@') + 1);
    return this.repository.warningObsolete(d.environment_id, dueAt);
  }

  /** One attempt: POST the body, signed now. Redirects are not followed. */
  private async send(
    webhook: WebhookRow,
    d: WebhookDeliveryRow,
  ): Promise<{ ok: boolean; status: number | null; error: string | null }> {
    const timestamp = Math.floor(this.now().getTime() / 1000);
    try {
      const response = await fetch(webhook.url, {
        method: 'POST',
        redirect: 'manual',
        headers: {
          'content-type': 'application/json',
          'user-agent': `tend/${cliVersion}`,
          [signatureHeader]: signDelivery(webhook.secret, timestamp, d.body),
          [eventHeader]: d.event,
          [deliveryHeader]: d.id,
        },
        body: d.body,
        signal: AbortSignal.timeout(this.settings.timeoutMs),
      });
      await response.body?.cancel().catch(() => undefined);
      if (response.status >= 200 && response.status < 300)
        return { ok: true, status: response.status, error: null };
      return { ok: false, status: response.status, error: `the receiver answered ${response.status}` };
    } catch (error) {
      const e = error as Error & { cause?: { message?: string; code?: string } };
      const why = e.cause?.code ?? e.cause?.message ?? e.message;
      return { ok: false, status: null, error: redactUrlsIn(`${e.message}: ${why}`).slice(0, 500) };
    }
  }
}

function warningNotice(d: CleanupDecisionRow, keepAliveUrl: string): Omit<Notice, 'deliveryId'> {
  return {
    event: 'cleanup.warning',
    environment: {
      id: d.environment_id,
      project: d.project,
      name: d.environment,
      namespace: d.namespace_name,
    },
    action: d.action,
    dueAt: d.due_at,
    ...(d.due_local ? { dueLocal: d.due_local } : {}),
    reason: d.sentence,
    keepAliveUrl,
  };
}
