/**
 * One batch over HTTP: `POST <server>/api/v1/events` with `{"events": [...]}` and the bearer
 * token, and what the answer means for the stream (docs/design.md#event-stream): stored, retry later (408, 429,
 * 5xx, network errors, timeouts), refused (other 4xx: quarantine), or not authorised (401: stop
 * and keep everything).
 */
import type http from 'node:http';
import { redactUrlsIn } from '../redact.js';
import { headerValue, httpModuleFor, httpRequest, type HttpAnswer } from '../http-request.js';

export interface StreamConnection {
  url: string;
  token?: string;
}

export type SendOutcome =
  | { kind: 'stored'; accepted: number; duplicates: number }
  | {
      kind: 'retry';
      reason: string;
      status?: number;
      error?: ServerError;
      retryAfterMs?: number;
      /** Nothing listens at the server's address (ECONNREFUSED): the server is down. */
      refused?: true;
    }
  | { kind: 'refused'; status: number; error: ServerError }
  | { kind: 'unauthorized'; status: number; error: ServerError }
  | { kind: 'too-large'; status: number; error: ServerError }
  | { kind: 'aborted' };

export interface ServerError {
  code: string;
  message: string;
  detail?: Record<string, unknown>;
}

/** Retry-After as seconds or an HTTP date, in milliseconds from `now`; undefined when absent or invalid. */
export function parseRetryAfter(value: string | null | undefined, now = Date.now()): number | undefined {
  if (!value) return undefined;
  const trimmed = value.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.round(Number(trimmed) * 1000);
  const at = Date.parse(trimmed);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - now);
}

/** Whether a request failed because nothing listens at the address (every address tried refused). */
function isConnectionRefused(error: unknown): boolean {
  const e = error as { code?: string; errors?: unknown[] };
  if (e.code === 'ECONNREFUSED') return true;
  // Node tries each address of a name (localhost: ::1 and 127.0.0.1) and reports them together.
  return Array.isArray(e.errors) && e.errors.length > 0 && e.errors.every(isConnectionRefused);
}

function describeNetworkError(error: unknown): string {
  const e = error as { message?: string; code?: string };
  const message = redactUrlsIn(e.message || e.code || String(error));
  return e.code && !message.includes(e.code) ? `${message} (${e.code})` : message;
}

function serverError(status: number, text: string): ServerError {
  try {
    const body = JSON.parse(text) as { error?: Partial<ServerError> };
    if (body.error && typeof body.error.message === 'string') {
      return {
        code: typeof body.error.code === 'string' ? body.error.code : `HTTP_${status}`,
        message: body.error.message,
        ...(body.error.detail && typeof body.error.detail === 'object' ? { detail: body.error.detail } : {}),
      };
    }
  } catch {
    // not our error format
  }
  return { code: `HTTP_${status}`, message: text.slice(0, 500) || `HTTP ${status}` };
}

/**
 * Keep-alive connections for the stream. node:http rather than fetch: it loads in a few
 * milliseconds (fetch costs a few hundred ms on first use) and its sockets are closed when the
 * stream ends, so an idle connection never keeps a finished command alive. Each agent is made
 * (and its module loaded) when a request first needs it.
 */
export class StreamAgent {
  private readonly agents: Partial<Record<'http:' | 'https:', http.Agent>> = {};

  for(url: URL): http.Agent {
    const protocol = url.protocol === 'https:' ? 'https:' : 'http:';
    return (this.agents[protocol] ??= new (httpModuleFor(url).Agent)({ keepAlive: true, maxSockets: 1 }));
  }

  destroy(): void {
    this.agents['http:']?.destroy();
    this.agents['https:']?.destroy();
  }
}

/** Sends one batch; never throws. `body` is the JSON text `{"events":[…]}`. */
export async function sendBatch(
  connection: StreamConnection,
  body: string,
  options: { signal?: AbortSignal; timeoutMs?: number; agent?: StreamAgent } = {},
): Promise<SendOutcome> {
  const timeoutMs = options.timeoutMs ?? 30_000;
  const timeout = new AbortController();
  const timer = setTimeout(() => timeout.abort(), timeoutMs);
  const signal = options.signal ? AbortSignal.any([options.signal, timeout.signal]) : timeout.signal;
  const ownAgent = options.agent ? undefined : new StreamAgent();
  const url = new URL(`${connection.url}/api/v1/events`);
  let response: HttpAnswer;
  try {
    response = await httpRequest(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json',
        ...(connection.token ? { authorization: `Bearer ${connection.token}` } : {}),
      },
      body: Buffer.from(body, 'utf8'),
      agent: (options.agent ?? ownAgent!).for(url),
      signal,
    });
  } catch (error) {
    if (options.signal?.aborted) return { kind: 'aborted' };
    if (timeout.signal.aborted) return { kind: 'retry', reason: `no answer within ${timeoutMs / 1000} s` };
    return {
      kind: 'retry',
      reason: describeNetworkError(error),
      ...(isConnectionRefused(error) ? { refused: true as const } : {}),
    };
  } finally {
    clearTimeout(timer);
    ownAgent?.destroy();
  }
  const { status, text } = response;
  if (status >= 200 && status < 300) {
    try {
      const parsed = JSON.parse(text) as { accepted?: unknown; duplicates?: unknown };
      return {
        kind: 'stored',
        accepted: Number(parsed.accepted ?? 0),
        duplicates: Number(parsed.duplicates ?? 0),
      };
    } catch {
      return { kind: 'retry', status, reason: `HTTP ${status} with an unreadable body` };
    }
  }
  const retryAfterMs = parseRetryAfter(headerValue(response.headers, 'retry-after'));
  if (status === 408 || status === 429 || status >= 500) {
    const error = serverError(status, text);
    return {
      kind: 'retry',
      status,
      error,
      reason: `HTTP ${status}: ${error.message}`,
      ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
    };
  }
  if (status === 401) return { kind: 'unauthorized', status, error: serverError(status, text) };
  if (status === 413) return { kind: 'too-large', status, error: serverError(status, text) };
  if (status >= 400) return { kind: 'refused', status, error: serverError(status, text) };
  // 1xx/3xx: a proxy or a wrong URL; try again later rather than lose anything.
  return {
    kind: 'retry',
    status,
    reason: `unexpected HTTP ${status}`,
    ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
  };
}

export interface BackoffPolicy {
  baseMs: number;
  capMs: number;
  /** Longest Retry-After honoured (a server asking for an hour gets this). */
  maxRetryAfterMs: number;
}

export const defaultBackoff: BackoffPolicy = { baseMs: 250, capMs: 30_000, maxRetryAfterMs: 300_000 };

/**
 * The wait before retry number `attempt` (0 for the first retry): exponential with "equal
 * jitter" (half fixed, half random), and never shorter than the server's Retry-After.
 */
export function retryDelay(
  attempt: number,
  retryAfterMs: number | undefined,
  policy: BackoffPolicy = defaultBackoff,
  random: () => number = Math.random,
): number {
  const ceiling = Math.min(policy.capMs, policy.baseMs * 2 ** Math.min(attempt, 30));
  const jittered = ceiling / 2 + random() * (ceiling / 2);
  if (retryAfterMs === undefined) return Math.round(jittered);
  return Math.round(Math.max(Math.min(retryAfterMs, policy.maxRetryAfterMs), jittered));
}
