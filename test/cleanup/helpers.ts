/**
 * Shared pieces of the cleanup executor tests: namespaces as tend creates them (seeded into
 * kube-sim), cleanup call contexts for the plugins' handlers, and jobs as the server hands them out.
 */
import type { KubeSim } from '../../tools/kube-sim/src/index.js';
import type { CleanupJob } from '../../src/cleanup/protocol.js';
import { PluginEventBroker } from '../../src/events/broker.js';
import { SessionBus } from '../../src/events/bus.js';
import type { EventType, NamespaceStatusPayload } from '../../src/events/catalog.js';
import type { CleanupCallContext, ExecutorSettings } from '../../src/plugins/types.js';

export interface SeededNamespace {
  name: string;
  uid: string;
  resourceVersion: string;
}

/** A namespace as tend's kubernetes provider creates it (label + annotations), or with changes. */
export function seedNamespace(
  sim: KubeSim,
  name: string,
  o: {
    project?: string;
    environment?: string;
    lastActivity?: string;
    labels?: Record<string, string> | null;
    annotations?: Record<string, string>;
  } = {},
): SeededNamespace {
  const created = sim.store.create('namespaces', '', {
    metadata: {
      name,
      labels: o.labels === null ? {} : { 'app.kubernetes.io/managed-by': 'tend', ...o.labels },
      annotations: {
        'tend.dev/project': o.project ?? 'shop',
        'tend.dev/environment': o.environment ?? 'dev',
        'tend.dev/created-at': '2026-01-01T00:00:00.000Z',
        'tend.dev/last-activity': o.lastActivity ?? '2026-01-01T00:00:00.000Z',
        ...o.annotations,
      },
    },
  });
  return { name, uid: created.metadata.uid!, resourceVersion: created.metadata.resourceVersion! };
}

export function exists(sim: KubeSim, name: string): boolean {
  return sim.store.get('namespaces', '', name) !== undefined;
}

export function executorSettings(
  kubeconfig: string,
  extra: Partial<ExecutorSettings> = {},
): ExecutorSettings {
  return {
    kubernetes: { kubeconfig, contexts: ['kube-sim'] },
    protectNamespaces: [],
    systemNamespace: 'tend-system',
    ...extra,
  };
}

/** A context like the executor's, recording the plugin's events. */
export function callContext(settings: ExecutorSettings, pluginName = 'kubernetes') {
  const bus = new SessionBus();
  const events: NamespaceStatusPayload[] = [];
  bus.on('namespaceStatus', (e) => events.push(e.payload as NamespaceStatusPayload));
  const declared = new Set<EventType>(['namespaceStatus', 'log']);
  const broker = new PluginEventBroker(bus, declared, {
    pluginName,
    providerName: pluginName,
    handler: 'cleanup.test',
  });
  for (const type of declared) broker.subscribe(type, (p) => bus.emit(type, p as never));
  const log: string[] = [];
  const ctx: CleanupCallContext = {
    settings,
    events: broker,
    log: {
      debug: (m) => log.push(m),
      info: (m) => log.push(m),
      warn: (m) => log.push(m),
      error: (m) => log.push(m),
      output: (_s, m) => log.push(m),
    },
    signal: new AbortController().signal,
    user: 'test',
    hostId: 'test-host',
  };
  return { ctx, events, log };
}

let jobCounter = 0;

/** A delete job for a seeded namespace, as the planner would create it. */
export function jobFor(sim: KubeSim, ns: SeededNamespace, extra: Partial<CleanupJob> = {}): CleanupJob {
  return {
    id: `job-${++jobCounter}`,
    action: 'delete',
    state: 'planned',
    environmentId: 'env-1',
    project: 'shop',
    environment: 'dev',
    resourceId: 'res-1',
    pluginName: 'kubernetes',
    targetKey: `kubernetes/${sim.clusterId}`,
    target: { kind: 'kubernetes', clusterId: sim.clusterId, server: sim.url, context: 'kube-sim' },
    namespaceName: ns.name,
    namespaceUid: ns.uid,
    expectedLastActivityAt: '2026-01-01T00:00:00.000Z',
    reason: 'no activity since 2026-01-01 00:00 UTC, policy 8h',
    attempts: 0,
    leaseExpiresAt: null,
    dryRun: false,
    ...extra,
  };
}
