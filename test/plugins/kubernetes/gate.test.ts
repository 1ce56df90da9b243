/**
 * Every request of the namespace-tracking client passes through its namespace check, checked on
 * the wire: each client method, called in a handler call of its own, is compared with kube-sim's
 * request log — the first request the call sends into a namespace is the check's read of that
 * namespace, and every namespace the call's requests touched is reported in a `namespaceStatus`
 * of that call. A client method without a row here fails the test. Also: a namespace deleted or
 * terminating while tend uses it is reported (`missing`/`terminating`, cause `observed`), and a
 * namespace annotated `tend.dev/role=system` is never taken as an app namespace.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Readable } from 'node:stream';
import { SessionBus } from '../../../src/events/bus.js';
import type { NamespaceStatusPayload, TendEvent } from '../../../src/events/catalog.js';
import type { PluginContext, PluginLog } from '../../../src/plugin/types.js';
import { PluginEventBroker } from '../../../src/router/broker.js';
import { KubeClient } from '../../../src/plugins/kubernetes/client/index.js';
import { NamespaceCalls } from '../../../src/plugins/kubernetes/client/namespaces.js';
import { ObjectCalls } from '../../../src/plugins/kubernetes/client/objects.js';
import { PodCalls } from '../../../src/plugins/kubernetes/client/pods.js';
import { settingsOf } from '../../../src/plugins/kubernetes/config.js';
import { waitForStart } from '../../../src/plugins/kubernetes/pods.js';
import { makeProject, removeProjects, runTend, waitFor } from '../../helpers/project.js';
import {
  allEvents,
  execute,
  kubectl,
  namespaceEvents,
  projectYaml,
  sessionEvents,
  startSim,
  type SimHandle,
} from './helpers.js';

let h: SimHandle;
beforeAll(async () => {
  h = await startSim({ namespaceDeleteDelayMs: 300 });
});
afterAll(async () => h?.stop());
afterEach(removeProjects);

let counter = 0;

/**
 * A handler call of its own: a fresh broker and client, as the router gives a plugin; on a fresh
 * bus (a session of its own) unless `bus` is given. `sessionless`: a cleanup job's call.
 */
async function call(namespace: string, { bus = new SessionBus(), sessionless = false } = {}) {
  const events: NamespaceStatusPayload[] = [];
  bus.on('namespaceStatus', (e) => events.push((e as TendEvent<'namespaceStatus'>).payload));
  const broker = new PluginEventBroker(bus, new Set(['namespaceStatus', 'log']), {
    pluginName: 'kubernetes',
    providerName: 'kubernetes',
    handler: 'run',
  });
  const log = (level: 'debug' | 'info' | 'warn' | 'error') => (message: string) =>
    broker.emit('log', { level, message });
  const pluginLog: PluginLog = {
    debug: log('debug'),
    info: log('info'),
    warn: log('warn'),
    error: log('error'),
    output: (_stream, line) => broker.emit('log', { level: 'info', message: line }),
  };
  const config = { context: 'kube-sim', namespaceTimeout: 20 };
  const ctx = {
    sessionId: sessionless ? undefined : bus.sessionId,
    projectRoot: '/nonexistent',
    tendDir: '/nonexistent/.tend',
    environment: { project: 'gate', name: 'dev', namespace, resourceName: namespace, variables: {} },
    provider: { name: 'kubernetes', config, state: undefined },
    events: broker,
    log: pluginLog,
    signal: new AbortController().signal,
    user: 'ada',
    hostId: 'host-1',
    resolveTemplates: <T>(value: T) => value,
    kubernetes: () => Promise.reject(new Error('not offered in this test')),
  } satisfies Omit<PluginContext, 'sessionId'> & { sessionId: string | undefined };
  const client = await KubeClient.identify(ctx, settingsOf(config, namespace));
  return { client, events, close: () => broker.close() };
}

/** A namespace tend created for project `gate`, so every call (delete included) may work in it. */
function ownedNamespace(): string {
  const name = `gate-${++counter}`;
  h.sim.store.create('namespaces', '', {
    metadata: {
      name,
      labels: { 'app.kubernetes.io/managed-by': 'tend' },
      annotations: { 'tend.dev/project': 'gate', 'tend.dev/environment': 'dev' },
    },
  });
  return name;
}

const pod = (name: string, script: string) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name },
  spec: {
    restartPolicy: 'Never',
    containers: [{ name: 'main', image: 'alpine', command: ['sh', '-c', script] }],
  },
});
const configMap = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'settings' }, data: { a: 'b' } };

async function runningPod(namespace: string, script = 'sleep infinity'): Promise<string> {
  const setup = await call(namespace);
  await setup.client.pods.create(namespace, pod('p', script));
  await waitForStart(setup.client, namespace, 'p', {
    deadline: Date.now() + 20_000,
    signal: new AbortController().signal,
    what: 'setup pod',
  });
  setup.close();
  return 'p';
}

type Client = KubeClient;
interface Row {
  method: string;
  /** Creates what the call needs (through a call of its own, before the mark). */
  given?: (namespace: string) => Promise<void>;
  run: (client: Client, namespace: string) => Promise<unknown>;
  /** Whether the call sends requests into the namespace (discovery does not). */
  touches?: false;
}

const rows: Row[] = [
  { method: 'namespaces.observe', run: (c, ns) => c.namespaces.observe(ns) },
  { method: 'namespaces.ensure', run: (c, ns) => c.namespaces.ensure(ns) },
  { method: 'namespaces.deleteOwned', run: (c, ns) => c.namespaces.deleteOwned(ns) },
  // The cleanup executors' fresh read: reported, never stamped.
  { method: 'namespaces.read', run: (c, ns) => c.namespaces.read(ns) },
  // The cleanup inventory: one cluster-wide list of namespaces labelled managed-by=tend, into none.
  { method: 'namespaces.listManaged', run: (c) => c.namespaces.listManaged(), touches: false },
  { method: 'pods.create', run: (c, ns) => c.pods.create(ns, pod('p', 'echo hi')) },
  { method: 'pods.read', given: (ns) => runningPod(ns).then(() => {}), run: (c, ns) => c.pods.read(ns, 'p') },
  {
    method: 'pods.delete',
    given: (ns) => runningPod(ns).then(() => {}),
    run: (c, ns) => c.pods.delete(ns, 'p'),
  },
  {
    method: 'pods.remove',
    given: (ns) => runningPod(ns).then(() => {}),
    run: (c, ns) => c.pods.remove(ns, 'p'),
  },
  { method: 'pods.list', run: (c, ns) => c.pods.list(ns) },
  { method: 'pods.listEvents', run: (c, ns) => c.pods.listEvents(ns) },
  {
    method: 'pods.streamLog',
    given: (ns) => runningPod(ns, 'echo one; sleep 1').then(() => {}),
    run: async (c, ns) => {
      const lines: string[] = [];
      const stream = await c.pods.streamLog(ns, 'p', 'main', (l) => lines.push(l));
      await stream.done;
      stream.stop();
    },
  },
  {
    method: 'pods.exec',
    given: (ns) => runningPod(ns).then(() => {}),
    run: (c, ns) => c.pods.exec(ns, 'p', 'main', ['echo', 'hi'], {}),
  },
  {
    method: 'pods.attach',
    given: (ns) => runningPod(ns, 'sleep 1').then(() => {}),
    run: (c, ns) => c.pods.attach(ns, 'p', 'main', { stdin: () => Readable.from([]) }),
  },
  { method: 'objects.isNamespaced', run: (c) => c.objects.isNamespaced('v1', 'ConfigMap'), touches: false },
  { method: 'objects.apply', run: (c, ns) => c.objects.apply(ns, configMap) },
  {
    method: 'objects.read',
    given: async (ns) => {
      const setup = await call(ns);
      await setup.client.objects.apply(ns, configMap);
    },
    run: (c, ns) => c.objects.read(ns, { apiVersion: 'v1', kind: 'ConfigMap', name: 'settings' }),
  },
  {
    method: 'objects.delete',
    given: async (ns) => {
      const setup = await call(ns);
      await setup.client.objects.apply(ns, configMap);
    },
    run: (c, ns) => c.objects.delete(ns, { apiVersion: 'v1', kind: 'ConfigMap', name: 'settings' }),
  },
];

/** Every public method of the client's call groups, named as the rows name them. */
function clientMethods(): string[] {
  const groups = { namespaces: NamespaceCalls, pods: PodCalls, objects: ObjectCalls };
  return Object.entries(groups)
    .flatMap(([group, cls]) =>
      Object.getOwnPropertyNames(cls.prototype)
        .filter((m) => m !== 'constructor')
        .filter((m) => typeof (cls.prototype as unknown as Record<string, unknown>)[m] === 'function')
        .map((m) => `${group}.${m}`),
    )
    .filter((m) => !['namespaces.waitUntilGone'].includes(m)) // private: a step of ensure
    .sort();
}

describe('the namespace-tracking client', () => {
  it('has a row for every method it offers', () => {
    expect(clientMethods()).toEqual(rows.map((r) => r.method).sort());
  });

  it.each(rows)(
    '$method: its requests pass through the namespace check, and the namespace is reported',
    async (row) => {
      const namespace = ownedNamespace();
      await row.given?.(namespace);
      const mark = h.sim.requests.latest();
      const { client, events, close } = await call(namespace);
      await row.run(client, namespace);
      close();
      // The identity read of kube-system (provider init's part) is not a namespace a call works in.
      const sent = h.sim.requests
        .list({ since: mark })
        .filter((r) => !(r.namespace === 'kube-system' && r.method === 'GET' && r.resource === 'namespaces'));
      const touched = [...new Set(sent.flatMap((r) => (r.namespace ? [r.namespace] : [])))];
      if (row.touches === false) {
        expect(touched).toEqual([]);
        return;
      }
      expect(touched).toEqual([namespace]);
      const first = sent.find((r) => r.namespace === namespace)!;
      expect({ method: first.method, path: first.path }).toEqual({
        method: 'GET',
        path: `/api/v1/namespaces/${namespace}`,
      });
      const reported = new Set(events.map((e) => e.namespaceName));
      for (const ns of touched) expect(reported).toContain(ns);
    },
  );
});

describe('the calls of one session', () => {
  /** The reads of `namespace` kube-sim answered since `mark`. */
  const readsOf = (namespace: string, mark: number) =>
    h.sim.requests
      .list({ since: mark })
      .filter((r) => r.method === 'GET' && r.path === `/api/v1/namespaces/${namespace}`).length;

  it('share a read of the namespace a moment old: two calls look, kube-sim is asked once, both see it', async () => {
    const namespace = ownedNamespace();
    const bus = new SessionBus();
    const mark = h.sim.requests.latest();
    const [a, b] = [await call(namespace, { bus }), await call(namespace, { bus })];
    const seen = [await a.client.namespaces.observe(namespace), await b.client.namespaces.observe(namespace)];
    a.close();
    b.close();
    expect(readsOf(namespace, mark)).toBe(1);
    expect(seen.map((info) => info?.state)).toEqual(['ready', 'ready']);
    expect(a.events.map((e) => [e.namespaceName, e.state])).toEqual([[namespace, 'ready']]);
  });

  it('other sessions, and a cleanup call (no session), read it afresh', async () => {
    const namespace = ownedNamespace();
    const mark = h.sim.requests.latest();
    for (const options of [{}, {}, { sessionless: true }, { sessionless: true }]) {
      const { client, close } = await call(namespace, options);
      await client.namespaces.observe(namespace);
      close();
    }
    expect(readsOf(namespace, mark)).toBe(4);
  });

  it('what would create the namespace reads it afresh: deleted after the session looked, it is created anew', async () => {
    const namespace = ownedNamespace();
    const bus = new SessionBus();
    const look = await call(namespace, { bus });
    const before = await look.client.namespaces.observe(namespace);
    look.close();
    await kubectl(h.kubeconfig, 'delete', 'namespace', namespace, '--wait=false');
    const prepare = await call(namespace, { bus });
    const ensured = await prepare.client.namespaces.ensure(namespace);
    prepare.close();
    expect(ensured.created).toBe(true);
    expect(ensured.info.uid).not.toBe(before?.uid);
  });
});

describe('output of a call', () => {
  it('the last line of an exec without a newline arrives before the call returns (its broker is still open)', async () => {
    const namespace = ownedNamespace();
    await runningPod(namespace);
    const { client, close } = await call(namespace);
    const lines: string[] = [];
    await client.pods.exec(namespace, 'p', 'main', ['sh', '-c', 'echo first; echo -n last'], {
      onStdout: (line) => lines.push(line),
    });
    // Checked at once, as a handler returning right here would be: nothing waits for a later tick.
    expect(lines).toEqual(['first', 'last']);
    close();
  });
});

describe('a namespace that changes under tend', () => {
  it('deleted during `tend run`: the pod "disappears" and the namespace is reported terminating/missing (observed)', async () => {
    const namespace = 'gate-deleted-mid-run';
    const root = makeProject({
      'tend.yml': projectYaml({ registry: h.sim.registryHost, namespace, project: 'gate' }),
      'run.tend.yml':
        'kind: Run\ntype: kubernetes-pod\nname: long\nspec: { image: alpine, command: [sh, -c, "sleep infinity"], timeout: 20 }\n',
    });
    const running = execute('run', root, ['long']);
    await waitFor(async () => {
      const pods = JSON.parse(
        await kubectl(h.kubeconfig, '-n', namespace, 'get', 'pods', '-o', 'json').catch(() => '{"items":[]}'),
      ) as { items: { status?: { phase?: string } }[] };
      return pods.items.some((p) => p.status?.phase === 'Running');
    }, 'the run pod to be running');
    await kubectl(h.kubeconfig, 'delete', 'namespace', namespace, '--wait=false');
    const result = await running;
    expect(result.exitCode).toBe(1);
    const events = namespaceEvents(sessionEvents(root, result.data.sessionId)).filter(
      (e) => e.namespaceName === namespace,
    );
    const states = events.map((e) => [e.state, e.cause, e.handler]);
    const firstReady = states.findIndex(([state]) => state === 'ready');
    const after = states.slice(firstReady + 1).filter(([state]) => state !== 'ready');
    // Seen by the run handler itself, from its pod calls, before the command ended.
    expect(after.length).toBeGreaterThan(0);
    for (const [, cause, handler] of after) expect([cause, handler]).toEqual(['observed', 'run']);
    expect(states.at(-1)).toEqual(['missing', 'observed', 'run']);
  });

  it('a namespace annotated tend.dev/role=system is never adopted as the app namespace: exit 2, nothing stamped', async () => {
    h.sim.store.create('namespaces', '', {
      metadata: { name: 'shared-system', annotations: { 'tend.dev/role': 'system' } },
    });
    const root = makeProject({
      'tend.yml': projectYaml({
        registry: h.sim.registryHost,
        namespace: 'shared-system',
        project: 'gate',
        providerExtra: '    systemNamespace: other-system\n',
      }),
    });
    const run = await runTend(['build'], { cwd: root, env: { KUBECONFIG: h.kubeconfig } });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/namespace "shared-system" is annotated tend\.dev\/role=system/);
    const annotations = h.sim.store.get('namespaces', '', 'shared-system')?.metadata?.annotations ?? {};
    expect(annotations).toEqual({ 'tend.dev/role': 'system' });
    // Reported as what it is: shared infrastructure, never an app namespace (so never a cleanup target).
    const events = namespaceEvents(allEvents(root)).filter((e) => e.namespaceName === 'shared-system');
    expect(events.length).toBeGreaterThan(0);
    expect(events.every((e) => e.role === 'system')).toBe(true);
  });
});
