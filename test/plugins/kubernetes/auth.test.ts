/**
 * The kubeconfig's ways to reach and authenticate to a cluster, through the real CLI (`bin/tend.js`:
 * the bundle, where client-node's exec plugins, proxy agents and their packages are loaded on first
 * use, scripts/bundle-plugins.ts): an exec credential plugin, an HTTP proxy (CONNECT) and a SOCKS5
 * proxy, each a real process or server on 127.0.0.1 in front of kube-sim; and the TLS settings
 * tend's own connection pool takes from the kubeconfig (client certificate, server name, CA or
 * insecure-skip-tls-verify), each with its failure when it is wrong.
 */
import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import net from 'node:net';
import path from 'node:path';
import { parse, stringify } from 'yaml';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { makeProject, removeProjects, runTend } from '../../helpers/project.js';
import { projectYaml, startSim, type SimHandle } from './helpers.js';

let h: SimHandle;
beforeAll(async () => {
  h = await startSim();
});
afterAll(async () => h?.stop());
afterEach(removeProjects);

interface Kubeconfig {
  clusters: { cluster: Record<string, unknown> }[];
  users: { user: Record<string, unknown> }[];
}

/** A project and a kubeconfig for kube-sim changed by `change`; runs `tend <args>` there. */
async function tendWith(args: string[], change: (config: Kubeconfig) => void, namespace: string) {
  const root = makeProject({ 'tend.yml': projectYaml({ registry: h.sim.registryHost, namespace }) });
  const config = parse(h.sim.kubeconfigYaml) as Kubeconfig;
  change(config);
  const kubeconfig = path.join(root, 'kubeconfig');
  writeFileSync(kubeconfig, stringify(config));
  return runTend(args, { cwd: root, env: { KUBECONFIG: kubeconfig } });
}

/** `tend status --json` with a kubeconfig changed by `change`: it must succeed. */
async function statusWith(change: (config: Kubeconfig) => void, namespace: string) {
  const run = await tendWith(['status', '--json'], change, namespace);
  expect(run.code, run.stderr).toBe(0);
  return JSON.parse(run.stdout) as { providers: { ready: boolean; detail: { state: string } }[] };
}

const base64 = (text: string) => Buffer.from(text).toString('base64');

/** Who kube-sim says made the requests into `namespace` since `since`. */
const usersIn = (namespace: string, since: number) =>
  new Set(
    h.sim.requests
      .list({ since })
      .filter((r) => r.namespace === namespace)
      .map((r) => r.user),
  );

/** A certificate for `subject` that signs itself: no CA kube-sim knows. */
function selfSigned(subject: string): { certPem: string; keyPem: string } {
  const dir = mkdtempSync(path.join(tmpdir(), 'tend-self-signed-'));
  try {
    const [cert, key] = [path.join(dir, 'cert.pem'), path.join(dir, 'key.pem')];
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-keyout',
        key,
        '-out',
        cert,
        '-days',
        '2',
        '-subj',
        subject,
      ],
      { stdio: 'ignore' },
    );
    return { certPem: readFileSync(cert, 'utf8'), keyPem: readFileSync(key, 'utf8') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * A TCP server on 127.0.0.1 that answers each connection with `serve`, which hands it on to the
 * host and port its client asked for; the targets it connected to. Closing it ends every connection.
 */
async function proxy(serve: (client: net.Socket, connect: (host: string, port: number) => void) => void) {
  const targets: string[] = [];
  const sockets = new Set<net.Socket>();
  const track = (socket: net.Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
  };
  const server = net.createServer((client) => {
    track(client);
    serve(client, (host, port) => {
      targets.push(`${host}:${port}`);
      // What the client sends before the upstream connection is open waits for it (pipe resumes).
      client.pause();
      const upstream = net.connect(port, host, () => client.pipe(upstream).pipe(client));
      track(upstream);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as net.AddressInfo;
  const close = () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      for (const socket of sockets) socket.destroy();
    });
  return { port, targets, close };
}

const simHostPort = () => new URL(h.sim.url).host;

describe('kubeconfig authentication and proxies, through the CLI bundle', () => {
  it('an exec credential plugin supplies the token', async () => {
    const credential = JSON.stringify({
      apiVersion: 'client.authentication.k8s.io/v1',
      kind: 'ExecCredential',
      status: { token: h.sim.token },
    });
    const status = await statusWith((config) => {
      config.users[0]!.user = {
        exec: {
          apiVersion: 'client.authentication.k8s.io/v1',
          command: process.execPath,
          args: ['-e', `process.stdout.write(${JSON.stringify(credential)})`],
          interactiveMode: 'Never',
        },
      };
    }, 'auth-exec');
    expect(status.providers[0]!.detail.state).toBe('missing');
  });

  it('an HTTP proxy (proxy-url) carries the requests through CONNECT', async () => {
    const http = await proxy((client, connect) => {
      client.once('data', (head: Buffer) => {
        const [, host, port] = /^CONNECT ([^:\s]+):(\d+) /.exec(head.toString('latin1')) ?? [];
        connect(host!, Number(port));
        client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      });
    });
    try {
      const status = await statusWith((config) => {
        config.clusters[0]!.cluster['proxy-url'] = `http://127.0.0.1:${http.port}`;
      }, 'auth-http-proxy');
      expect(status.providers[0]!.detail.state).toBe('missing');
      expect(new Set(http.targets)).toEqual(new Set([simHostPort()]));
    } finally {
      await http.close();
    }
  });

  it('a SOCKS5 proxy (proxy-url socks5://) carries the requests', async () => {
    const socks = await proxy((client, connect) => {
      client.once('data', () => {
        client.write(Buffer.from([5, 0])); // version 5, no authentication
        client.once('data', (request: Buffer) => {
          // VER CMD RSV ATYP(1: IPv4 | 3: domain) ADDR PORT
          const ipv4 = request[3] === 1;
          const host = ipv4
            ? [...request.subarray(4, 8)].join('.')
            : request.subarray(5, 5 + request[4]!).toString('latin1');
          const port = request.readUInt16BE(request.length - 2);
          connect(host, port);
          client.write(Buffer.from([5, 0, 0, 1, 0, 0, 0, 0, 0, 0]));
        });
      });
    });
    try {
      const status = await statusWith((config) => {
        config.clusters[0]!.cluster['proxy-url'] = `socks5://127.0.0.1:${socks.port}`;
      }, 'auth-socks-proxy');
      expect(status.providers[0]!.detail.state).toBe('missing');
      expect(new Set(socks.targets)).toEqual(new Set([simHostPort()]));
    } finally {
      await socks.close();
    }
  });

  it('a client certificate (client-certificate-data, client-key-data) authenticates, as its CN', async () => {
    const { certPem, keyPem } = await h.sim.issueClientCertificate('jane', ['system:masters']);
    const since = h.sim.requests.latest();
    const status = await statusWith((config) => {
      config.users[0]!.user = {
        'client-certificate-data': base64(certPem),
        'client-key-data': base64(keyPem),
      };
    }, 'auth-client-cert');
    expect(status.providers[0]!.detail.state).toBe('missing');
    expect(usersIn('auth-client-cert', since)).toEqual(new Set(['jane']));
    // A name that would write another subject (`/O=…`) is refused, not issued.
    await expect(h.sim.issueClientCertificate('jane/O=system:masters')).rejects.toThrow(/user and groups/);
  });

  it('a client certificate no CA of the cluster signed is refused: a clear 401, nothing touched', async () => {
    const { certPem, keyPem } = selfSigned('/CN=mallory/O=system:masters');
    const since = h.sim.requests.latest();
    const run = await tendWith(
      ['status'],
      (config) => {
        config.users[0]!.user = {
          'client-certificate-data': base64(certPem),
          'client-key-data': base64(keyPem),
        };
      },
      'auth-forged-cert',
    );
    expect(run.code).not.toBe(0);
    expect(run.stderr).toMatch(
      /rejected the credentials \(an expired or invalid token or client certificate\)/,
    );
    const asked = h.sim.requests.list({ since });
    expect(asked.length).toBeGreaterThan(0);
    expect(asked.filter((r) => r.user !== undefined || r.status !== 401)).toEqual([]);
    expect(h.sim.store.get('namespaces', '', 'auth-forged-cert')).toBeUndefined();
  });

  it('tls-server-name is the name the server certificate is checked against', async () => {
    const named = await statusWith((config) => {
      config.clusters[0]!.cluster['tls-server-name'] = 'localhost';
    }, 'auth-server-name');
    expect(named.providers[0]!.detail.state).toBe('missing');
    const run = await tendWith(
      ['status'],
      (config) => {
        config.clusters[0]!.cluster['tls-server-name'] = 'not-kube-sim.example';
      },
      'auth-wrong-server-name',
    );
    expect(run.code).not.toBe(0);
    expect(run.stdout + run.stderr).toMatch(/not-kube-sim\.example/);
  });

  it('insecure-skip-tls-verify reaches a server no CA vouches for; without it the certificate is refused', async () => {
    const withoutCa = (config: Kubeconfig) =>
      delete config.clusters[0]!.cluster['certificate-authority-data'];
    const skipped = await statusWith((config) => {
      withoutCa(config);
      config.clusters[0]!.cluster['insecure-skip-tls-verify'] = true;
    }, 'auth-skip-verify');
    expect(skipped.providers[0]!.detail.state).toBe('missing');
    const run = await tendWith(['status'], withoutCa, 'auth-unknown-ca');
    expect(run.code).not.toBe(0);
    expect(run.stdout + run.stderr).toMatch(/certificate/i);
  });
});
