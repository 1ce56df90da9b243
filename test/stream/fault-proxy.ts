/**
 * A fault-injecting HTTP proxy on 127.0.0.1 in front of the tend server. For each request a
 * plan decides what happens: pass it on, refuse the connection, answer with a status (429 with
 * Retry-After, 500…), delay it, hold it until released, or pass it on and then cut the
 * connection before the answer (the server stored the batch; the client never hears so).
 * Every request is recorded with the event ids it carried.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export type Fault =
  | { kind: 'pass' }
  /** Destroys the connection before forwarding (server down, connection reset). */
  | { kind: 'reset' }
  /** Forwards, waits for the server's answer, then destroys the connection (lost answer). */
  | { kind: 'drop-answer' }
  | { kind: 'status'; status: number; retryAfter?: string; body?: string }
  | { kind: 'delay'; ms: number }
  /** Holds the request until `release()` is called, then forwards it. */
  | { kind: 'hold' };

export interface ProxyRecord {
  index: number;
  /** performance.now() when the request was complete. */
  at: number;
  /** performance.now() when the answer was sent (or the connection cut). */
  answeredAt?: number;
  fault: Fault['kind'];
  eventIds: string[];
  /** The request's path and query. */
  path: string;
  /** The status the client got (undefined when the connection was cut). */
  status?: number;
  upstreamStatus?: number;
}

export class FaultProxy {
  readonly records: ProxyRecord[] = [];
  /** Where to forward: the server's base URL; undefined = the server is down (connections reset). */
  upstream: string | undefined;
  /** What to do with request number `index` (0-based). */
  plan: (index: number, record: ProxyRecord) => Fault = () => ({ kind: 'pass' });
  /** Called after a request was forwarded, before the answer (e.g. to kill the server mid-batch). */
  onForwarded: ((record: ProxyRecord) => void | Promise<void>) | undefined;
  private held: (() => void)[] = [];
  private holding = false;

  private constructor(
    private readonly server: http.Server,
    readonly url: string,
  ) {}

  static async start(upstream?: string): Promise<FaultProxy> {
    const handler: { proxy?: FaultProxy } = {};
    const server = http.createServer((req, res) => void handler.proxy!.handle(req, res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const proxy = new FaultProxy(server, `http://127.0.0.1:${port}`);
    proxy.upstream = upstream;
    handler.proxy = proxy;
    return proxy;
  }

  /** Event ids of the requests the server answered with 2xx, as the client saw them. */
  deliveredIds(): string[] {
    return this.records.filter((r) => r.status !== undefined && r.status < 300).flatMap((r) => r.eventIds);
  }

  /** Releases the held requests and stops holding new ones. */
  release(): void {
    this.holding = false;
    for (const go of this.held.splice(0)) go();
  }

  async close(): Promise<void> {
    this.release();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    // The cleanup notice the CLI asks for at a session's start is not what the proxy is for: it is
    // answered 404 (which the CLI skips), neither recorded nor counted in the fault plan.
    if (req.url?.startsWith('/api/v1/cleanup/notice')) {
      req.resume();
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not proxied"}');
      return;
    }
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    let eventIds: string[] = [];
    try {
      eventIds = ((JSON.parse(body.toString('utf8')) as { events?: { id: string }[] }).events ?? []).map(
        (e) => e.id,
      );
    } catch {
      // not a batch
    }
    const record: ProxyRecord = {
      index: this.records.length,
      at: performance.now(),
      fault: 'pass',
      eventIds,
      path: req.url ?? '',
    };
    this.records.push(record);
    const fault = this.plan(record.index, record);
    record.fault = fault.kind;
    const cut = () => {
      record.answeredAt = performance.now();
      req.socket.destroy();
    };
    switch (fault.kind) {
      case 'reset':
        return cut();
      case 'status': {
        record.status = fault.status;
        record.answeredAt = performance.now();
        res.writeHead(fault.status, {
          'content-type': 'application/json',
          ...(fault.retryAfter !== undefined ? { 'retry-after': fault.retryAfter } : {}),
        });
        res.end(
          fault.body ??
            JSON.stringify({ error: { code: 'TEND_INJECTED', message: `injected ${fault.status}` } }),
        );
        return;
      }
      case 'delay':
        await new Promise((r) => setTimeout(r, fault.ms));
        break;
      case 'hold':
        this.holding = true;
        await new Promise<void>((r) => (this.holding ? this.held.push(r) : r()));
        break;
      default:
        break;
    }
    if (!this.upstream || req.socket.destroyed) return cut();
    let answer: { status: number; headers: http.IncomingHttpHeaders; body: Buffer };
    try {
      answer = await forward(this.upstream, req, body, () => void this.onForwarded?.(record));
    } catch {
      return cut(); // the server went away mid-request
    }
    record.upstreamStatus = answer.status;
    if (fault.kind === 'drop-answer') return cut();
    record.status = answer.status;
    record.answeredAt = performance.now();
    res.writeHead(answer.status, {
      'content-type': String(answer.headers['content-type'] ?? 'application/json'),
      ...(answer.headers['retry-after'] ? { 'retry-after': String(answer.headers['retry-after']) } : {}),
    });
    res.end(answer.body);
  }
}

function forward(
  upstream: string,
  req: http.IncomingMessage,
  body: Buffer,
  sent: () => void,
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const headers = { ...req.headers };
    delete headers.host;
    delete headers.connection;
    const out = http.request(
      new URL(req.url ?? '/', upstream),
      { method: req.method, headers: { ...headers, 'content-length': String(body.length) }, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
        );
      },
    );
    out.on('error', reject);
    out.end(body, sent);
  });
}
