/**
 * The cleanup job queue over HTTP, for `tend agent`: the agent routes of the server with an
 * `agent`-scope bearer token. Transient failures (no connection, 5xx, 429) are retried with
 * exponential backoff honouring Retry-After; a refused request (4xx) is not. A retried `claim`
 * whose first answer was lost leaves jobs leased to nobody: their leases expire and return them.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { TendError } from '../errors.js';
import { apiRequest } from '../remote/client.js';
import { compressArchive } from '../cleanup/archive.js';
import { archivePath, queuePath, type CleanupQueue, type QueueRoute } from '../cleanup/protocol.js';

export interface HttpQueueOptions {
  server: string;
  token: string;
  /** Retries of a transient failure (default 6). */
  retries?: number;
  baseDelayMs?: number;
  maxDelayMs?: number;
  timeoutMs?: number;
  signal?: AbortSignal;
  onRetry?: (what: string, error: TendError, waitMs: number) => void;
}

function transient(error: unknown): error is TendError {
  if (!(error instanceof TendError)) return false;
  const status = error.detail?.status as number | undefined;
  // TEND_SERVER without a status: the server could not be reached.
  if (status === undefined) return error.code === 'TEND_SERVER';
  return status === 429 || status >= 500;
}

export class HttpCleanupQueue implements CleanupQueue {
  constructor(private readonly options: HttpQueueOptions) {}

  private post<T>(route: QueueRoute, body: unknown, jobId?: string): Promise<T> {
    return this.send<T>(queuePath(route, jobId), { body });
  }

  private async send<T>(
    path: string,
    payload: { method?: 'GET'; body?: unknown; rawBody?: { contentType: string; data: Buffer } },
  ): Promise<T> {
    const o = this.options;
    const retries = o.retries ?? 6;
    for (let attempt = 0; ; attempt++) {
      try {
        return await apiRequest<T>({ url: o.server, token: o.token }, path, {
          method: payload.method ?? 'POST',
          ...payload,
          timeoutMs: o.timeoutMs ?? 30_000,
        });
      } catch (error) {
        if (!transient(error) || attempt >= retries || o.signal?.aborted) throw error;
        const backoff = Math.min(o.maxDelayMs ?? 10_000, (o.baseDelayMs ?? 250) * 2 ** attempt);
        const retryAfter = (error.detail?.retryAfterMs as number | undefined) ?? 0;
        const waitMs = Math.min(60_000, Math.max(backoff * (0.5 + Math.random() / 2), retryAfter));
        o.onRetry?.(path, error, Math.round(waitMs));
        await delay(waitMs);
      }
    }
  }

  heartbeat: CleanupQueue['heartbeat'] = (body) => this.post('heartbeat', body);
  inventory: CleanupQueue['inventory'] = (body) => this.post('inventory', body);
  claim: CleanupQueue['claim'] = (body) => this.post('claim', body);
  start: CleanupQueue['start'] = (jobId, body) => this.post('start', body, jobId);
  complete: CleanupQueue['complete'] = (jobId, body) => this.post('complete', body, jobId);
  restoreEvents: CleanupQueue['restoreEvents'] = (jobId, body) => this.post('restoreEvents', body, jobId);
  archive: CleanupQueue['archive'] = (jobId, executorId, archive) =>
    this.send(archivePath(jobId, executorId), {
      rawBody: { contentType: 'application/gzip', data: compressArchive(archive) },
    });
  restoreOrder: CleanupQueue['restoreOrder'] = (jobId, executorId) =>
    this.send(archivePath(jobId, executorId), { method: 'GET' });
}
