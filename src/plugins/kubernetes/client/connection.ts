/**
 * The connection to a cluster: the kubeconfig read the way kubectl reads it (`KUBECONFIG` with
 * several files, else `~/.kube/config`; the provider's `context:` or the current context), and the
 * @kubernetes/client-node API objects. The library is imported lazily, here and only here, so that
 * commands and projects that never talk to a cluster never load it.
 */
import type * as k8s from '@kubernetes/client-node';
import { TendError } from '../../../errors.js';

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

/** One connection per (kubeconfig, context) and process. */
export function connect(context: string | undefined): Promise<Connection> {
  const key = `${process.env.KUBECONFIG ?? ''}\0${process.env.HOME ?? ''}\0${context ?? ''}`;
  let connection = connections.get(key);
  if (!connection) {
    connection = open(context);
    connections.set(key, connection);
    connection.catch(() => connections.delete(key));
  }
  return connection;
}

async function open(context: string | undefined): Promise<Connection> {
  const lib = await import('@kubernetes/client-node');
  const kc = new lib.KubeConfig();
  const source = process.env.KUBECONFIG ? `KUBECONFIG=${process.env.KUBECONFIG}` : '~/.kube/config';
  try {
    kc.loadFromDefault();
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
  return {
    k8s: lib,
    kubeConfig: kc,
    context: current,
    server: cluster.server,
    core: kc.makeApiClient(lib.CoreV1Api),
    objects: lib.KubernetesObjectApi.makeApiClient(kc),
    exec: new lib.Exec(kc),
    attach: new lib.Attach(kc),
    log: new lib.Log(kc),
  };
}

/** For tests: forget cached connections (e.g. after KUBECONFIG changed). */
export function resetConnections(): void {
  connections.clear();
}
