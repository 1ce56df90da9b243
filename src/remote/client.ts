/** A small JSON client for the server API, used by CLI commands (`tend login`, `tend environments`). */
import { TendError, type ErrorCode, errorCodes } from '../errors.js';
import { redactUrl, redactUrlsIn } from '../redact.js';

export interface Connection {
  url: string;
  token?: string;
}

export async function apiRequest<T>(
  connection: Connection,
  path: string,
  init: { method?: string; body?: unknown; timeoutMs?: number } = {},
): Promise<T> {
  const url = connection.url + path;
  let response: Response;
  try {
    response = await fetch(url, {
      method: init.method ?? 'GET',
      headers: {
        accept: 'application/json',
        ...(connection.token ? { authorization: `Bearer ${connection.token}` } : {}),
        ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      body: init.body !== undefined ? JSON.stringify(init.body) : undefined,
      signal: AbortSignal.timeout(init.timeoutMs ?? 15_000),
    });
  } catch (error) {
    throw new TendError(
      'TEND_SERVER',
      `cannot reach the tend server at ${redactUrl(connection.url)}: ${redactUrlsIn((error as Error).message)}`,
      {
        cause: error,
        detail: {
          hint: 'check the URL (tend login --server URL, or TEND_SERVER_URL) and that the server runs',
        },
      },
    );
  }
  const text = await response.text();
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  if (!response.ok) {
    const err = (body as { error?: { code?: string; message?: string } } | undefined)?.error;
    const code: ErrorCode =
      response.status === 401
        ? 'TEND_AUTH'
        : response.status === 403
          ? 'TEND_AUTH_FORBIDDEN'
          : err?.code && Object.hasOwn(errorCodes, err.code)
            ? (err.code as ErrorCode)
            : 'TEND_SERVER';
    const retryAfter = Number(response.headers.get('retry-after') ?? NaN);
    throw new TendError(code, `${redactUrl(connection.url)}: ${err?.message ?? `HTTP ${response.status}`}`, {
      detail: {
        status: response.status,
        ...(Number.isFinite(retryAfter) && retryAfter >= 0 ? { retryAfterMs: retryAfter * 1000 } : {}),
      },
    });
  }
  return body as T;
}
