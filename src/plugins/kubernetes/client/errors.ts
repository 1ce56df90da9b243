/**
 * What a failed Kubernetes API call means: its HTTP status and `Status` body, whether it may be
 * retried, and the clear TendError a user sees (unreachable cluster, expired credentials,
 * missing RBAC, anything else with the API's own message).
 */
import { setTimeout as delay } from 'node:timers/promises';
import { TendError } from '../../../errors.js';

export interface ApiFailure {
  /** HTTP status; undefined when no response arrived (connection refused, dropped…). */
  status?: number;
  reason?: string;
  message: string;
  retryAfterMs?: number;
  /** `details.kind` of the Status (e.g. `namespaces` for a missing namespace). */
  detailsKind?: string;
  detailsName?: string;
  causes?: { reason?: string; message?: string; field?: string }[];
  /** Network error code (ECONNRESET, ECONNREFUSED…). */
  networkCode?: string;
}

const networkCodes = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'EPIPE',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ECONNABORTED',
  'EHOSTUNREACH',
  'UND_ERR_SOCKET',
]);

function parseBody(body: unknown): Record<string, unknown> | undefined {
  if (body && typeof body === 'object') return body as Record<string, unknown>;
  if (typeof body === 'string') {
    try {
      const parsed = JSON.parse(body) as unknown;
      return parsed && typeof parsed === 'object' ? (parsed as Record<string, unknown>) : undefined;
    } catch {
      return undefined;
    }
  }
  return undefined;
}

function retryAfter(headers: unknown): number | undefined {
  if (!headers || typeof headers !== 'object') return undefined;
  const h = headers as Record<string, unknown>;
  const value = h['retry-after'] ?? h['Retry-After'];
  if (typeof value !== 'string' && typeof value !== 'number') return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(String(value));
  return Number.isFinite(date) ? Math.max(0, date - Date.now()) : undefined;
}

/**
 * Reads any error of a request (connection.ts's KubeApiError, network errors) or of client-node's
 * streaming clients (a log's FetchError, WebSocket errors).
 */
export function describeFailure(error: unknown): ApiFailure {
  const e = error as Record<string, unknown> & { message?: string; cause?: unknown };
  if (e && typeof e.code === 'number' && 'body' in e) {
    const body = parseBody(e.body);
    const details = (body?.details ?? {}) as Record<string, unknown>;
    const failure: ApiFailure = {
      status: e.code,
      message:
        (typeof body?.message === 'string' && body.message) ||
        (typeof e.body === 'string' && e.body.trim()) ||
        `HTTP ${e.code}`,
    };
    if (typeof body?.reason === 'string') failure.reason = body.reason;
    const ra =
      retryAfter(e.headers) ??
      (typeof details.retryAfterSeconds === 'number' ? details.retryAfterSeconds * 1000 : undefined);
    if (ra !== undefined) failure.retryAfterMs = ra;
    if (typeof details.kind === 'string') failure.detailsKind = details.kind;
    if (typeof details.name === 'string') failure.detailsName = details.name;
    if (Array.isArray(details.causes)) failure.causes = details.causes as ApiFailure['causes'];
    return failure;
  }
  const message = typeof e?.message === 'string' ? e.message : String(error);
  // WebSocket upgrades refused by the server: "Unexpected server response: 429".
  const ws = /Unexpected server response: (\d{3})/.exec(message);
  if (ws) return { status: Number(ws[1]), message };
  const code =
    (typeof e?.code === 'string' && e.code) ||
    (typeof e?.errno === 'string' && e.errno) ||
    (e?.cause && typeof (e.cause as { code?: unknown }).code === 'string'
      ? ((e.cause as { code: string }).code as string)
      : undefined);
  if (code && networkCodes.has(code)) return { message, networkCode: code };
  if (/socket hang up|ECONNRESET|network socket disconnected|other side closed/i.test(message)) {
    return { message, networkCode: 'ECONNRESET' };
  }
  return { message };
}

/** Whether a call may be retried: 429 always (nothing was done); 5xx and dropped connections only when idempotent. */
export function isRetryable(failure: ApiFailure, idempotent: boolean): boolean {
  if (failure.status === 429) return true;
  if (!idempotent) return false;
  if (failure.status !== undefined) return [500, 502, 503, 504].includes(failure.status);
  return failure.networkCode !== undefined && failure.networkCode !== 'ENOTFOUND';
}

export interface RetryOptions {
  retries: number;
  idempotent: boolean;
  signal?: AbortSignal;
  /** Called before each retry (for debug logs). */
  onRetry?: (failure: ApiFailure, attempt: number, waitMs: number) => void;
  baseDelayMs?: number;
  maxDelayMs?: number;
}

/** Runs `fn`, retrying transient failures with bounded exponential backoff (honouring Retry-After). */
export async function withRetry<T>(fn: () => Promise<T>, options: RetryOptions): Promise<T> {
  const base = options.baseDelayMs ?? 200;
  const max = options.maxDelayMs ?? 5_000;
  for (let attempt = 0; ; attempt++) {
    try {
      return await fn();
    } catch (error) {
      if (error instanceof TendError) throw error;
      const failure = describeFailure(error);
      if (attempt >= options.retries || !isRetryable(failure, options.idempotent)) throw error;
      if (options.signal?.aborted) throw error;
      const backoff = Math.min(max, base * 2 ** attempt) * (0.5 + Math.random() / 2);
      const waitMs = Math.min(30_000, Math.max(backoff, failure.retryAfterMs ?? 0));
      options.onRetry?.(failure, attempt + 1, Math.round(waitMs));
      await delay(waitMs, undefined, options.signal ? { signal: options.signal } : undefined).catch(() => {
        throw error;
      });
    }
  }
}

export interface CallDescription {
  /** What was being done, e.g. `create pod tend-build-api-x1 in shop-dev`. */
  what: string;
  server: string;
  context: string;
  namespace?: string;
}

/** The error a user sees for a failed API call. */
export function apiError(error: unknown, call: CallDescription): TendError {
  if (error instanceof TendError) return error;
  const f = describeFailure(error);
  const where = `cluster ${call.server} (context "${call.context}")`;
  const detail: Record<string, unknown> = { server: call.server, context: call.context };
  if (call.namespace) detail.namespace = call.namespace;
  if (f.status !== undefined) detail.status = f.status;
  if (f.reason) detail.reason = f.reason;
  if (f.causes) detail.causes = f.causes;
  if (f.status === undefined && f.networkCode) {
    detail.networkCode = f.networkCode;
    return new TendError(
      'TEND_K8S_UNREACHABLE',
      `could not ${call.what}: cannot reach ${where}: ${f.message}; check that the cluster is running and the kubeconfig points at it`,
      { detail, cause: error },
    );
  }
  if (f.status === 401) {
    return new TendError(
      'TEND_K8S_UNAUTHORIZED',
      `could not ${call.what}: ${where} rejected the credentials (an expired or invalid token or client certificate): ${f.message}; log in to the cluster again or refresh the kubeconfig`,
      { detail, cause: error },
    );
  }
  if (f.status === 403 && !f.causes?.some((c) => c.reason === 'NamespaceTerminating')) {
    return new TendError(
      'TEND_K8S_FORBIDDEN',
      `could not ${call.what}: forbidden by ${where}: ${f.message}; ask a cluster admin for the RBAC permission`,
      { detail, cause: error },
    );
  }
  return new TendError('TEND_K8S_API', `could not ${call.what}: ${f.message}`, { detail, cause: error });
}
