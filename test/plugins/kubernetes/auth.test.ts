/**
 * The kubeconfig's ways to reach and authenticate to a cluster, through the real CLI (`bin/tend.js`:
 * the bundle, where client-node's exec plugins, proxy agents and their packages are loaded on first
 * use, scripts/bundle-plugins.ts): an exec credential plugin, an HTTP proxy (CONNECT) and a SOCKS5
 * proxy, each a real process or server on 127.0.0.1 in front of kube-sim.
 */
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
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

/** A project and a kubeconfig for kube-sim changed by `change`; runs `tend status --json` there. */
async function statusWith(change: (config: Kubeconfig) => void, namespace: string) {
  const root = makeProject({ 'tend.yml': projectYaml({ registry: h.sim.registryHost, namespace }) });
  const config = parse(h.sim.kubeconfigYaml) as Kubeconfig;
  change(config);
  const kubeconfig = path.join(root, 'kubeconfig');
  writeFileSync(kubeconfig, stringify(config));
  const run = await runTend(['status', '--json'], { cwd: root, env: { KUBECONFIG: kubeconfig } });
  expect(run.code, run.stderr).toBe(0);
  return JSON.parse(run.stdout) as { providers: { ready: boolean; detail: { state: string } }[] };
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
});
