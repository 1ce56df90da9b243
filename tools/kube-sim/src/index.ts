/**
 * kube-sim: a local Kubernetes API server simulator for tests, demos and benchmarks.
 *
 *   const sim = await startKubeSim();
 *   sim.writeKubeconfig(path) // or new KubeConfig().loadFromString(sim.kubeconfigYaml)
 *   ...
 *   await sim.stop();
 */
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { Server as HttpServer, ServerResponse } from 'node:http';
import { createServer as createHttpServer } from 'node:http';
import type { Server as HttpsServer } from 'node:https';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateCerts, issueClientCertificate, type ClientCertificate } from './certs.js';
import { Cluster } from './cluster.js';
import { AutoscalingController } from './autoscaling.js';
import { Controllers } from './controllers.js';
import { Faults } from './faults.js';
import { Registry } from './registry.js';
import { DEFAULT_REQUEST_LOG_SIZE, RequestLog } from './requests.js';
import type { ResourceType } from './resources.js';
import { CONFIGMAP, NS, RESOURCES } from './resources.js';
import type { PodRule } from './rules.js';
import { Authenticator } from './rbac.js';
import { PodRuntime } from './runtime.js';
import type { ServerContext } from './server.js';
import { handleRequest, handleUpgrade } from './server.js';
import type { KObject } from './types.js';

export type { FaultRule, FaultType, ActiveFault } from './faults.js';
export type { PodRule, Behaviour } from './rules.js';
export type { KObject } from './types.js';
export type { RecordedRequest, RequestLog, RequestQuery } from './requests.js';
export { ANNOTATION_PREFIX } from './rules.js';

export interface KubeSimOptions {
  /** HTTPS port for the API; 0 (default) picks a free one. */
  port?: number;
  /** Plain HTTP port for the registry; 0 (default) picks a free one. */
  registryPort?: number;
  /** Bearer token; random by default. */
  token?: string;
  /**
   * More bearer tokens and the users they authenticate as (`{ tok: { name: 'jane', groups:
   * ['dev'] } }`; `system:authenticated` is added), for RBAC and admission tests: a person, or a
   * ServiceAccount's name without its TokenRequest.
   */
  users?: Record<string, { name: string; groups?: string[] }>;
  /** Time a Terminating namespace lingers before it disappears (default 100 ms). */
  namespaceDeleteDelayMs?: number;
  /** Time a ready pod takes to count as available in Deployments and StatefulSets (default 50 ms). */
  deploymentReadyDelayMs?: number;
  /** Time a pod removed by a controller (scale-down, rollout) stays terminating (default 100 ms). */
  podTerminationDelayMs?: number;
  /** Time a scheduled pod spends Pending before its containers start (default 20 ms). */
  podStartDelayMs?: number;
  /** Run time of containers that run to completion when no rule says otherwise (default 50 ms). */
  podRunMs?: number;
  /** Extra pod rules, tried before the built-in ones. */
  podRules?: PodRule[];
  /** How many requests the request log keeps, newest first (default 100,000). */
  requestLogSize?: number;
  /**
   * The API server's clock, in milliseconds since the epoch, as its answers' `Date` header and
   * the objects' `creationTimestamp` say (default: the real one). Tests that move time move it
   * too; a client reads the cluster's time from them.
   */
  now?: () => number;
  /**
   * Advertise the registry as a local cluster does (KEP-1755): a ConfigMap
   * `kube-public/local-registry-hosting` whose `localRegistryHosting.v1` names `host:
   * "127.0.0.1:<registry port>"` (default false).
   */
  advertiseRegistry?: boolean;
}

export interface SimStore {
  /** Current objects of a resource (`pods`, `deployments`, `deployments.apps`, ...). */
  list(resource: string, namespace?: string): KObject[];
  get(resource: string, namespace: string, name: string): KObject | undefined;
  count(resource: string): number;
  /** The pod's scratch directory (its `/` for exec and builds), created on first use. */
  scratchDir(namespace: string, pod: string): Promise<string>;
  /** Create an object directly, bypassing HTTP (handy for seeding large fixtures). */
  create(
    resource: string,
    namespace: string,
    obj: Partial<KObject> & { metadata: KObject['metadata'] },
  ): KObject;
  /** Log lines of a pod's container. */
  logs(namespace: string, pod: string, container?: string): string[];
  /** The current global resourceVersion. */
  resourceVersion(): number;
  /** Number of open watch connections. */
  watchers(): number;
}

export interface KubeSim {
  url: string;
  token: string;
  caPem: string;
  kubeconfigYaml: string;
  writeKubeconfig(path: string): Promise<void>;
  /** A kubeconfig for another token (a ServiceAccount's, from the TokenRequest API), its context named `context`. */
  kubeconfigFor(token: string, context?: string): string;
  /**
   * A client certificate the simulator's CA signs: a request made with it (and no bearer token)
   * is the user `user` in `groups` (`system:masters`: an administrator), as X.509 authentication.
   */
  issueClientCertificate(user: string, groups?: readonly string[]): Promise<ClientCertificate>;
  /** `http://127.0.0.1:PORT` of the OCI registry. */
  registryUrl: string;
  /** `127.0.0.1:PORT`, the host part of image references. */
  registryHost: string;
  registry: Registry;
  faults: Faults;
  /** Every API request received (method, path, verb, resource, namespace, user agent, status). */
  requests: RequestLog;
  store: SimStore;
  /** The kube-system namespace uid (tend's cluster id). */
  clusterId: string;
  stop(): Promise<void>;
}

function resource(name: string): ResourceType {
  const r = RESOURCES.find(
    (x) => x.key === name || x.plural === name || x.kind.toLowerCase() === name.toLowerCase(),
  );
  if (!r) throw new Error(`kube-sim: unknown resource "${name}"`);
  return r;
}

function kubeconfig(url: string, caPem: string, token: string, context = 'kube-sim'): string {
  const ca = Buffer.from(caPem).toString('base64');
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    '- name: kube-sim',
    '  cluster:',
    `    server: ${url}`,
    `    certificate-authority-data: ${ca}`,
    'users:',
    '- name: kube-sim',
    '  user:',
    `    token: ${token}`,
    'contexts:',
    `- name: ${context}`,
    '  context:',
    '    cluster: kube-sim',
    '    user: kube-sim',
    '    namespace: default',
    `current-context: ${context}`,
    'preferences: {}',
    '',
  ].join('\n');
}

function listen(server: HttpServer | HttpsServer, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve((server.address() as AddressInfo).port));
  });
}

export async function startKubeSim(opts: KubeSimOptions = {}): Promise<KubeSim> {
  const dir = await mkdtemp(join(tmpdir(), 'kube-sim-'));
  const certs = await generateCerts(dir);
  const token = opts.token ?? randomBytes(24).toString('hex');
  const cluster = new Cluster(opts.now);
  const runtime = new PodRuntime(cluster, {
    podStartDelayMs: opts.podStartDelayMs ?? 20,
    podRunMs: opts.podRunMs ?? 50,
    rules: opts.podRules ?? [],
  });
  const controllers = new Controllers(cluster, runtime, {
    namespaceDeleteDelayMs: opts.namespaceDeleteDelayMs ?? 100,
    deploymentReadyDelayMs: opts.deploymentReadyDelayMs ?? 50,
    podTerminationDelayMs: opts.podTerminationDelayMs ?? 100,
    caPem: certs.caPem,
  });
  const autoscaling = new AutoscalingController(cluster);
  const faults = new Faults();
  const requests = new RequestLog(opts.requestLogSize ?? DEFAULT_REQUEST_LOG_SIZE);
  const registry = new Registry();
  const scratch = new Map<string, string>();
  let registryPort = 0;
  let apiPort = 0;
  const registryHosts = (): string[] => [`127.0.0.1:${registryPort}`, `localhost:${registryPort}`];
  const scratchDir = async (namespace: string, pod: string): Promise<string> => {
    const key = `${namespace}/${pod}`;
    let d = scratch.get(key);
    if (!d) {
      d = join(dir, 'pods', namespace, pod);
      scratch.set(key, d);
    }
    await mkdir(d, { recursive: true });
    return d;
  };
  const streams = new Set<ServerResponse>();
  const ctx: ServerContext = {
    cluster,
    runtime,
    faults,
    requests,
    auth: new Authenticator(token, cluster.store, opts.users ?? {}),
    host: () => `127.0.0.1:${apiPort}`,
    exec: { runtime, registry, registryHosts, scratchDir },
    streams,
  };

  for (const name of ['default', 'kube-system', 'kube-public', 'kube-node-lease'])
    cluster.create(NS, '', { metadata: { name } });
  const clusterId = cluster.store.get(NS, '', 'kube-system')!.metadata.uid!;

  const sockets = new Set<Socket>();
  // Client certificates are asked for and checked against the CA, never required (tokens work alone).
  const tls = {
    key: certs.keyPem,
    cert: certs.certPem,
    ca: certs.caPem,
    requestCert: true,
    rejectUnauthorized: false,
  };
  const api = createHttpsServer(tls, (req, res) => {
    if (opts.now) res.setHeader('Date', new Date(opts.now()).toUTCString());
    void handleRequest(ctx, req, res);
  });
  api.keepAliveTimeout = 30_000;
  api.on('upgrade', (req, socket, head) => handleUpgrade(ctx, req, socket, head));
  api.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  api.on('secureConnection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  const reg = createHttpServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => registry.handle(req, res, Buffer.concat(chunks)));
  });
  reg.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  apiPort = await listen(api, opts.port ?? 0);
  registryPort = await listen(reg, opts.registryPort ?? 0);
  if (opts.advertiseRegistry) {
    cluster.create(CONFIGMAP, 'kube-public', {
      metadata: { name: 'local-registry-hosting', namespace: 'kube-public' },
      data: {
        'localRegistryHosting.v1': `host: "127.0.0.1:${registryPort}"\nhelp: "kube-sim's registry"\n`,
      },
    });
  }
  const url = `https://127.0.0.1:${apiPort}`;
  const kubeconfigYaml = kubeconfig(url, certs.caPem, token);

  const store: SimStore = {
    list: (r, namespace) =>
      cluster.store.list(resource(r), namespace !== undefined ? { namespace } : {}).items.map((s) => s.obj),
    get: (r, namespace, name) =>
      cluster.store.get(resource(r), resource(r).namespaced ? namespace : '', name),
    count: (r) => cluster.store.count(resource(r)),
    scratchDir,
    create: (r, namespace, obj) => cluster.create(resource(r), namespace, obj).obj,
    logs: (namespace, pod, container) => runtime.log(namespace, pod, container).lines.map((l) => l.text),
    resourceVersion: () => cluster.store.resourceVersion,
    watchers: () => cluster.store.watcherCount(),
  };

  let stopped = false;
  return {
    url,
    token,
    caPem: certs.caPem,
    kubeconfigYaml,
    writeKubeconfig: (path) => writeFile(path, kubeconfigYaml, { mode: 0o600 }),
    kubeconfigFor: (other, context) => kubeconfig(url, certs.caPem, other, context),
    issueClientCertificate: (user, groups = []) => issueClientCertificate(dir, user, groups),
    registryUrl: `http://127.0.0.1:${registryPort}`,
    registryHost: `127.0.0.1:${registryPort}`,
    registry,
    faults,
    requests,
    store,
    clusterId,
    async stop() {
      if (stopped) return;
      stopped = true;
      controllers.stop();
      autoscaling.stop();
      runtime.stop();
      for (const res of streams) res.end();
      streams.clear();
      const closed = Promise.all([new Promise((r) => api.close(r)), new Promise((r) => reg.close(r))]);
      for (const s of sockets) s.destroy();
      await closed;
      await rm(dir, { recursive: true, force: true });
    },
  };
}
