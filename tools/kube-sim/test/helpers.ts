/** Shared test helpers: raw HTTPS requests to the simulator and condition polling. */
import { request } from 'node:https';
import type { KubeSim } from '../src/index.js';

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  json: any;
}

export function call(
  sim: KubeSim,
  method: string,
  path: string,
  body?: unknown,
  opts: { contentType?: string; token?: string | null; accept?: string; userAgent?: string } = {},
): Promise<RawResponse> {
  const payload = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = {};
    if (opts.token !== null) headers['Authorization'] = `Bearer ${opts.token ?? sim.token}`;
    if (payload !== undefined) {
      headers['Content-Type'] = opts.contentType ?? 'application/json';
      headers['Content-Length'] = String(Buffer.byteLength(payload));
    }
    if (opts.accept) headers['Accept'] = opts.accept;
    if (opts.userAgent) headers['User-Agent'] = opts.userAgent;
    const req = request(`${sim.url}${path}`, { method, ca: sim.caPem, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json: unknown;
        try {
          json = JSON.parse(text);
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
      });
    });
    req.on('error', reject);
    if (payload !== undefined) req.write(payload);
    req.end();
  });
}

/** Poll `check` until it returns a truthy value or the deadline passes. */
export async function waitFor<T>(
  check: () => T | Promise<T>,
  what: string,
  timeoutMs = 10_000,
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v) return v as NonNullable<T>;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

export function ns(name: string): Record<string, unknown> {
  return { apiVersion: 'v1', kind: 'Namespace', metadata: { name } };
}

export function deployment(name: string, image = 'shop/api:v1', replicas = 1): Record<string, unknown> {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'app', image }] } },
    },
  };
}

export function pod(
  name: string,
  extra: {
    image?: string;
    command?: string[];
    annotations?: Record<string, string>;
    restartPolicy?: string;
    stdin?: boolean;
    args?: string[];
  } = {},
): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, ...(extra.annotations ? { annotations: extra.annotations } : {}) },
    spec: {
      restartPolicy: extra.restartPolicy ?? 'Always',
      containers: [
        {
          name: 'main',
          image: extra.image ?? 'busybox',
          ...(extra.command ? { command: extra.command } : {}),
          ...(extra.args ? { args: extra.args } : {}),
          ...(extra.stdin ? { stdin: true, stdinOnce: true } : {}),
        },
      ],
    },
  };
}
