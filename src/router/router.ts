/**
 * The router: the one place where plugin handlers are called. For every call — provider init,
 * environment status/prepare/cleanup, every action handler — it creates a fresh event broker
 * (which emits straight on the session bus), builds the context (with the namespace-tracking
 * Kubernetes client, `ctx.kubernetes()`), tracks the call as in flight, and closes the broker when
 * the call ends, whatever the outcome.
 */
import type { TSchema } from 'typebox';
import { TendError } from '../errors.js';
import { schemaCheck, schemaProblems } from '../schema-check.js';
import type { SessionBus } from '../events/bus.js';
import type { PluginEventBroker } from './broker.js';
import { HandlerCalls, pluginLog } from './calls.js';
import { actionOutputsContext, resolveTemplates, type TemplateContext } from '../config/template.js';
import { resolveTemplateText } from '../config/template-text.js';
import type {
  ActionHandlerNames,
  ClusterOverride,
  ActionKind,
  ExecuteResult,
  EnvironmentInfo,
  LogsParams,
  PluginContext,
  PluginDefinition,
  ProviderHandlers,
  ResolvedAction,
  RunResult,
  StatusResult,
  TemplateOptions,
} from '../plugin/types.js';

/** A configured provider: the plugin, its resolved config, and the state its `init` returned. */
export interface ProviderRuntime {
  name: string;
  plugin: PluginDefinition;
  config: Record<string, unknown>;
  state?: unknown;
}

export interface RouterOptions {
  bus: SessionBus;
  providers: ProviderRuntime[];
  environment: EnvironmentInfo;
  /** The environment's template context (config/environment.ts), for `ctx.resolveTemplates`. */
  templateContext: TemplateContext;
  /** An action's own template context (its variables, a ConfigTemplate's inputs), by reference. */
  actionTemplateContext?: (ref: string) => TemplateContext | undefined;
  projectRoot: string;
  tendDir: string;
  user: string;
  hostId: string;
  /** The command line's `--kubeconfig` / `--context`, handed to every call. */
  cluster?: ClusterOverride;
  signal: AbortSignal;
}

type ProviderCallName = Exclude<keyof ProviderHandlers, 'init'>;
type ProviderResults = { [H in ProviderCallName]: Awaited<ReturnType<NonNullable<ProviderHandlers[H]>>> };
/** What a provider handler takes after its context (`restoreEnvironment`'s request). */
type ProviderArgs = {
  [H in ProviderCallName]: NonNullable<ProviderHandlers[H]> extends (ctx: never, ...rest: infer R) => unknown
    ? R
    : never;
};

/** What each action handler returns. */
export interface ActionResults {
  getStatus: StatusResult;
  getResult: StatusResult;
  build: ExecuteResult;
  deploy: ExecuteResult;
  delete: StatusResult;
  run: RunResult;
}

export class Router {
  private readonly calls: HandlerCalls;
  private readonly byActionType = new Map<string, ProviderRuntime>();

  constructor(private readonly options: RouterOptions) {
    this.calls = new HandlerCalls(options.bus);
    for (const provider of options.providers) {
      for (const type of provider.plugin.actionTypes) this.byActionType.set(type.name, provider);
    }
  }

  get providers(): readonly ProviderRuntime[] {
    return this.options.providers;
  }

  /** `(plugin) handler actionRef` for each call still running, for timeouts and exits with work pending. */
  describeInFlight(): string[] {
    return this.calls.describeInFlight();
  }

  providerForActionType(type: string): ProviderRuntime {
    const provider = this.byActionType.get(type);
    if (!provider) {
      throw new TendError(
        'TEND_PROVIDER_NOT_FOUND',
        `no provider configured for action type "${type}" in environment "${this.options.environment.name}"`,
        { detail: { hint: "add the plugin that provides this type under the Project's `providers:`" } },
      );
    }
    return provider;
  }

  /** Initialises every provider, in order: the first step of every command that uses them. */
  async initProviders(): Promise<void> {
    for (const provider of this.options.providers) await this.initProvider(provider);
  }

  private async initProvider(provider: ProviderRuntime): Promise<void> {
    provider.state = await this.call(provider, 'init', undefined, (ctx) =>
      provider.plugin.provider.init(ctx as PluginContext<unknown, undefined>),
    );
  }

  async callProvider<H extends ProviderCallName>(
    provider: ProviderRuntime,
    handler: H,
    ...args: ProviderArgs[H]
  ): Promise<ProviderResults[H]> {
    const fn = provider.plugin.provider[handler] as
      ((ctx: PluginContext, ...rest: ProviderArgs[H]) => Promise<ProviderResults[H]>) | undefined;
    if (typeof fn !== 'function') {
      throw new TendError(
        'TEND_HANDLER_MISSING',
        `plugin "${provider.plugin.name}" has no provider handler "${handler}"`,
        { plugin: provider.plugin.name, handler },
      );
    }
    return this.call(provider, handler, undefined, (ctx) => fn.call(provider.plugin.provider, ctx, ...args));
  }

  async callAction<H extends ActionHandlerNames[ActionKind]>(
    action: ResolvedAction,
    handler: H,
    params: { force: boolean },
  ): Promise<ActionResults[H]> {
    const kind = action.kind;
    const provider = this.providerForActionType(action.type);
    const definition = provider.plugin.actionTypes.find((t) => t.name === action.type)?.kinds[kind];
    const fn = (definition?.handlers as Record<string, unknown> | undefined)?.[handler];
    if (typeof fn !== 'function') {
      throw new TendError(
        'TEND_HANDLER_MISSING',
        `plugin "${provider.plugin.name}" has no ${kind} handler "${String(handler)}" for type "${action.type}"`,
        { plugin: provider.plugin.name, handler: String(handler), actionRef: action.ref },
      );
    }
    const result = await this.call(provider, String(handler), action.ref, (ctx) =>
      (fn as (ctx: PluginContext, p: unknown) => Promise<ActionResults[H]>).call(definition!.handlers, ctx, {
        action,
        force: params.force,
      }),
    );
    if (definition?.outputsSchema)
      checkOutputs(provider.plugin.name, action, String(handler), definition.outputsSchema, result);
    return result;
  }

  /**
   * `Deploy.getLogs` of the action's type: what the deployed service printed, line by line. A type
   * without it is refused with `TEND_LOGS_UNSUPPORTED`.
   */
  async actionLogs(action: ResolvedAction, params: Omit<LogsParams, 'action'>): Promise<void> {
    const provider = this.providerForActionType(action.type);
    const handlers = provider.plugin.actionTypes.find((t) => t.name === action.type)?.kinds.Deploy?.handlers;
    const getLogs = action.kind === 'Deploy' ? handlers?.getLogs : undefined;
    if (!handlers || !getLogs) {
      throw new TendError(
        'TEND_LOGS_UNSUPPORTED',
        `${action.ref}: deploys of type "${action.type}" (plugin ${provider.plugin.name}) keep no log tend can read`,
        {
          actionRef: action.ref,
          detail: { hint: `tend events --action ${action.ref} shows what it printed when it ran` },
        },
      );
    }
    await this.call(provider, 'getLogs', action.ref, (ctx) =>
      getLogs.call(handlers, ctx, { ...params, action }),
    );
  }

  private call<T>(
    provider: ProviderRuntime,
    handler: string,
    actionRef: string | undefined,
    invoke: (ctx: PluginContext) => Promise<T>,
  ): Promise<T> {
    return this.calls.run(
      provider.plugin,
      {
        providerName: provider.name,
        handler,
        ...(actionRef !== undefined ? { actionRef } : {}),
        project: this.options.environment.project,
        environment: this.options.environment.name,
      },
      (broker) => invoke(this.context(provider, broker)),
    );
  }

  /** What a plugin's templates see: the action's own context (else the environment's), with its dependencies' outputs. */
  private templateContextOf(
    actionRef: string | undefined,
    dependencyOutputs: Record<string, Record<string, string>> | undefined,
    dependencyVersions: Record<string, string> | undefined,
  ): TemplateContext {
    const o = this.options;
    return {
      ...((actionRef !== undefined && o.actionTemplateContext?.(actionRef)) || o.templateContext),
      actions: actionOutputsContext(dependencyOutputs ?? {}, dependencyVersions),
    };
  }

  private context(provider: ProviderRuntime, broker: PluginEventBroker): PluginContext {
    const o = this.options;
    const ctx: PluginContext = {
      sessionId: o.bus.sessionId,
      projectRoot: o.projectRoot,
      tendDir: o.tendDir,
      environment: o.environment,
      provider: { name: provider.name, config: provider.config, state: provider.state },
      events: broker,
      log: pluginLog(broker),
      signal: o.signal,
      user: o.user,
      hostId: o.hostId,
      ...(o.cluster ? { cluster: o.cluster } : {}),
      resolveTemplates: <T>(value: T, options: TemplateOptions): T => {
        const context = this.templateContextOf(
          options.actionRef,
          options.dependencyOutputs,
          options.dependencyVersions,
        );
        if (options.fileText && typeof value === 'string') {
          const { file } = options.location;
          const { hint, legacy } = options.fileText;
          return resolveTemplateText(value, context, { file, hint, ...(legacy ? { legacy } : {}) }) as T;
        }
        return resolveTemplates(value, context, () => options.location);
      },
      // The same namespace-tracking client the kubernetes plugin uses, for every plugin; loaded
      // only when called, so plugins that never talk to a cluster never load the Kubernetes client.
      kubernetes: async (options) =>
        (await import('../plugins/kubernetes/client/tracked.js')).trackedKubernetesClient(
          ctx,
          provider.plugin.emits,
          options,
        ),
    };
    return ctx;
  }
}

/** A result's outputs against the kind's declared schema, as events are checked against theirs. */
function checkOutputs(
  plugin: string,
  action: ResolvedAction,
  handler: string,
  schema: TSchema,
  result: unknown,
): void {
  const outputs = (result as { outputs?: unknown } | undefined)?.outputs;
  if (outputs === undefined && (handler === 'getStatus' || handler === 'getResult' || handler === 'delete'))
    return;
  const check = schemaCheck(schema);
  if (check.Check(outputs)) return;
  const first = schemaProblems(check.Errors(outputs))[0];
  throw new TendError(
    'TEND_PLUGIN_INVALID',
    `plugin "${plugin}": ${action.kind} handler "${handler}" of type "${action.type}" returned outputs that do not match its outputsSchema: ` +
      `/outputs${first?.path ?? ''}: ${first?.message ?? 'invalid'}`,
    { plugin, handler, actionRef: action.ref },
  );
}
