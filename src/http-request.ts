/**
 * One HTTP request over node:http or node:https: the tend server's (the CLI's API client,
 * src/remote/client.ts, and the event stream, src/stream/transport.ts) and the deployment
 * registry's (src/plugins/kubernetes/container/registry.ts). Not fetch: its implementation
 * (undici) is loaded on first use, a few hundred milliseconds of CPU in the middle of a command
 * (90 ms of a `tend status` of a project with a container Build), and some more per request.
 */
import type http from 'node:http';
import { builtinModule } from './builtin-module.js';

export interface HttpAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  /** The body as UTF-8 text. */
  text: string;
}

export function httpRequest(
  url: URL,
  options: {
    method: string;
    headers: Record<string, string>;
    body?: Buffer;
    /** Keep-alive connections to reuse; false: a connection of its own, closed after the answer. */
    agent: http.Agent | false;
    signal?: AbortSignal;
  },
): Promise<HttpAnswer> {
  const headers =
    options.body === undefined
      ? options.headers
      : { ...options.headers, 'content-length': String(options.body.length) };
  return new Promise<HttpAnswer>((resolve, reject) => {
    const request = httpModuleFor(url).request(
      url,
      { method: options.method, headers, agent: options.agent, signal: options.signal },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (c: Buffer) => chunks.push(c));
        response.on('error', reject);
        response.on('end', () =>
          resolve({
            status: response.statusCode ?? 0,
            headers: response.headers,
            text: Buffer.concat(chunks).toString('utf8'),
          }),
        );
      },
    );
    request.on('error', reject);
    request.end(options.body);
  });
}

/** A header's (first) value. */
export function headerValue(headers: http.IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** node:http, or node:https for an https URL: loaded when a request first needs it. */
export function httpModuleFor(url: URL): typeof http {
  return builtinModule<typeof http>(url.protocol === 'https:' ? 'node:https' : 'node:http');
}
