/** A small JSON client for the server API, used by CLI commands (`tend login`, `tend environments`). */
import { TendError, type ErrorCode, errorCodes } from '../errors.js';
import { redactUrl, redactUrlsIn } from '../redact.js';
import { headerValue, httpRequest, type HttpAnswer } from '../http-request.js';

export interface Connection {
  url: string;
  token?: string;
}

export async function apiRequest<T>(
  connection: Connection,
  path: string,
  init: {
    method?: string;
    body?: unknown;
    /** A body that is not JSON (a compressed archive), sent as it is with its content type. */
    rawBody?: { contentType: string; data: Buffer };
    timeoutMs?: number;
  } = {},
): Promise<T> {
  const url = new URL(connection.url + path);
  const timeoutMs = init.timeoutMs ?? 15_000;
  // A timer cleared with the answer: none is left running after the request (AbortSignal.timeout's is).
  const timeout = new AbortController();
  const timer = setTimeout(() => timeout.abort(), timeoutMs);
  timer.unref();
  let response: HttpAnswer;
  try {
    response = await httpRequest(url, {
      method: init.method ?? 'GET',
      headers: {
        accept: 'application/json',
        ...(connection.token ? { authorization: `Bearer ${connection.token}` } : {}),
        ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...(init.rawBody ? { 'content-type': init.rawBody.contentType } : {}),
      },
      ...(init.body !== undefined ? { body: Buffer.from(JSON.stringify(init.body), 'utf8') } : {}),
      ...(init.rawBody ? { body: init.rawBody.data } : {}),
      agent: false,
      signal: timeout.signal,
    });
  } catch (error) {
    const why = timeout.signal.aborted
      ? `no answer within ${timeoutMs / 1000} s`
      : redactUrlsIn((error as Error).message || String((error as { code?: unknown }).code ?? error));
    throw new TendError(
      'TEND_SERVER',
      `cannot reach the tend server at ${redactUrl(connection.url)}: ${why}`,
      {
        cause: error,
        detail: {
          hint: 'check the URL (tend login --server URL, or TEND_SERVER_URL) and that the server runs',
        },
      },
    );
  } finally {
    clearTimeout(timer);
  }
  const { status, text } = response;
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  if (status < 200 || status >= 300) {
    const err = (body as { error?: { code?: string; message?: string } } | undefined)?.error;
    const code: ErrorCode =
      status === 401
        ? 'TEND_AUTH'
        : status === 403
          ? 'TEND_AUTH_FORBIDDEN'
          : err?.code && Object.hasOwn(errorCodes, err.code)
            ? (err.code as ErrorCode)
            : 'TEND_SERVER';
    const retryAfter = Number(headerValue(response.headers, 'retry-after') ?? NaN);
    throw new TendError(code, `${redactUrl(connection.url)}: ${err?.message ?? `HTTP ${status}`}`, {
      detail: {
        status,
        ...(Number.isFinite(retryAfter) && retryAfter >= 0 ? { retryAfterMs: retryAfter * 1000 } : {}),
      },
    });
  }
  return body as T;
}
