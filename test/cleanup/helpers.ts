/**
 * Shared pieces of the cleanup executor tests (and bench/cleanup-executor.ts: no test runner
 * imports here): namespaces as tend creates them (seeded into kube-sim), their recording on the
 * server, cleanup call contexts for the plugins' handlers, and jobs as the server hands them out.
 */
import { statusReportOf } from '../../src/events/resource-status.js';
import { monotonicFactory } from 'ulidx';
import type { KubeSim } from '../../tools/kube-sim/src/index.js';
import type { CleanupJob } from '../../src/cleanup/protocol.js';
import { PluginEventBroker } from '../../src/router/broker.js';
import { SessionBus } from '../../src/events/bus.js';
import type { EventType, NamespaceStatusPayload } from '../../src/events/catalog.js';
import type { CleanupCallContext } from '../../src/plugin/types.js';
import { kubernetesPlugin } from '../../src/plugins/kubernetes/index.js';
import type { ServedPlugin } from '../../src/router/cleanup.js';
import type { CleanupSwitches } from '../../src/server/cleanup/switches.js';
import { setWorldClock } from '../plugins/kubernetes/helpers.js';
import { postEvents, type TestServer } from '../server/helpers.js';

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

/** The kubernetes plugin's executor settings for kube-sim's contexts. */
export function clusterSettings(kubeconfig: string, contexts = ['kube-sim']) {
  return { kubeconfig, contexts };
}

/** What an executor of these tests serves: the kubernetes plugin for kube-sim. */
export function servedClusters(kubeconfig: string): ServedPlugin[] {
  return [{ plugin: kubernetesPlugin as ServedPlugin['plugin'], settings: clusterSettings(kubeconfig) }];
}

export const testProtection = { patterns: [] as string[], systemName: 'tend-system' };

/** A context like the router gives a cleanup call (the plugin's settings as its config), recording its events. */
export function callContext<Settings>(
  config: Settings,
  o: { pluginName?: string; protectNamespaces?: string[]; hostId?: string } = {},
) {
  const pluginName = o.pluginName ?? 'kubernetes';
  const bus = new SessionBus();
  const events: NamespaceStatusPayload[] = [];
  // Status reports of either name, as the registry reads them.
  bus.on('*', (e) => {
    const report = statusReportOf(e);
    if (report) events.push(report.payload);
  });
  const declared = new Set<EventType>(['namespaceStatus', 'resourceStatus', 'log']);
  const broker = new PluginEventBroker(bus, declared, {
    pluginName,
    providerName: pluginName,
    handler: 'cleanup.test',
  });
  const log: string[] = [];
  const ctx: CleanupCallContext<Settings> = {
    provider: { name: pluginName, config },
    protection: { ...testProtection, patterns: o.protectNamespaces ?? [] },
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
    hostId: o.hostId ?? 'test-host',
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

export type TestClock = ReturnType<typeof testClock>;

/**
 * A clock the tests move: the server's receive time and the planner's now — and the world's
 * (kube-sim's `Date`), so that moving it is time passing, not the server's clock going wrong.
 */
export function testClock() {
  let offsetMs = 0;
  setWorldClock(() => Date.now() + offsetMs);
  return {
    now: () => new Date(Date.now() + offsetMs),
    advance(ms: number) {
      offsetMs += ms;
    },
  };
}

/**
 * Records seeded namespaces on the server as a `tend deploy` would: a session with the cleanup
 * policy and `namespaceStatus ready` with the namespace's uid on the simulator's cluster.
 */
export function recordingEvents(
  sim: KubeSim,
  namespaces: SeededNamespace[],
  o: { project?: string; environment?: string; policy?: string; user?: string } = {},
) {
  const events: unknown[] = [];
  const project = o.project ?? 'shop';
  const environment = o.environment ?? 'dev';
  for (const ns of namespaces) {
    const sessionId = nextId();
    const base = (type: string, payload: unknown) => ({
      id: nextId(),
      type,
      sessionId,
      timestamp: new Date().toISOString(),
      payload,
    });
    events.push(
      base('sessionStarted', {
        command: 'deploy',
        args: [],
        project,
        environment,
        namespace: ns.name,
        user: o.user ?? 'alice',
        hostId: 'host-1',
        cliVersion: '0.1.0',
        cleanupPolicy: { afterInactivity: o.policy ?? '1h', action: 'delete' },
      }),
      base('namespaceStatus', {
        pluginName: 'kubernetes',
        providerName: 'kubernetes',
        namespaceName: ns.name,
        namespaceUid: ns.uid,
        state: 'ready',
        role: 'app',
        cause: 'created',
        target: { kind: 'kubernetes', clusterId: sim.clusterId, server: sim.url, context: 'kube-sim' },
        project,
        environment,
      }),
      base('sessionCompleted', { durationMs: 10, succeeded: 1, cached: 0, failed: 0, aborted: 0 }),
    );
  }
  return events;
}

const nextId = monotonicFactory();

/** Counts the DELETE requests for namespaces the simulator answers (a zero-delay latency rule). */
export function countNamespaceDeletes(sim: KubeSim): () => number {
  const id = sim.faults.add({ type: 'latency', ms: 0, verb: 'delete', resource: 'namespaces' });
  return () => sim.faults.fired(id);
}

let dueBatch = 0;

/**
 * n idle environments, each of a project of its own (so the per-project breaker stays shut):
 * seeded, recorded with a 1h policy, the policy enforced, and the clock moved 2h on.
 */
export async function dueEnvironments(
  t: { sim: KubeSim; server: TestServer; clock: TestClock; cleanup: Pick<CleanupSwitches, 'enforce'> },
  n: number,
  prefix = 'p',
): Promise<SeededNamespace[]> {
  const batch = ++dueBatch;
  const namespaces: SeededNamespace[] = [];
  for (let i = 0; i < n; i++) {
    const project = `${prefix}${batch}-${i}`;
    const ns = seedNamespace(t.sim, `${project}-dev`, { project });
    const res = await postEvents(t.server, recordingEvents(t.sim, [ns], { project }));
    if (res.statusCode !== 200) throw new Error(`recording ${ns.name}: ${res.statusCode} ${res.body}`);
    await t.cleanup.enforce(project, undefined, 'test');
    namespaces.push(ns);
  }
  t.clock.advance(2 * 3_600_000);
  return namespaces;
}
