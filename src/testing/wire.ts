/**
 * What a cluster saw, for the plugin contract harness: a request log read over HTTP. kube-sim
 * keeps one (`GET /_sim/requests`); the harness compares the namespaces in it with the namespaces
 * a plugin reported, so it trusts the wire, not the plugin.
 */
import https from 'node:https';
import http from 'node:http';

/** One request the cluster received (the fields the harness reads). */
export interface WireRequest {
  /** 1, 2, 3, … in arrival order. */
  seq: number;
  method: string;
  path: string;
  verb?: string;
  resource?: string;
  /** The namespace the request targets (a Namespace's own name for namespace reads and writes). */
  namespace?: string;
  userAgent?: string;
  status?: number;
}

/** A cluster's request log. */
export interface WireLog {
  /** The sequence number of the newest request so far (0 before the first): a mark for `since`. */
  latest(): Promise<number>;
  /** Every request after the mark, oldest first. */
  since(seq: number): Promise<WireRequest[]>;
}

export interface KubeSimAddress {
  /** The simulator's API URL (`https://127.0.0.1:PORT`). */
  url: string;
  /** Its bearer token. */
  token: string;
  /** Its CA certificate (PEM), to trust its TLS certificate. */
  caPem?: string;
}

/** kube-sim's request log, over its `/_sim/requests` endpoints. */
export function kubeSimWire(address: KubeSimAddress): WireLog {
  const get = (path: string) => getJson(address, path);
  return {
    async latest() {
      // `since` beyond any request: only `latest` comes back.
      const body = (await get('/_sim/requests/namespaces?since=999999999999999')) as { latest: number };
      return body.latest;
    },
    async since(seq) {
      const body = (await get(`/_sim/requests?since=${seq}`)) as { requests: WireRequest[] };
      return body.requests;
    },
  };
}

function getJson(address: KubeSimAddress, path: string): Promise<unknown> {
  const url = new URL(path, address.url);
  const client = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const req = client.get(
      url,
      {
        headers: { Authorization: `Bearer ${address.token}`, Accept: 'application/json' },
        ...(address.caPem ? { ca: address.caPem } : {}),
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => {
          if (res.statusCode !== 200) {
            reject(new Error(`GET ${url.pathname}: ${res.statusCode} ${text.slice(0, 200)}`));
            return;
          }
          try {
            resolve(JSON.parse(text));
          } catch (error) {
            reject(error instanceof Error ? error : new Error(String(error)));
          }
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
  });
}
