/**
 * The events benchmark (issue 3): events/s from a plugin's `ctx.events.emit` through the broker
 * (declaration check, schema validation, metadata) to the session bus, and on to the local log
 * and outbox on disk. Baseline in the same process: `bus.emit` directly, without the broker.
 * Then the outbox's bound at the end of a command without a server (boundWithoutServer).
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Type } from 'typebox';
import { SessionBus } from '../src/events/bus.js';
import { PluginEventBroker } from '../src/router/broker.js';
import type { NamespaceStatusPayload } from '../src/events/catalog.js';
import { LocalLogSink } from '../src/events/local-log.js';
import { enforceBoundWithoutServer, outboxMaxBytes } from '../src/outbox/bound.js';
import { OutboxSink } from '../src/outbox/writer.js';
import { Router } from '../src/router/router.js';
import type { PluginDefinition, PluginPayload } from '../src/plugin/types.js';
import { statePaths } from '../src/state/files.js';
import { figure, median, ratio, tempProject, timeIt } from './support.js';

const count = 200_000;

/** What a plugin emits: the framework stamps pluginName and providerName. */
function pluginPayload(i: number): PluginPayload<'namespaceStatus'> {
  // 100 namespaces whose state flips on every event: deduplication lets each one through, as
  // it must for a change of state, while its table stays the size of a real session's.
  return {
    namespaceName: `ns-${i % 100}`,
    state: Math.floor(i / 100) % 2 ? 'ready' : 'terminating',
    role: 'app',
    cause: 'observed',
    target: { kind: 'local', hostId: 'bench-host', path: '/tmp/bench' },
    project: 'bench',
    environment: 'dev',
  };
}

/** The same event as the bus receives it from the broker. */
function payload(i: number): NamespaceStatusPayload {
  return { pluginName: 'bench', providerName: 'bench', ...pluginPayload(i) };
}

/** A plugin whose one handler emits `n` events, called through the real router. */
function emittingPlugin(n: number): PluginDefinition {
  return {
    name: 'bench',
    description: 'emits events',
    configSchema: Type.Object({}),
    emits: ['namespaceStatus'],
    provider: {
      init: async () => undefined,
      getEnvironmentStatus: async () => ({ ready: true }),
      prepareEnvironment: async (ctx) => {
        for (let i = 0; i < n; i++) ctx.events.emit('namespaceStatus', pluginPayload(i));
        return { ready: true };
      },
      cleanupEnvironment: async () => ({ deleted: false, message: '' }),
    },
    actionTypes: [],
  };
}

async function throughRouter(bus: SessionBus, root: string): Promise<number> {
  const plugin = emittingPlugin(count);
  const router = new Router({
    bus,
    providers: [{ name: 'bench', plugin, config: {} }],
    environment: {
      project: 'bench',
      name: 'dev',
      namespace: 'bench-dev',
      resourceName: 'bench-dev',
      variables: {},
    },
    templateContext: {
      project: { name: 'bench' },
      environment: { name: 'dev', namespace: 'bench-dev' },
      var: {},
      local: { username: 'bench', env: {} },
    },
    projectRoot: root,
    tendDir: statePaths(root).root,
    user: 'bench',
    hostId: 'bench-host',
    signal: new AbortController().signal,
  });
  return timeIt(() => router.callProvider(router.providers[0]!, 'prepareEnvironment'));
}

export async function run(): Promise<void> {
  console.log(`events: ${count.toLocaleString()} namespaceStatus events per measurement`);
  const project = tempProject({});

  const bareBus = new SessionBus();
  const direct = await timeIt(() => {
    for (let i = 0; i < count; i++) bareBus.emit('namespaceStatus', payload(i));
  });

  const busOnly = await throughRouter(new SessionBus(), project.root);
  figure('ctx.events.emit → session bus', count / (busOnly / 1000), 'events/s', { min: 200_000 });
  ratio('  vs bus.emit directly (no broker)', busOnly, direct, 'direct');

  const diskBus = new SessionBus();
  const paths = statePaths(project.root);
  diskBus.addSink(new LocalLogSink(paths.events, diskBus.sessionId));
  diskBus.addSink(new OutboxSink(paths.outbox, diskBus.sessionId));
  const toDisk = await throughRouter(diskBus, project.root);
  const closing = await timeIt(() => diskBus.close());
  figure('ctx.events.emit → local log + outbox (written to the OS)', count / (toDisk / 1000), 'events/s', {
    min: 50_000,
  });
  figure('  session end: final flush and fsync', closing, 'ms');
  ratio('  disk vs bus only', toDisk, busOnly, 'bus only');

  // A standalone broker, to show the cost of validation alone.
  const broker = new PluginEventBroker(new SessionBus(), new Set(['namespaceStatus']), {
    pluginName: 'bench',
    providerName: 'bench',
    handler: 'bench',
  });
  const validated = await timeIt(() => {
    for (let i = 0; i < count; i++) broker.emit('namespaceStatus', pluginPayload(i));
  });
  figure('broker validation only (no forwarding)', count / (validated / 1000), 'events/s');
  project.remove();
  boundWithoutServer();
}

/**
 * The end of a command without a server: the outbox kept within its bound, with a segment of
 * every earlier command there (5,000: a few months of one developer's commands). Baseline: a
 * count of every segment's size, what each command did before the ledger.
 */
function boundWithoutServer(): void {
  const segments = 5000;
  const project = tempProject({});
  const { outbox, cache } = statePaths(project.root);
  mkdirSync(outbox, { recursive: true });
  const segment = 'x'.repeat(4000);
  for (let i = 0; i < segments; i++)
    writeFileSync(path.join(outbox, `s${String(i).padStart(5, '0')}.jsonl`), segment);
  const ledgerFile = path.join(cache, 'outbox-bytes.json');
  const rounds = 21;
  const counted: number[] = [];
  const ledgered: number[] = [];
  for (let i = 0; i < rounds; i++) {
    rmSync(ledgerFile, { force: true });
    counted.push(
      timeSync(() =>
        enforceBoundWithoutServer(outbox, outboxMaxBytes(), { ownSegment: 's00000', ledgerFile }),
      ),
    );
    ledgered.push(
      timeSync(() =>
        enforceBoundWithoutServer(outbox, outboxMaxBytes(), { ownSegment: 's00000', ledgerFile }),
      ),
    );
  }
  console.log(
    `outbox bound at the end of a command without a server, ${segments.toLocaleString()} segments, median of ${rounds}:`,
  );
  figure('  with the size ledger', median(ledgered), 'ms');
  figure('  counting every segment (before the ledger)', median(counted), 'ms');
  ratio('  ledger vs counting', median(ledgered), median(counted), 'counting');
  project.remove();
}

function timeSync(fn: () => unknown): number {
  const start = performance.now();
  fn();
  return performance.now() - start;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) await run();
