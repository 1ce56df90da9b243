/** The HTTP layer: authentication and RBAC (rbac.ts), fault injection, routing to discovery and the REST verbs. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Cluster, DeleteOptions } from './cluster.js';
import {
  apiGroupList,
  apiResourceList,
  apiVersions,
  openapiV3GroupVersion,
  openapiV3Root,
  versionInfo,
} from './discovery.js';
import type { ExecContext } from './exec.js';
import { upgrade } from './exec.js';
import type { ActiveFault, FaultRule, Faults, RequestInfo } from './faults.js';
import { decodeProtobuf, PROTOBUF } from './protobuf.js';
import { queryFlag } from './query.js';
import type { RecordedRequest, RequestLog } from './requests.js';
import type { ResourceType } from './resources.js';
import { authorize, forbidden, type Attributes, type Authenticator, type User } from './rbac.js';
import { NS, resourceFor } from './resources.js';
import type { PodRuntime } from './runtime.js';
import { compileSelectors } from './selectors.js';
import type { EventType, Stored } from './store.js';
import { toTable, wantsTable } from './table.js';
import { ApiError, badRequest, isPlainObject } from './types.js';

export interface ServerContext {
  cluster: Cluster;
  runtime: PodRuntime;
  faults: Faults;
  /** Who a bearer token is: the simulator's own (an administrator) or a ServiceAccount's. */
  auth: Authenticator;
  host: () => string;
  exec: ExecContext;
  requests: RequestLog;
  /** Open watch and log-follow responses, ended on stop. */
  streams: Set<ServerResponse>;
}

interface Route {
  rt: ResourceType;
  namespace: string;
  name?: string;
  subresource?: string;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function sendJson(
  res: ServerResponse,
  status: number,
  body: string,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, {
    'Content-Type': 'application/json',
    'Content-Length': Buffer.byteLength(body),
    'Cache-Control': 'no-cache, private',
    ...headers,
  });
  res.end(body);
}

function sendError(res: ServerResponse, err: unknown): void {
  const e =
    err instanceof ApiError
      ? err
      : new ApiError(
          500,
          'InternalError',
          `Internal error occurred: ${(err as Error)?.message ?? String(err)}`,
        );
  const headers: Record<string, string> = {};
  if (e.details?.retryAfterSeconds !== undefined)
    headers['Retry-After'] = String(e.details.retryAfterSeconds);
  if (res.headersSent) {
    res.end();
    return;
  }
  sendJson(res, e.code, JSON.stringify(e.toStatus()), headers);
}

function unauthorized(): ApiError {
  return new ApiError(401, 'Unauthorized', 'Unauthorized');
}

/** 401 without a user; 403 unless RBAC lets the user do what the route asks. */
function checkAccess(ctx: ServerContext, user: User | undefined, route: Route, verb: string): void {
  if (!user) throw unauthorized();
  const attrs: Attributes = {
    verb,
    rt: route.rt,
    ...(route.subresource ? { subresource: route.subresource } : {}),
    ...(route.name ? { name: route.name } : {}),
  };
  const namespace = route.namespace || (route.rt.kind === 'Namespace' ? route.name : undefined);
  if (namespace) attrs.namespace = namespace;
  if (!authorize(ctx.cluster.store, user, attrs)) throw forbidden(user, attrs);
}

/** Parse `/api/v1/...` and `/apis/<group>/<version>/...` into a resource route. */
export function parseRoute(segments: string[]): Route | undefined {
  let group: string;
  let version: string;
  let rest: string[];
  if (segments[0] === 'api' && segments.length >= 3) {
    group = '';
    version = segments[1]!;
    rest = segments.slice(2);
  } else if (segments[0] === 'apis' && segments.length >= 4) {
    group = segments[1]!;
    version = segments[2]!;
    rest = segments.slice(3);
  } else return undefined;
  let namespace = '';
  if (rest[0] === 'namespaces' && rest.length >= 3 && rest[2] !== 'status' && rest[2] !== 'finalize') {
    namespace = rest[1]!;
    rest = rest.slice(2);
  }
  const rt = resourceFor(group, version, rest[0]!);
  if (!rt || rest.length > 3) return undefined;
  if (!rt.namespaced && namespace) return undefined;
  const route: Route = { rt, namespace };
  if (rest[1] !== undefined) route.name = rest[1];
  if (rest[2] !== undefined) {
    if (!rt.subresources.includes(rest[2])) return undefined;
    route.subresource = rest[2];
  }
  return route;
}

function verbOf(method: string, route: Route, query: URLSearchParams): string {
  if (method === 'GET') {
    if (queryFlag(query, 'watch')) return 'watch';
    return route.name ? 'get' : 'list';
  }
  if (method === 'POST') return 'create';
  if (method === 'PUT') return 'update';
  if (method === 'PATCH') return 'patch';
  if (method === 'DELETE') return route.name ? 'delete' : 'deletecollection';
  return method.toLowerCase();
}

function requestInfo(route: Route, verb: string): RequestInfo {
  return {
    verb,
    resource: route.rt.key,
    plural: route.rt.plural,
    ...(route.subresource ? { subresource: route.subresource } : {}),
    // As in the request log: a Namespace's own name for requests on the namespace itself.
    ...(targetNamespace(route) !== undefined ? { namespace: targetNamespace(route)! } : {}),
  };
}

function faultError(f: ActiveFault): ApiError {
  const status = f.status ?? 500;
  if (status === 429) {
    const secs = f.retryAfterSeconds ?? 1;
    return new ApiError(429, 'TooManyRequests', f.message ?? 'Too many requests, please try again later.', {
      causes: [{ reason: 'TooManyRequests', message: 'kube-sim injected fault' }],
      retryAfterSeconds: secs,
    });
  }
  if (status === 503)
    return new ApiError(
      503,
      'ServiceUnavailable',
      f.message ?? 'The server is currently unable to handle the request (kube-sim injected fault)',
    );
  if (status === 504)
    return new ApiError(
      504,
      'Timeout',
      f.message ??
        'The server was unable to return a response in the time allotted (kube-sim injected fault)',
    );
  return new ApiError(
    status,
    status === 500 ? 'InternalError' : 'Unknown',
    f.message ?? 'Internal error occurred: kube-sim injected fault',
  );
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function parseJsonBody(body: Buffer): unknown {
  if (body.length === 0) return undefined;
  try {
    return JSON.parse(body.toString('utf8'));
  } catch (e) {
    throw badRequest(`the body of the request was in an unknown format: ${(e as Error).message}`);
  }
}

function parseObjectBody(req: IncomingMessage, body: Buffer): unknown {
  if ((req.headers['content-type'] ?? '').startsWith(PROTOBUF)) return decodeProtobuf(body);
  return parseJsonBody(body);
}

interface ListFaults {
  truncate?: ActiveFault;
}

export async function handleRequest(
  ctx: ServerContext,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  let entry: RecordedRequest | undefined;
  try {
    if (process.env.KUBE_SIM_TRACE)
      process.stderr.write(`kube-sim: ${req.method} ${req.url} ${req.headers.accept ?? ''}\n`);
    const url = new URL(req.url ?? '/', 'https://kube-sim');
    const path = url.pathname.replace(/\/+$/, '') || '/';
    if (path === '/healthz' || path === '/livez' || path === '/readyz') {
      res.writeHead(200, { 'Content-Type': 'text/plain' });
      res.end('ok');
      return;
    }
    const segments = pathSegments(path);
    const user = ctx.auth.authenticate(req);
    if (segments[0] === '_sim') {
      if (!user) throw unauthorized();
      if (!user.groups.includes('system:masters'))
        throw new ApiError(403, 'Forbidden', "the kube-sim control endpoints take the simulator's own token");
      return await handleControl(ctx, req, res, segments.slice(1));
    }
    const route = parseRoute(segments);
    const method = req.method ?? 'GET';
    const verb = route ? verbOf(method, route, url.searchParams) : methodVerb(method);
    entry = recordRequest(ctx, req, path, verb, route, user);
    if (!user) throw unauthorized();
    if (req.method === 'GET' && handleDiscovery(ctx, path, res)) return;
    if (!route) throw new ApiError(404, 'NotFound', 'the server could not find the requested resource');
    checkAccess(ctx, user, route, verb);
    const info = requestInfo(route, verb);
    const fired = ctx.faults.take(info, [
      'latency',
      'drop',
      'drop-response',
      'error',
      'list-fail',
      'list-truncate',
      'continue-expire',
    ]);
    const latency = fired.filter((f) => f.type === 'latency').reduce((a, f) => a + (f.ms ?? 0), 0);
    if (latency > 0) await sleep(latency);
    if (fired.some((f) => f.type === 'drop')) {
      req.socket.destroy();
      return;
    }
    const err = fired.find((f) => f.type === 'error' || f.type === 'list-fail');
    if (err) throw faultError(err);
    if (url.searchParams.get('continue') && fired.some((f) => f.type === 'continue-expire'))
      throw expiredContinue();
    const truncate = fired.find((f) => f.type === 'list-truncate');
    if (fired.some((f) => f.type === 'drop-response')) {
      // The request is carried out; its answer never leaves.
      res.writeHead = (() => res) as unknown as typeof res.writeHead;
      res.write = (() => true) as unknown as typeof res.write;
      res.end = (() => {
        req.socket.destroy();
        return res;
      }) as unknown as typeof res.end;
    }
    const body = req.method === 'GET' || req.method === 'HEAD' ? Buffer.alloc(0) : await readBody(req);
    await handleResource(
      ctx,
      req,
      res,
      route,
      verb,
      url.searchParams,
      body,
      truncate ? { truncate } : {},
      entry,
      user,
    );
  } catch (e) {
    sendError(res, e);
  } finally {
    // Streams (watch, log follow) have sent their headers by now; dropped requests never do.
    if (entry && res.headersSent) entry.status = res.statusCode;
  }
}

function pathSegments(path: string): string[] {
  try {
    return path.split('/').filter(Boolean).map(decodeURIComponent);
  } catch {
    throw badRequest(`invalid escape in the request path ${path}`);
  }
}

function methodVerb(method: string): string {
  const verbs: Record<string, string> = {
    GET: 'get',
    POST: 'create',
    PUT: 'update',
    PATCH: 'patch',
    DELETE: 'delete',
  };
  return verbs[method] ?? method.toLowerCase();
}

/** The namespace a route targets: the one in its path, or a Namespace object's own name. */
function targetNamespace(route: Route | undefined): string | undefined {
  if (!route) return undefined;
  if (route.namespace) return route.namespace;
  return route.rt.kind === 'Namespace' ? route.name : undefined;
}

function recordRequest(
  ctx: ServerContext,
  req: IncomingMessage,
  path: string,
  verb: string,
  route: Route | undefined,
  user: User | undefined,
): RecordedRequest {
  const namespace = targetNamespace(route);
  const userAgent = req.headers['user-agent'];
  return ctx.requests.record({
    method: req.method ?? 'GET',
    path,
    verb,
    ...(user ? { user: user.name } : {}),
    ...(route ? { resource: route.subresource ? `${route.rt.key}/${route.subresource}` : route.rt.key } : {}),
    ...(namespace !== undefined ? { namespace } : {}),
    ...(userAgent !== undefined ? { userAgent } : {}),
  });
}

/** `metadata.name` of a request body, when it has one. */
function bodyName(body: unknown): string | undefined {
  if (!isPlainObject(body) || !isPlainObject(body['metadata'])) return undefined;
  const name = body['metadata']['name'];
  return typeof name === 'string' && name !== '' ? name : undefined;
}

function expiredContinue(): ApiError {
  return new ApiError(
    410,
    'Expired',
    'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.',
  );
}

function handleDiscovery(ctx: ServerContext, path: string, res: ServerResponse): boolean {
  let doc: unknown;
  if (path === '/version') doc = versionInfo();
  else if (path === '/api') doc = apiVersions(ctx.host());
  else if (path === '/apis') doc = apiGroupList();
  else if (path === '/api/v1') doc = apiResourceList('', 'v1');
  else {
    const m = /^\/apis\/([^/]+)\/([^/]+)$/.exec(path);
    if (m) {
      doc = apiResourceList(m[1]!, m[2]!);
      if (!doc) throw new ApiError(404, 'NotFound', 'the server could not find the requested resource');
    } else if (/^\/apis\/[^/]+$/.test(path)) {
      const name = path.slice(6);
      const g = (apiGroupList().groups as { name: string }[]).find((x) => x.name === name);
      if (!g) throw new ApiError(404, 'NotFound', 'the server could not find the requested resource');
      doc = { kind: 'APIGroup', apiVersion: 'v1', ...g };
    } else if (path === '/openapi/v3') doc = openapiV3Root();
    else if (path.startsWith('/openapi/v3/')) {
      doc = openapiV3GroupVersion(path.slice('/openapi/v3/'.length));
      if (!doc) throw new ApiError(404, 'NotFound', 'the server could not find the requested resource');
    } else if (path.startsWith('/openapi/')) {
      throw new ApiError(
        404,
        'NotFound',
        'the server could not find the requested resource (kube-sim serves OpenAPI v3 only)',
      );
    }
  }
  if (doc === undefined) return false;
  sendJson(res, 200, JSON.stringify(doc));
  return true;
}

async function handleControl(
  ctx: ServerContext,
  req: IncomingMessage,
  res: ServerResponse,
  rest: string[],
): Promise<void> {
  if (rest[0] === 'requests') return serveRequestLog(ctx, req, res, rest.slice(1));
  if (rest[0] !== 'faults') throw new ApiError(404, 'NotFound', 'unknown kube-sim control endpoint');
  if (req.method === 'GET') return sendJson(res, 200, JSON.stringify({ faults: ctx.faults.list() }));
  if (req.method === 'DELETE') {
    if (rest[1]) {
      if (!ctx.faults.remove(rest[1])) throw new ApiError(404, 'NotFound', `fault ${rest[1]} not found`);
    } else ctx.faults.clear();
    return sendJson(res, 200, JSON.stringify({ faults: ctx.faults.list() }));
  }
  if (req.method === 'POST') {
    const body = parseJsonBody(await readBody(req));
    const rules = (
      Array.isArray(body)
        ? body
        : isPlainObject(body) && Array.isArray(body['faults'])
          ? body['faults']
          : [body]
    ) as FaultRule[];
    try {
      const ids = rules.map((r) => ctx.faults.add(r));
      return sendJson(res, 201, JSON.stringify({ ids }));
    } catch (e) {
      throw badRequest((e as Error).message);
    }
  }
  throw new ApiError(405, 'MethodNotAllowed', 'method not allowed');
}

/**
 * `GET /_sim/requests[?since=N]` → `{latest, dropped, requests}`;
 * `GET /_sim/requests/namespaces[?since=N]` → `{latest, namespaces}`; `DELETE /_sim/requests` clears.
 */
function serveRequestLog(
  ctx: ServerContext,
  req: IncomingMessage,
  res: ServerResponse,
  rest: string[],
): void {
  const log = ctx.requests;
  const url = new URL(req.url ?? '/', 'https://kube-sim');
  const sinceParam = url.searchParams.get('since');
  if (sinceParam !== null && !/^\d{1,15}$/.test(sinceParam))
    throw badRequest(`since must be a request sequence number (a non-negative integer), got "${sinceParam}"`);
  const query = sinceParam !== null ? { since: Number(sinceParam) } : {};
  if (rest.length === 0 && req.method === 'DELETE') {
    log.clear();
    return sendJson(res, 200, JSON.stringify({ latest: log.latest(), dropped: 0, requests: [] }));
  }
  if (req.method !== 'GET') throw new ApiError(405, 'MethodNotAllowed', 'method not allowed');
  if (rest.length === 0)
    return sendJson(
      res,
      200,
      JSON.stringify({ latest: log.latest(), dropped: log.dropped(), requests: log.list(query) }),
    );
  if (rest.length === 1 && rest[0] === 'namespaces')
    return sendJson(
      res,
      200,
      JSON.stringify({ latest: log.latest(), namespaces: log.namespacesTouched(query) }),
    );
  throw new ApiError(404, 'NotFound', 'unknown kube-sim control endpoint');
}

function listKind(rt: ResourceType): string {
  return `${rt.kind}List`;
}

function encodeContinue(rv: number, last: Stored): string {
  return Buffer.from(
    JSON.stringify({ rv, ns: last.obj.metadata.namespace ?? '', name: last.obj.metadata.name }),
  ).toString('base64url');
}

function decodeContinue(token: string): { rv: number; ns: string; name: string } {
  try {
    const v = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as {
      rv: number;
      ns: string;
      name: string;
    };
    if (typeof v.name !== 'string') throw new Error('bad');
    return v;
  } catch {
    throw badRequest('continue key is not valid: invalid continue token');
  }
}

async function handleResource(
  ctx: ServerContext,
  req: IncomingMessage,
  res: ServerResponse,
  route: Route,
  verb: string,
  query: URLSearchParams,
  body: Buffer,
  faults: ListFaults,
  entry: RecordedRequest,
  user: User,
): Promise<void> {
  const { cluster } = ctx;
  const { rt, namespace, name, subresource } = route;
  const dryRun = query.getAll('dryRun').includes('All');
  const fieldManager = query.get('fieldManager') ?? undefined;
  const accept = req.headers.accept;
  const write = {
    dryRun,
    ...(fieldManager ? { fieldManager } : {}),
    force: queryFlag(query, 'force'),
    requester: user,
  };
  if (subresource === 'log') return serveLog(ctx, req, res, route, query);
  if (subresource === 'exec' || subresource === 'attach') {
    throw badRequest('Upgrade request required');
  }
  if (subresource === 'scale') return serveScale(ctx, req, res, route, body, user);
  if (subresource === 'token') {
    if (verb !== 'create')
      throw new ApiError(
        405,
        'MethodNotAllowed',
        'the server does not allow this method on the requested resource',
      );
    const account = cluster.getOrThrow(rt, namespace, name!).obj;
    return sendJson(res, 201, JSON.stringify(ctx.auth.tokenRequest(account, parseJsonBody(body))));
  }
  switch (verb) {
    case 'get': {
      const s = cluster.getOrThrow(rt, namespace, name!);
      if (wantsTable(accept)) return sendJson(res, 200, toTable(rt, [s], { resourceVersion: String(s.rv) }));
      return sendJson(res, 200, s.json);
    }
    case 'list':
      return serveList(ctx, res, route, query, accept, faults);
    case 'watch':
      return serveWatch(ctx, req, res, route, query, accept);
    case 'create': {
      const obj = parseObjectBody(req, body);
      const creatingNamespace = rt.kind === 'Namespace';
      if (creatingNamespace && bodyName(obj) !== undefined) entry.namespace = bodyName(obj);
      const s = cluster.create(rt, namespace, obj, write);
      if (creatingNamespace) entry.namespace = s.obj.metadata.name!;
      return sendJson(res, 201, s.json);
    }
    case 'update': {
      if (subresource === 'finalize' && rt.kind === 'Namespace')
        return sendJson(res, 200, finalizeNamespace(cluster, name!, parseJsonBody(body), user).json);
      const s = cluster.update(rt, namespace, name!, parseObjectBody(req, body), {
        ...write,
        ...(subresource ? { subresource } : {}),
      });
      return sendJson(res, 200, s.json);
    }
    case 'patch': {
      const existed = !!cluster.store.getStored(rt, rt.namespaced ? namespace : '', name!);
      const s = cluster.patch(
        rt,
        namespace,
        name!,
        req.headers['content-type'] ?? '',
        body.toString('utf8'),
        {
          ...write,
          ...(subresource ? { subresource } : {}),
        },
      );
      return sendJson(res, existed || dryRun ? 200 : 201, s.json);
    }
    case 'delete': {
      const opts = deleteOptions(query, body);
      const preconditions = recordedPreconditions(opts);
      if (preconditions) entry.preconditions = preconditions;
      const s = cluster.delete(rt, namespace, name!, opts, user);
      const stillThere = cluster.store.getStored(rt, rt.namespaced ? namespace : '', name!);
      return sendJson(res, stillThere ? 202 : 200, s.json);
    }
    case 'deletecollection': {
      const opts = deleteOptions(query, body);
      const sel = compileSelectors(query.get('labelSelector'), query.get('fieldSelector'));
      const items = cluster.store.list(rt, {
        ...(rt.namespaced && namespace ? { namespace } : {}),
        predicate: sel.predicate,
      }).items;
      const deleted: string[] = [];
      for (const s of items) {
        try {
          deleted.push(
            cluster.delete(rt, s.obj.metadata.namespace ?? '', s.obj.metadata.name!, opts, user).json,
          );
        } catch (e) {
          // Raced with another deletion; anything else (admission's refusal) is the answer.
          if (!(e instanceof ApiError && e.code === 404)) throw e;
        }
      }
      return sendJson(
        res,
        200,
        `{"kind":"${listKind(rt)}","apiVersion":"${rt.apiVersion}","metadata":{"resourceVersion":"${cluster.store.resourceVersion}"},"items":[${deleted.join(',')}]}`,
      );
    }
    default:
      throw new ApiError(
        405,
        'MethodNotAllowed',
        `the server does not allow this method on the requested resource`,
      );
  }
}

/**
 * PUT namespaces/<name>/finalize: only `spec.finalizers` is taken from the body. A Terminating
 * namespace left without finalizers is deleted with its contents at once, as the namespace
 * controller does on a real cluster.
 */
function finalizeNamespace(cluster: Cluster, name: string, body: unknown, requester: User): Stored {
  if (!isPlainObject(body)) throw badRequest('the body of the request was in an unknown format');
  const spec = isPlainObject(body['spec']) ? body['spec'] : {};
  const finalizers = spec['finalizers'] ?? [];
  if (!Array.isArray(finalizers) || finalizers.some((f) => typeof f !== 'string'))
    throw badRequest('spec.finalizers must be a list of strings');
  const finalized = cluster.update(NS, '', name, body, { subresource: 'finalize', requester });
  if (finalizers.length === 0 && finalized.obj.status?.phase === 'Terminating') cluster.finishNamespace(name);
  return finalized;
}

/** A DELETE's `preconditions`, as sent (string fields only), for the request log. */
function recordedPreconditions(opts: DeleteOptions): RecordedRequest['preconditions'] {
  const pre: unknown = opts.preconditions;
  if (!isPlainObject(pre)) return undefined;
  const { uid, resourceVersion } = pre;
  return {
    ...(typeof uid === 'string' ? { uid } : {}),
    ...(typeof resourceVersion === 'string' ? { resourceVersion } : {}),
  };
}

function deleteOptions(query: URLSearchParams, body: Buffer): DeleteOptions {
  const parsed = parseJsonBody(body);
  const opts: DeleteOptions = isPlainObject(parsed) ? (parsed as DeleteOptions) : {};
  const policy = query.get('propagationPolicy');
  if (policy) opts.propagationPolicy = policy as DeleteOptions['propagationPolicy'];
  if (opts.propagationPolicy && !['Foreground', 'Background', 'Orphan'].includes(opts.propagationPolicy)) {
    throw new ApiError(
      422,
      'Invalid',
      `DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: "${opts.propagationPolicy}": supported values: "Foreground", "Background", "Orphan"`,
    );
  }
  if (query.getAll('dryRun').includes('All')) opts.dryRun = ['All'];
  return opts;
}

function serveList(
  ctx: ServerContext,
  res: ServerResponse,
  route: Route,
  query: URLSearchParams,
  accept: string | undefined,
  faults: ListFaults,
): void {
  const { rt, namespace } = route;
  const store = ctx.cluster.store;
  const sel = compileSelectors(query.get('labelSelector'), query.get('fieldSelector'));
  const limit = Number(query.get('limit') ?? 0) || 0;
  const token = query.get('continue');
  const after = token ? decodeContinue(token) : undefined;
  const ns = rt.namespaced ? namespace || sel.namespace : undefined;
  const rv = store.resourceVersion;
  let items: Stored[];
  let more = false;
  let remaining = 0;
  if (sel.name !== undefined && !after) {
    // Direct lookup for `metadata.name=x`, the common case for kubectl wait and rollout status.
    items = [];
    if (ns !== undefined || !rt.namespaced) {
      const s = store.getStored(rt, ns ?? '', sel.name);
      if (s && sel.predicate(s.obj)) items.push(s);
    } else items = store.list(rt, { predicate: sel.predicate }).items;
  } else {
    const r = store.list(rt, {
      ...(ns !== undefined && ns !== '' ? { namespace: ns } : {}),
      predicate: sel.predicate,
      ...(after ? { after: [after.ns, after.name] as [string, string] } : {}),
      ...(limit ? { limit } : {}),
    });
    items = r.items;
    more = r.more;
    remaining = r.remaining;
  }
  if (faults.truncate) {
    const keep = faults.truncate.keep ?? Math.floor(items.length / 2);
    items = items.slice(0, keep);
    more = false;
  }
  const meta: Record<string, unknown> = { resourceVersion: String(after?.rv ?? rv) };
  if (more && items.length) {
    meta['continue'] = encodeContinue(after?.rv ?? rv, items[items.length - 1]!);
    // As an API server: with a label or field selector, how many remain is unknown and left out.
    if (!query.get('labelSelector') && !query.get('fieldSelector')) meta['remainingItemCount'] = remaining;
  }
  if (wantsTable(accept)) return sendJson(res, 200, toTable(rt, items, meta));
  const parts = new Array<string>(items.length);
  for (let i = 0; i < items.length; i++) parts[i] = items[i]!.json;
  sendJson(
    res,
    200,
    `{"kind":"${listKind(rt)}","apiVersion":"${rt.apiVersion}","metadata":${JSON.stringify(meta)},"items":[${parts.join(',')}]}`,
  );
}

function serveWatch(
  ctx: ServerContext,
  req: IncomingMessage,
  res: ServerResponse,
  route: Route,
  query: URLSearchParams,
  accept: string | undefined,
): void {
  const { rt, namespace } = route;
  const store = ctx.cluster.store;
  const sel = compileSelectors(query.get('labelSelector'), query.get('fieldSelector'));
  const rvParam = query.get('resourceVersion') ?? '';
  const sendInitial = queryFlag(query, 'sendInitialEvents');
  const table = wantsTable(accept);
  const ns = rt.namespaced ? namespace || sel.namespace || undefined : undefined;
  let sinceRv: number | undefined;
  if (rvParam !== '' && rvParam !== '0' && !sendInitial) {
    sinceRv = Number(rvParam);
    if (!Number.isFinite(sinceRv)) throw badRequest(`invalid resource version: ${rvParam}`);
  }
  res.writeHead(200, {
    'Content-Type': 'application/json',
    'Cache-Control': 'no-cache, private',
    'Transfer-Encoding': 'chunked',
  });
  res.flushHeaders();
  ctx.streams.add(res);
  const send = (type: EventType | 'BOOKMARK' | 'ERROR', stored: Stored): void => {
    if (res.writableEnded) return;
    const obj =
      table && type !== 'BOOKMARK' && type !== 'ERROR'
        ? toTable(rt, [stored], { resourceVersion: String(stored.rv) })
        : stored.json;
    res.write(`{"type":"${type}","object":${obj}}\n`);
  };
  const predicate = sel.predicate;
  if (sinceRv === undefined) {
    const initial =
      sel.name !== undefined && (ns !== undefined || !rt.namespaced)
        ? [store.getStored(rt, ns ?? '', sel.name)].filter((s): s is Stored => !!s && predicate(s.obj))
        : store.list(rt, { ...(ns !== undefined ? { namespace: ns } : {}), predicate }).items;
    for (const s of initial) send('ADDED', s);
  }
  let unregister: () => void;
  try {
    unregister = store.watch(
      rt,
      { ...(ns !== undefined ? { namespace: ns } : {}), predicate, send },
      sinceRv,
    );
  } catch (e) {
    if (e instanceof ApiError) {
      res.write(`{"type":"ERROR","object":${JSON.stringify(e.toStatus())}}\n`);
      res.end();
      ctx.streams.delete(res);
      return;
    }
    throw e;
  }
  if (sendInitial) {
    const bookmark = {
      kind: rt.kind,
      apiVersion: rt.apiVersion,
      metadata: {
        resourceVersion: String(store.resourceVersion),
        annotations: { 'k8s.io/initial-events-end': 'true' },
      },
    };
    res.write(`{"type":"BOOKMARK","object":${JSON.stringify(bookmark)}}\n`);
  }
  const timeout = Number(query.get('timeoutSeconds') ?? 0);
  let timer: NodeJS.Timeout | undefined;
  const close = (): void => {
    unregister();
    if (timer) clearTimeout(timer);
    ctx.streams.delete(res);
    if (!res.writableEnded) res.end();
  };
  if (timeout > 0) timer = setTimeout(close, timeout * 1000);
  req.on('close', close);
  res.on('close', close);
}

function serveLog(
  ctx: ServerContext,
  req: IncomingMessage,
  res: ServerResponse,
  route: Route,
  query: URLSearchParams,
): void {
  if (route.rt.kind !== 'Pod' || !route.name)
    throw new ApiError(404, 'NotFound', 'the server could not find the requested resource');
  ctx.cluster.getOrThrow(route.rt, route.namespace, route.name);
  const container = query.get('container') ?? undefined;
  if (queryFlag(query, 'previous')) {
    throw badRequest(`previous terminated container "${container ?? ''}" in pod "${route.name}" not found`);
  }
  const log = ctx.runtime.log(route.namespace, route.name, container);
  const follow = queryFlag(query, 'follow');
  const timestamps = queryFlag(query, 'timestamps');
  const tail = query.get('tailLines');
  const since = Number(query.get('sinceSeconds') ?? 0);
  let limitBytes = Number(query.get('limitBytes') ?? 0) || Infinity;
  let lines = log.lines;
  const sinceTime = query.get('sinceTime');
  if (sinceTime !== null && Number.isNaN(Date.parse(sinceTime))) {
    throw badRequest(`sinceTime: invalid value "${sinceTime}": expected an RFC 3339 time`);
  }
  if (since > 0 || sinceTime !== null) {
    const cutoff = sinceTime !== null ? Date.parse(sinceTime) : Date.now() - since * 1000;
    lines = lines.filter((l) => Date.parse(l.time) >= cutoff);
  }
  if (tail !== null && tail !== '' && Number(tail) >= 0)
    lines = Number(tail) === 0 ? [] : lines.slice(-Number(tail));
  const fmt = (l: { time: string; text: string }): string =>
    timestamps ? `${l.time} ${l.text}\n` : `${l.text}\n`;
  res.writeHead(200, {
    'Content-Type': 'text/plain',
    'Cache-Control': 'no-cache, private',
    'Transfer-Encoding': 'chunked',
  });
  const emit = (s: string): boolean => {
    if (limitBytes <= 0) return false;
    const chunk = Buffer.from(s).subarray(0, limitBytes);
    limitBytes -= chunk.length;
    res.write(chunk);
    return limitBytes > 0;
  };
  for (const l of lines) if (!emit(fmt(l))) break;
  if (!follow || log.ended || limitBytes <= 0) {
    res.end();
    return;
  }
  ctx.streams.add(res);
  const off = log.subscribe((line) => {
    if (line === null || !emit(fmt(line))) {
      off();
      ctx.streams.delete(res);
      res.end();
    }
  });
  req.on('close', () => {
    off();
    ctx.streams.delete(res);
  });
}

function serveScale(
  ctx: ServerContext,
  req: IncomingMessage,
  res: ServerResponse,
  route: Route,
  body: Buffer,
  requester: User,
): void {
  const { rt, namespace, name } = route;
  const toScale = (s: Stored): string => {
    const o = s.obj;
    const sel = o.spec?.selector?.matchLabels ?? {};
    return JSON.stringify({
      kind: 'Scale',
      apiVersion: 'autoscaling/v1',
      metadata: {
        name: o.metadata.name,
        namespace: o.metadata.namespace,
        uid: o.metadata.uid,
        resourceVersion: o.metadata.resourceVersion,
        creationTimestamp: o.metadata.creationTimestamp,
      },
      spec: { replicas: o.spec?.replicas ?? 0 },
      status: {
        replicas: o.status?.replicas ?? 0,
        selector: Object.entries(sel)
          .map(([k, v]) => `${k}=${String(v)}`)
          .join(','),
      },
    });
  };
  const cur = ctx.cluster.getOrThrow(rt, namespace, name!);
  if (req.method === 'GET') return sendJson(res, 200, toScale(cur));
  let replicas: unknown;
  const parsed = parseJsonBody(body) as { spec?: { replicas?: number } } | unknown[];
  if (Array.isArray(parsed)) {
    const op = (parsed as { path?: string; value?: unknown }[]).find((p) => p.path === '/spec/replicas');
    replicas = op?.value;
  } else replicas = (parsed as { spec?: { replicas?: number } })?.spec?.replicas;
  if (typeof replicas !== 'number' || replicas < 0) {
    throw new ApiError(
      422,
      'Invalid',
      `Scale.autoscaling "${name}" is invalid: spec.replicas: Invalid value: ${String(replicas)}: must be greater than or equal to 0`,
    );
  }
  // Admitted as an update of the object's `scale` subresource, the object as it would become.
  const scaled = structuredClone(cur.obj);
  scaled.spec.replicas = replicas;
  ctx.cluster.admit(rt, 'UPDATE', scaled, cur.obj, { subresource: 'scale', requester });
  const s = ctx.cluster.mutate(rt, namespace, name!, (o) => void (o.spec.replicas = replicas), '*')!;
  sendJson(res, 200, toScale(s));
}

export function handleUpgrade(ctx: ServerContext, req: IncomingMessage, socket: Duplex, head: Buffer): void {
  let entry: RecordedRequest | undefined;
  const fail = (e: ApiError): void => {
    if (entry) entry.status = e.code;
    const body = JSON.stringify(e.toStatus());
    socket.end(
      `HTTP/1.1 ${e.code} ${e.reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  };
  try {
    const url = new URL(req.url ?? '/', 'https://kube-sim');
    const route = parseRoute(pathSegments(url.pathname));
    const user = ctx.auth.authenticate(req);
    entry = recordRequest(ctx, req, url.pathname, 'create', route, user);
    if (!user) throw unauthorized();
    if (
      !route ||
      route.rt.kind !== 'Pod' ||
      !route.name ||
      (route.subresource !== 'exec' && route.subresource !== 'attach')
    ) {
      throw new ApiError(404, 'NotFound', 'the server could not find the requested resource');
    }
    checkAccess(ctx, user, route, 'create');
    const info = requestInfo(route, 'create');
    const fired = ctx.faults.take(info, ['drop', 'error']);
    if (fired.some((f) => f.type === 'drop')) {
      socket.destroy();
      return;
    }
    const err = fired.find((f) => f.type === 'error');
    if (err) throw faultError(err);
    const container = url.searchParams.get('container') ?? undefined;
    const kind = route.subresource;
    if (kind === 'exec' && url.searchParams.getAll('command').length === 0) {
      throw badRequest('you must specify at least 1 command');
    }
    ctx.runtime.assertRunning(route.namespace, route.name, container, kind);
    entry.status = 101;
    upgrade(
      ctx.exec,
      { kind, namespace: route.namespace, pod: route.name, query: url.searchParams },
      req,
      socket,
      head,
    );
  } catch (e) {
    fail(e instanceof ApiError ? e : new ApiError(500, 'InternalError', (e as Error).message));
  }
}
