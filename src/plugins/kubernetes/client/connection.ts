/**
 * The connection to a cluster: the kubeconfig read the way kubectl reads it (`KUBECONFIG` with
 * several files, else `~/.kube/config`; the provider's `context:` or the current context), and
 * the requests. @kubernetes/client-node reads the kubeconfig and authenticates every request
 * (tokens, client certificates, exec and OIDC plugins, proxies); the requests themselves are
 * tend's — JSON over node:https with one keep-alive pool per cluster — rather than its generated
 * API classes, whose package index loads every API group's code and model (a second of CPU for a
 * `tend status` that makes three calls); container logs are a streamed GET of tend's too. The
 * library is loaded lazily, here and only here (library.ts; streams.ts for exec and attach), so
 * that commands and projects that never talk to a cluster never load it.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type http from 'node:http';
import type https from 'node:https';
import type tls from 'node:tls';
import type { Readable } from 'node:stream';
import type { Attach, Exec, KubeConfig } from '@kubernetes/client-node';
import { builtinModule } from '../../../builtin-module.js';
import { TendError } from '../../../errors.js';
import { httpModuleFor, httpRequest } from '../../../http-request.js';
import { ResourcePaths } from './resources.js';
import type { V1APIResourceList } from './wire.js';
import { monotonicMs } from '../../../monotonic.js';

/**
 * The abort signal of the handler call a request is made for (set by the request gate around
 * each request): Ctrl-C aborts the requests in flight. Connections are shared by the calls of a
 * process, so the signal travels with the request, not with the connection.
 */
export const requestSignal = new AsyncLocalStorage<AbortSignal | undefined>();

export interface KubeRequest {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  /** `/api/v1/namespaces/shop-dev`: names in it already URI-encoded. */
  path: string;
  query?: Record<string, string | number | boolean | undefined>;
  /** Sent as JSON. */
  body?: unknown;
  /** For a body: `application/json` unless a patch says which kind it is. */
  contentType?: string;
}

/**
 * A request the API server answered with an error status: `code` and the parsed `Status` body,
 * as errors.ts `describeFailure` reads them (the shape of client-node's ApiException).
 */
export class KubeApiError extends Error {
  constructor(
    readonly code: number,
    readonly body: unknown,
    readonly headers: http.IncomingHttpHeaders,
    what: string,
  ) {
    const message = (body as { message?: unknown } | undefined)?.message;
    super(`${what}: HTTP ${code}${typeof message === 'string' ? `: ${message}` : ''}`);
    this.name = 'KubeApiError';
  }
}

/** Exec and attach: client-node's WebSocket clients, loaded on first use. */
export interface Streams {
  exec: Exec;
  attach: Attach;
}

export interface Connection {
  kubeConfig: KubeConfig;
  context: string;
  server: string;
  /** One API request; resolves with the parsed JSON answer, rejects with a KubeApiError. */
  request<T>(request: KubeRequest): Promise<T>;
  /** A GET whose answer is read as it arrives (a container's log); `signal` ends it. */
  stream(request: KubeRequest, signal: AbortSignal): Promise<Readable>;
  /** The URL path of a kind's objects (discovery for kinds tend does not know). */
  resources: ResourcePaths;
  streams(): Promise<Streams>;
  /**
   * The API server's time now, in milliseconds since the epoch: its last answer's `Date` header
   * (whole seconds) plus the time passed since on a clock that never steps. Undefined before an
   * answer with a `Date` header. The cleanup server checks its own clock against it.
   */
  serverTime(): number | undefined;
}

const connections = new Map<string, Promise<Connection>>();

/**
 * One connection per (kubeconfig, context) and process. `kubeconfigFile` (a cleanup executor's
 * `--kubeconfig`) is read instead of KUBECONFIG / ~/.kube/config.
 */
export function connect(context: string | undefined, kubeconfigFile?: string): Promise<Connection> {
  const key = `${kubeconfigFile ?? process.env.KUBECONFIG ?? ''}\0${process.env.HOME ?? ''}\0${context ?? ''}`;
  let connection = connections.get(key);
  if (!connection) {
    connection = open(context, kubeconfigFile);
    connections.set(key, connection);
    connection.catch(() => connections.delete(key));
  }
  return connection;
}

async function open(context: string | undefined, kubeconfigFile: string | undefined): Promise<Connection> {
  const lib = await import('./library.js');
  const kc = new lib.KubeConfig();
  const source = kubeconfigFile
    ? kubeconfigFile
    : process.env.KUBECONFIG
      ? `KUBECONFIG=${process.env.KUBECONFIG}`
      : '~/.kube/config';
  try {
    if (kubeconfigFile) kc.loadFromFile(kubeconfigFile);
    else kc.loadFromDefault();
  } catch (error) {
    throw new TendError(
      'TEND_K8S_CONTEXT',
      `could not read the kubeconfig (${source}): ${(error as Error).message}`,
      {
        cause: error,
      },
    );
  }
  const contexts = kc.getContexts().map((c) => c.name);
  if (context) {
    if (!contexts.includes(context)) {
      throw new TendError(
        'TEND_K8S_CONTEXT',
        `kubeconfig context "${context}" not found (${source}); available: ${contexts.join(', ') || '(none)'}`,
        {
          detail: {
            context,
            hint: "set `context:` of the kubernetes provider (the Project's providers:) to one of them",
          },
        },
      );
    }
    kc.setCurrentContext(context);
  }
  const current = kc.getCurrentContext();
  const cluster = kc.getCurrentCluster();
  if (!current || !contexts.includes(current) || !cluster) {
    throw new TendError(
      'TEND_K8S_CONTEXT',
      `no usable kubeconfig context (${source}); ` +
        (contexts.length
          ? `current context "${current || '(unset)'}" has no cluster; available: ${contexts.join(', ')}`
          : 'it defines no contexts'),
      {
        detail: {
          hint: "set KUBECONFIG, or `context:` of the kubernetes provider (the Project's providers:)",
        },
      },
    );
  }
  const clock: ServerClock = {};
  const prepare = preparer(kc, cluster.server.replace(/\/+$/, ''));
  const request = requester(prepare, clock);
  let streams: Promise<Streams> | undefined;
  return {
    kubeConfig: kc,
    context: current,
    server: cluster.server,
    request,
    stream: streamer(prepare),
    resources: new ResourcePaths((path) => request<V1APIResourceList>({ method: 'GET', path })),
    streams: () =>
      (streams ??= import('./streams.js').then(({ Attach, Exec }) => ({
        exec: new Exec(kc),
        attach: new Attach(kc),
      }))),
    serverTime: () =>
      clock.last === undefined ? undefined : clock.last.date + (monotonicMs() - clock.last.monotonic),
  };
}

/** The `Date` of the API server's last answer, and when (on the monotonic clock) it arrived. */
interface ServerClock {
  last?: { date: number; monotonic: number };
}

/** For tests: forget cached connections (e.g. after KUBECONFIG changed). */
export function resetConnections(): void {
  connections.clear();
}

/** A request as it goes on the wire: authenticated, with its agent. */
interface PreparedRequest {
  url: URL;
  headers: Record<string, string>;
  payload?: Buffer;
  agent: http.Agent | false;
}

/**
 * Requests to the cluster, authenticated by client-node for each request (an exec plugin's token
 * is refreshed when it expires). They share one keep-alive agent with the kubeconfig's TLS
 * options (CA, client certificate, server name): client-node's default is a new agent (and TLS
 * handshake) for every request, which dominates the cost of the many small calls tend makes.
 * Clusters behind a proxy, and plain-HTTP ones, keep the agent client-node makes for them.
 */
function preparer(kc: KubeConfig, server: string): (request: KubeRequest) => Promise<PreparedRequest> {
  let agent: https.Agent | undefined;
  return async ({ path, query, body, contentType }) => {
    const options: https.RequestOptions = {};
    await kc.applyToHTTPSOptions(options);
    const cluster = kc.getCurrentCluster();
    if (cluster && !cluster.proxyUrl && cluster.server.startsWith('https:')) {
      const { ca, cert, key, pfx, passphrase, rejectUnauthorized, servername } = options;
      // One TLS context for every connection of the pool: given only the CA and keys, node:tls
      // parses them again for each new socket (~1 ms each; a status opens up to six).
      agent ??= new (builtinModule<typeof https>('node:https').Agent)({
        secureContext: builtinModule<typeof tls>('node:tls').createSecureContext({
          ca,
          cert,
          key,
          pfx,
          passphrase,
        }),
        servername: servername ?? cluster.tlsServerName,
        ...(cluster.skipTLSVerify
          ? { rejectUnauthorized: false }
          : rejectUnauthorized !== undefined
            ? { rejectUnauthorized }
            : {}),
        keepAlive: true,
        maxSockets: 16,
      });
      options.agent = agent;
    }
    const headers: Record<string, string> = { accept: 'application/json' };
    for (const [name, value] of Object.entries(options.headers ?? {})) {
      if (value !== undefined)
        headers[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : String(value);
    }
    if (options.auth) headers.authorization = `Basic ${Buffer.from(options.auth).toString('base64')}`;
    let payload: Buffer | undefined;
    if (body !== undefined) {
      payload = Buffer.from(JSON.stringify(body), 'utf8');
      headers['content-type'] = contentType ?? 'application/json';
    }
    const url = new URL(server + path);
    for (const [name, value] of Object.entries(query ?? {})) {
      if (value !== undefined) url.searchParams.set(name, String(value));
    }
    return {
      url,
      headers,
      agent: (options.agent as http.Agent | undefined) ?? false,
      ...(payload ? { payload } : {}),
    };
  };
}

/** One API request: the parsed JSON answer, or a KubeApiError. */
function requester(
  prepare: (request: KubeRequest) => Promise<PreparedRequest>,
  clock: ServerClock,
): Connection['request'] {
  return async <T>(request: KubeRequest): Promise<T> => {
    const { url, headers, payload, agent } = await prepare(request);
    const { method } = request;
    const signal = requestSignal.getStore();
    const answer = await httpRequest(url, {
      method,
      headers,
      ...(payload ? { body: payload } : {}),
      agent,
      ...(signal ? { signal } : {}),
    });
    const date = Date.parse(String(answer.headers.date ?? ''));
    if (Number.isFinite(date)) clock.last = { date, monotonic: monotonicMs() };
    let parsed: unknown;
    try {
      parsed = answer.text ? JSON.parse(answer.text) : undefined;
    } catch {
      parsed = answer.text;
    }
    if (answer.status < 200 || answer.status >= 300) {
      throw new KubeApiError(answer.status, parsed, answer.headers, `${method} ${url.pathname}`);
    }
    return parsed as T;
  };
}

/**
 * A GET whose answer is read as it arrives: the response once the API server answers 2xx; an
 * error status is a KubeApiError with the parsed body. `signal` (and Ctrl-C, through the request
 * gate's signal) ends it; the reader of the response handles its end and its errors.
 */
function streamer(prepare: (request: KubeRequest) => Promise<PreparedRequest>): Connection['stream'] {
  return async (request, signal) => {
    const { url, headers, agent } = await prepare(request);
    const gateSignal = requestSignal.getStore();
    const ended = gateSignal ? AbortSignal.any([signal, gateSignal]) : signal;
    return new Promise<Readable>((resolve, reject) => {
      const outgoing = httpModuleFor(url).request(
        url,
        { method: request.method, headers: { ...headers, accept: '*/*' }, agent, signal: ended },
        (response) => {
          const status = response.statusCode ?? 0;
          if (status >= 200 && status < 300) {
            resolve(response);
            return;
          }
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('error', reject);
          response.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let parsed: unknown = text;
            try {
              parsed = JSON.parse(text);
            } catch {
              // Not a Status object: the text says what went wrong.
            }
            reject(new KubeApiError(status, parsed, response.headers, `${request.method} ${url.pathname}`));
          });
        },
      );
      // Before the answer, an error rejects; after it (the stream ended by `signal`), it is the
      // response's to report, and rejecting a settled promise does nothing.
      outgoing.on('error', reject);
      outgoing.end();
    });
  };
}
