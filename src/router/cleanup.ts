/**
 * The router's cleanup calls: how a cleanup executor (embedded in `tend server`, or `tend agent`)
 * calls a plugin's cleanup handlers — through the same per-call broker, in-flight tracking and
 * error handling as every other handler call (calls.ts), with the plugin's executor settings as
 * its provider configuration.
 */
import { TendError } from '../errors.js';
import type { SessionBus } from '../events/bus.js';
import { refusedBeforeRestoring, verifyAndClean } from '../plugin/cleanup-checks.js';
import type {
  CleanupCallContext,
  CleanupPrimitives,
  CleanupInventory,
  CleanupJobSpec,
  CleanupResult,
  CleanupTarget,
  PluginDefinition,
  QueuedCleanupJob,
  RestoreRequest,
  RestoreResult,
} from '../plugin/types.js';
import { inventoryItemOf, type InventoryItem } from '../cleanup/protocol.js';
import type { PluginEventBroker } from './broker.js';
import { HandlerCalls, pluginLog } from './calls.js';

/** A plugin's inventory as the executor sends it to the server. */
export type WireInventory = Omit<CleanupInventory, 'items'> & { items: InventoryItem[] };

/** The queue's job in the plugin contract's words. */
function jobSpecOf(job: QueuedCleanupJob): CleanupJobSpec {
  return {
    id: job.id,
    action: job.action,
    project: job.project,
    environment: job.environment,
    resourceName: job.namespaceName,
    ...(job.namespaceUid ? { resourceUid: job.namespaceUid } : {}),
    target: job.target,
    dryRun: job.dryRun,
  };
}

/** A plugin this executor serves, with its resolved executor settings. */
export interface ServedPlugin {
  plugin: PluginDefinition & { cleanup: CleanupPrimitives };
  settings: unknown;
}

export interface CleanupRouterOptions {
  bus: SessionBus;
  protection: CleanupCallContext['protection'];
  user: string;
  hostId: string;
}

export class CleanupRouter {
  private readonly calls: HandlerCalls;

  constructor(private readonly options: CleanupRouterOptions) {
    this.calls = new HandlerCalls(options.bus);
  }

  describeInFlight(): string[] {
    return this.calls.describeInFlight();
  }

  targets(served: ServedPlugin, signal: AbortSignal): Promise<CleanupTarget[]> {
    return this.call(served, 'targets', signal, (ctx) => served.plugin.cleanup.targets(ctx));
  }

  /** The plugin's inventory in the wire's words (its resources as inventory items). */
  async inventory(served: ServedPlugin, target: CleanupTarget, signal: AbortSignal): Promise<WireInventory> {
    const listed = await this.call(served, 'inventory', signal, (ctx) =>
      served.plugin.cleanup.inventory(ctx, target),
    );
    // What is not an object is passed on as it came, for the server to refuse with the rest.
    const items: unknown[] = Array.isArray(listed?.items) ? listed.items : [];
    return {
      ...listed,
      items: items.map((item) =>
        typeof item === 'object' && item !== null && 'name' in item
          ? inventoryItemOf(item as CleanupInventory['items'][number])
          : (item as InventoryItem),
      ),
    };
  }

  /** The framework's checks around the plugin's primitives (plugin/cleanup-checks.ts), whatever the plugin. */
  verifyAndClean(
    served: ServedPlugin,
    target: CleanupTarget,
    job: QueuedCleanupJob,
    signal: AbortSignal,
    hooks: Pick<CleanupCallContext, 'confirm' | 'archive'> = {},
  ): Promise<CleanupResult> {
    return this.call(served, 'verifyAndClean', signal, (ctx) =>
      verifyAndClean(served.plugin.cleanup, { ...ctx, ...hooks }, target, job),
    );
  }

  restore(
    served: ServedPlugin,
    target: CleanupTarget,
    job: QueuedCleanupJob,
    request: RestoreRequest,
    signal: AbortSignal,
  ): Promise<RestoreResult> {
    const restore = served.plugin.cleanup.restore;
    if (!restore) {
      return Promise.reject(
        new TendError(
          'TEND_ARCHIVE',
          `plugin ${served.plugin.name} cannot restore an environment from its archive`,
        ),
      );
    }
    return this.call(
      served,
      'restore',
      signal,
      async (ctx) => {
        // The framework's checks of what the job names hold for a restore too: never into a
        // protected name, nor into one that exists.
        const refused = await refusedBeforeRestoring(served.plugin.cleanup, ctx, target, job);
        if (refused) throw new TendError('TEND_ARCHIVE', `not restored: ${refused}`);
        return restore(ctx, target, jobSpecOf(job), request);
      },
      { project: job.project, environment: job.environment },
    );
  }

  private call<T>(
    served: ServedPlugin,
    handler: 'targets' | 'inventory' | 'verifyAndClean' | 'restore',
    signal: AbortSignal,
    invoke: (ctx: CleanupCallContext) => Promise<T>,
    /** A job's project and environment: stamped on the plugin's own event types, as in a command. */
    scope: { project?: string; environment?: string } = {},
  ): Promise<T> {
    const { plugin } = served;
    return this.calls.run(
      plugin,
      { providerName: plugin.name, handler: `cleanup.${handler}`, ...scope },
      (broker) => invoke(this.context(served, broker, signal)),
    );
  }

  private context(served: ServedPlugin, broker: PluginEventBroker, signal: AbortSignal): CleanupCallContext {
    const o = this.options;
    return {
      provider: { name: served.plugin.name, config: served.settings },
      protection: o.protection,
      events: broker,
      log: pluginLog(broker),
      signal,
      user: o.user,
      hostId: o.hostId,
    };
  }
}
