/**
 * The router's cleanup calls: how a cleanup executor (embedded in `tend server`, or `tend agent`)
 * calls a plugin's cleanup handlers — through the same per-call broker, in-flight tracking and
 * error handling as every other handler call (calls.ts), with the plugin's executor settings as
 * its provider configuration.
 */
import { TendError } from '../errors.js';
import type { SessionBus } from '../events/bus.js';
import { refusedBeforeReading, verifyAndClean } from '../plugin/cleanup-checks.js';
import type {
  CleanupCallContext,
  CleanupPrimitives,
  CleanupInventory,
  CleanupJobSpec,
  CleanupResult,
  CleanupTarget,
  PluginDefinition,
  RestoreRequest,
  RestoreResult,
} from '../plugin/types.js';
import type { PluginEventBroker } from './broker.js';
import { HandlerCalls, pluginLog } from './calls.js';

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

  inventory(served: ServedPlugin, target: CleanupTarget, signal: AbortSignal): Promise<CleanupInventory> {
    return this.call(served, 'inventory', signal, (ctx) => served.plugin.cleanup.inventory(ctx, target));
  }

  /** The framework's checks around the plugin's primitives (plugin/cleanup-checks.ts), whatever the plugin. */
  verifyAndClean(
    served: ServedPlugin,
    target: CleanupTarget,
    job: CleanupJobSpec,
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
    job: CleanupJobSpec,
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
    return this.call(served, 'restore', signal, async (ctx) => {
      // The framework's checks of what the job names hold for a restore too: never into a protected name.
      const refused = refusedBeforeReading(served.plugin.cleanup, ctx, target, job);
      if (refused) throw new TendError('TEND_ARCHIVE', `not restored: ${refused}`);
      return restore(ctx, target, job, request);
    });
  }

  private call<T>(
    served: ServedPlugin,
    handler: 'targets' | 'inventory' | 'verifyAndClean' | 'restore',
    signal: AbortSignal,
    invoke: (ctx: CleanupCallContext) => Promise<T>,
  ): Promise<T> {
    const { plugin } = served;
    return this.calls.run(plugin, { providerName: plugin.name, handler: `cleanup.${handler}` }, (broker) =>
      invoke(this.context(served, broker, signal)),
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
