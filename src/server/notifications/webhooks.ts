/**
 * What a webhook is and what it receives: the events and formats, the checks on a new webhook
 * (an http/https URL within size limits, known events, a project name), its signing secret, the
 * signature of each delivery, and the two body formats — tend's JSON and a Slack
 * incoming-webhook message. docs/cleanup.md#webhooks says how a receiver verifies a delivery.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { TendError } from '../../errors.js';
import { redactUrl } from '../../redact.js';
import { projectBindingPattern } from '../auth.js';
import { formatTime, outlook, pastTense } from '../../cleanup/format.js';
import type { CleanupAction } from '../../cleanup/protocol.js';

export const webhookEvents = ['cleanup.warning', 'cleanup.done'] as const;
export type WebhookEvent = (typeof webhookEvents)[number];
export const webhookFormats = ['json', 'slack'] as const;
export type WebhookFormat = (typeof webhookFormats)[number];

/** The header carrying `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`. */
export const signatureHeader = 'tend-signature';
export const eventHeader = 'tend-event';
export const deliveryHeader = 'tend-delivery';
/** Longest webhook URL accepted. */
export const maxUrlLength = 2048;
/** A receiver should refuse a signature whose timestamp is further than this from its clock. */
export const signatureToleranceSeconds = 300;

/** The checked settings of a new webhook; a usage error (exit 2) naming what is wrong otherwise. */
export function checkWebhook(input: {
  url: string;
  events: readonly string[];
  format?: string;
  project?: string;
}): { url: string; events: WebhookEvent[]; format: WebhookFormat; project: string | null } {
  if (input.url.length > maxUrlLength) {
    throw new TendError('TEND_USAGE', `--url is longer than ${maxUrlLength} characters`);
  }
  let url: URL;
  try {
    url = new URL(input.url);
  } catch {
    throw new TendError('TEND_USAGE', `--url is not a URL: "${redactUrl(input.url).slice(0, 200)}"`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new TendError(
      'TEND_USAGE',
      `--url must be an http:// or https:// URL, got ${url.protocol.slice(0, 20)} (${redactUrl(input.url).slice(0, 200)})`,
    );
  }
  if (url.username || url.password) {
    throw new TendError(
      'TEND_USAGE',
      '--url must not carry a user name or password: deliveries are authenticated by their signature',
    );
  }
  if (input.events.length === 0) {
    throw new TendError('TEND_USAGE', `--event is required (repeatable): ${webhookEvents.join(', ')}`);
  }
  const events = [...new Set(input.events)];
  for (const e of events) {
    if (!(webhookEvents as readonly string[]).includes(e)) {
      throw new TendError(
        'TEND_USAGE',
        `--event must be one of ${webhookEvents.join(', ')}, got "${e.slice(0, 64)}"`,
      );
    }
  }
  const format = input.format ?? 'json';
  if (!(webhookFormats as readonly string[]).includes(format)) {
    throw new TendError('TEND_USAGE', `--format must be json or slack, got "${format.slice(0, 64)}"`);
  }
  if (input.project !== undefined && !projectBindingPattern.test(input.project)) {
    throw new TendError(
      'TEND_USAGE',
      `--project must be a project name, got "${input.project.slice(0, 64)}"`,
    );
  }
  return {
    url: url.toString(),
    events: events as WebhookEvent[],
    format: format as WebhookFormat,
    project: input.project ?? null,
  };
}

export function generateWebhookSecret(): string {
  return 'whsec_' + randomBytes(32).toString('base64url');
}

/** The `tend-signature` header value for a body sent at `timestampSeconds`. */
export function signDelivery(secret: string, timestampSeconds: number, body: string): string {
  const mac = createHmac('sha256', secret).update(`${timestampSeconds}.${body}`).digest('hex');
  return `t=${timestampSeconds},v1=${mac}`;
}

/** What a notification says, whatever its format. */
export interface Notice {
  event: WebhookEvent;
  deliveryId: string;
  environment: { id: string; project: string; name: string; namespace: string };
  action: string;
  /** When the action is due (warning) or was done (done). */
  dueAt: string;
  /** A warning of the policy's schedule: the due time in the schedule's time zone. */
  dueLocal?: string;
  reason: string;
  /** The environment's dashboard page, with its Keep alive buttons. */
  keepAliveUrl: string;
  jobId?: string;
}

export function formatNotice(notice: Notice, format: WebhookFormat): string {
  if (format === 'json') return JSON.stringify(notice);
  return JSON.stringify(slackMessage(notice));
}

/** Slack's mrkdwn needs &, < and > escaped. */
const slackEscape = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** A Slack incoming-webhook payload: text (notifications, fallback) and blocks. */
function slackMessage(n: Notice) {
  const env = `${n.environment.project}/${n.environment.name} (${n.environment.namespace})`;
  const action = n.action as CleanupAction;
  // With its date: a Slack message is read later than it is sent.
  const at = formatTime(Date.parse(n.dueAt), 0);
  // A schedule's warning in the time zone the schedule is written in, UTC after it.
  const due = n.dueLocal ? `${n.dueLocal} (${at}) by the schedule` : at;
  const headline =
    n.event === 'cleanup.warning'
      ? `:warning: *${slackEscape(env)}* ${outlook(action, { enforced: true }).verb} at ${slackEscape(due)} unless used`
      : `:broom: *${slackEscape(env)}* was ${pastTense[action]} at ${at}`;
  const text = `${headline}\n${slackEscape(n.reason)}`;
  return {
    text:
      n.event === 'cleanup.warning' ? `${headline} — keep it: <${n.keepAliveUrl}|keep alive>` : `${headline}`,
    blocks: [
      { type: 'section', text: { type: 'mrkdwn', text } },
      ...(n.event === 'cleanup.warning'
        ? [
            {
              type: 'actions',
              elements: [
                {
                  type: 'button',
                  text: { type: 'plain_text', text: 'Keep alive' },
                  url: n.keepAliveUrl,
                },
              ],
            },
          ]
        : []),
      {
        type: 'context',
        elements: [{ type: 'mrkdwn', text: `tend ${n.event} · delivery ${n.deliveryId}` }],
      },
    ],
  };
}
