/**
 * The connection to a cluster: the kubeconfig read the way kubectl reads it (`KUBECONFIG` with
 * several files, else `~/.kube/config`; the provider's `context:` or the current context), and the
 * @kubernetes/client-node API objects. The library is imported lazily, here and only here, so that
 * commands and projects that never talk to a cluster never load it.
 */
import type * as k8s from '@kubernetes/client-node';
import type { KubeConfig, RequestContext, SecurityAuthentication } from '@kubernetes/client-node';
import { AsyncLocalStorage } from 'node:async_hooks';
import type https from 'node:https';
import { builtinModule } from '../../../builtin-module.js';
import { TendError } from '../../../errors.js';
import { importModule } from '../../../import-module.js';

/**
 * The abort signal of the handler call a request is made for (set by the request gate around
 * each request): Ctrl-C aborts the requests in flight. Connections are shared by the calls of a
 * process, so the signal travels with the request, not with the connection.
 */
export const requestSignal = new AsyncLocalStorage<AbortSignal | undefined>();

export type K8sModule = typeof k8s;

export interface Connection {
  k8s: K8sModule;
  kubeConfig: k8s.KubeConfig;
  context: string;
  server: string;
  core: k8s.CoreV1Api;
  objects: k8s.KubernetesObjectApi;
  exec: k8s.Exec;
  attach: k8s.Attach;
  log: k8s.Log;
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
  const lib = await importModule<typeof k8s>('@kubernetes/client-node');
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
        { detail: { hint: 'set `context:` of the kubernetes provider in tend.yml to one of them' } },
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
      { detail: { hint: 'set KUBECONFIG, or `context:` of the kubernetes provider in tend.yml' } },
    );
  }
  // One keep-alive connection pool per cluster: client-node's default is a new agent (and TLS
  // handshake) for every request, which dominates the cost of the many small calls tend makes.
  const configuration = lib.createConfiguration({
    baseServer: new lib.ServerConfiguration(cluster.server, {}),
    authMethods: { default: keepAliveAuthentication(kc) },
  });
  const objects = new (class extends lib.KubernetesObjectApi {
    constructor() {
      super(configuration);
      this.setDefaultNamespace(kc);
    }
  })();
  return {
    k8s: lib,
    kubeConfig: kc,
    context: current,
    server: cluster.server,
    core: new lib.CoreV1Api(configuration),
    objects,
    exec: new lib.Exec(kc),
    attach: new lib.Attach(kc),
    log: new lib.Log(kc),
  };
}

/** For tests: forget cached connections (e.g. after KUBECONFIG changed). */
export function resetConnections(): void {
  connections.clear();
}

/**
 * Kubeconfig authentication whose requests share one keep-alive agent with the same TLS
 * options (CA, client certificate, server name). Clusters behind a proxy keep client-node's own.
 */
function keepAliveAuthentication(kc: KubeConfig): SecurityAuthentication {
  let agent: https.Agent | undefined;
  return {
    getName: () => 'kubeconfig authentication (keep-alive)',
    async applySecurityAuthentication(context: RequestContext) {
      const signal = requestSignal.getStore();
      if (signal) context.setSignal(signal);
      await kc.applySecurityAuthentication(context);
      const cluster = kc.getCurrentCluster();
      if (!cluster || cluster.proxyUrl || !cluster.server.startsWith('https:')) return;
      if (!agent) {
        const options: https.RequestOptions = {};
        await kc.applyToHTTPSOptions(options);
        const { ca, cert, key, pfx, passphrase, rejectUnauthorized, servername } = options;
        agent = new (builtinModule<typeof https>('node:https').Agent)({
          ca,
          cert,
          key,
          pfx,
          passphrase,
          servername: servername ?? cluster.tlsServerName,
          ...(cluster.skipTLSVerify
            ? { rejectUnauthorized: false }
            : rejectUnauthorized !== undefined
              ? { rejectUnauthorized }
              : {}),
          keepAlive: true,
          maxSockets: 16,
        });
      }
      context.setAgent(agent);
    },
  };
}
