/**
 * The plugin contract: every handler signature in one place (the cleanup part in
 * cleanup-types.ts, what every part is given in io-types.ts; both re-exported here). The router
 * (src/router/) is the only caller of these handlers; it gives each call a fresh event broker
 * (`ctx.events`). docs/plugin-api.md says when each handler runs.
 */
import type { TSchema } from 'typebox';
import type { CleanupHandlers, CleanupPrimitives } from './cleanup-types.js';
import type { EventBroker, PluginLog, RestoreRequest, RestoreResult } from './io-types.js';
import type { SourceLocation } from '../errors.js';
import type { CleanupPolicy } from '../cleanup/policy.js';
import type { EventType } from '../events/catalog.js';
import type {
  PluginEventPayload,
  PluginEventType,
  PluginEventTypeDefinition,
} from '../events/plugin-types.js';

export type { PluginEventPayload, PluginEventType, PluginEventTypeDefinition };
export * from './io-types.js';
export * from './cleanup-types.js';

export interface EnvironmentInfo {
  project: string;
  name: string;
  /**
   * The name of the environment's resource in its target — a bucket, a directory, a namespace
   * (`environments[].namespace`, default `<project>-<user>`). The same value as `namespace`.
   */
  resourceName: string;
  /** Kubernetes' word for `resourceName`. */
  namespace: string;
  cleanup?: CleanupPolicy;
  /** The project's variables with `--var` overrides applied (`${var.*}` in files a plugin templates). */
  variables: Record<string, unknown>;
}

export type ActionKind = 'Build' | 'Deploy' | 'Test' | 'Run';
export const actionKinds: readonly ActionKind[] = ['Build', 'Deploy', 'Test', 'Run'];

/** The handlers of each action kind (docs/design.md#execution). Typed tables keyed by these names catch a forgotten handler. */
export interface ActionHandlerNames {
  Build: 'getStatus' | 'build';
  Deploy: 'getStatus' | 'deploy' | 'delete';
  Test: 'getResult' | 'run';
  Run: 'getResult' | 'run';
}
export const actionHandlerNames: { [K in ActionKind]: readonly ActionHandlerNames[K][] } = {
  Build: ['getStatus', 'build'],
  Deploy: ['getStatus', 'deploy', 'delete'],
  Test: ['getResult', 'run'],
  Run: ['getResult', 'run'],
};

export type ProviderHandlerName =
  | 'init'
  | 'getEnvironmentStatus'
  | 'prepareEnvironment'
  | 'cleanupEnvironment'
  | 'resumeEnvironment'
  | 'restoreEnvironment';
export const providerHandlerNames: readonly ProviderHandlerName[] = [
  'init',
  'getEnvironmentStatus',
  'prepareEnvironment',
  'cleanupEnvironment',
];
/** Provider handlers a plugin may leave out. */
export const optionalProviderHandlerNames: readonly ProviderHandlerName[] = [
  'resumeEnvironment',
  'restoreEnvironment',
];

/**
 * Handlers a kind may have, beyond those it must: `Deploy.getLogs` (`tend logs`). A plugin
 * without them is valid; the command says the type has no logs.
 */
export interface OptionalActionHandlerNames {
  Build: never;
  Deploy: 'getLogs';
  Test: never;
  Run: never;
}
export const optionalActionHandlerNames: {
  [K in ActionKind]: readonly OptionalActionHandlerNames[K][];
} = { Build: [], Deploy: ['getLogs'], Test: [], Run: [] };

export type HandlerName =
  ProviderHandlerName | ActionHandlerNames[ActionKind] | OptionalActionHandlerNames[ActionKind];

/** What every handler receives. Built fresh by the router for each call. */
export interface PluginContext<ProviderConfig = unknown, ProviderState = unknown> {
  sessionId: string;
  projectRoot: string;
  /** The project's `.tend/` directory (state, logs, caches). */
  tendDir: string;
  environment: EnvironmentInfo;
  provider: { name: string; config: ProviderConfig; state: ProviderState };
  events: EventBroker;
  log: PluginLog;
  /** Aborted on Ctrl-C or timeout: handlers stop what they started and return. */
  signal: AbortSignal;
  /** The user running tend (from the OS), for ownership metadata. */
  user: string;
  hostId: string;
  /**
   * Resolves `${...}` expressions in a value the plugin read itself (a manifest file, say), in the
   * same context as tend.yml: project, environment, variables, `local.*`, plus the outputs of the
   * given dependencies as `actions.*`. Errors point at `location`.
   */
  resolveTemplates<T>(value: T, options: TemplateOptions): T;
  /**
   * The namespace-tracking Kubernetes client for this call (docs/plugin-api.md): every request
   * goes through the same gate as the kubernetes plugin's, so each namespace it touches is
   * reported (`namespaceStatus`) before the work, and only the app and system namespaces can be
   * touched. The plugin must declare `namespaceStatus` in `emits`.
   */
  kubernetes(options?: KubernetesClientOptions): Promise<TrackedKubernetesClient>;
  /**
   * The command line's `--kubeconfig` and `--context` (kubectl's global flags), when given: they
   * override KUBECONFIG and the kubernetes provider's `context:` for every call of the command.
   */
  cluster?: ClusterOverride;
}

/** Which kubeconfig file and context the command line asked for. */
export interface ClusterOverride {
  kubeconfig?: string;
  context?: string;
}

/** Which cluster and namespaces `ctx.kubernetes()` works with; each defaults to the provider entry's key of the same name. */
export interface KubernetesClientOptions {
  /** kubeconfig context (default: the provider's `context:`, else the current context). */
  context?: string;
  /** The app namespace (default: the provider's `namespace:`, else the environment's namespace). */
  namespace?: string;
  /** The shared system namespace (default: the provider's `systemNamespace:`, else `tend-system`). */
  systemNamespace?: string;
}

/** A Namespace as the tracked client reads it. */
export interface KubernetesNamespace {
  name: string;
  uid?: string;
  state: 'ready' | 'terminating' | 'missing';
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

/** Any Kubernetes object (a manifest, or what the API returned). */
export interface KubernetesObject {
  apiVersion?: string;
  kind?: string;
  metadata?: {
    name?: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    [key: string]: unknown;
  };
  [key: string]: unknown;
}

export interface KubernetesObjectRef {
  apiVersion: string;
  kind: string;
  name: string;
}

/** What `ctx.kubernetes()` gives a plugin: namespaces and objects, each request reported by namespace. */
export interface TrackedKubernetesClient {
  readonly appNamespace: string;
  readonly systemNamespace: string;
  /** The cluster's identity (uid of kube-system, or its server URL), as events carry it. */
  readonly clusterId: string;
  readonly namespaces: {
    /** Read-only: reports the namespace as it is (`ready`, `terminating`, `missing`). */
    observe(name: string): Promise<KubernetesNamespace | undefined>;
    /** Creates the namespace (labelled as tend's) or adopts an existing one; reports it. */
    ensure(name: string): Promise<{ info: KubernetesNamespace; created: boolean; adopted: boolean }>;
    /** Deletes the namespace only if tend created it for this project; reports what happened. */
    deleteOwned(name: string): Promise<{ deleted: boolean; message: string }>;
  };
  readonly objects: {
    /** Server-side apply (field manager `tend`) into the namespace. */
    apply(namespace: string, object: KubernetesObject): Promise<KubernetesObject>;
    read(namespace: string, ref: KubernetesObjectRef): Promise<KubernetesObject | undefined>;
    /** True when the object existed. */
    delete(namespace: string, ref: KubernetesObjectRef): Promise<boolean>;
  };
}

export interface TemplateOptions {
  /** Where the value comes from, for errors (file relative to the project root). */
  location: SourceLocation;
  /** `actions.<kind>.<name>.outputs.*`: usually the action's `dependencyOutputs`. */
  dependencyOutputs?: Record<string, Outputs>;
  /** `actions.<kind>.<name>.version`: usually the action's `dependencyVersions`. */
  dependencyVersions?: Record<string, string>;
  /** The action whose file this is: its own variables (and a ConfigTemplate's inputs) are seen too. */
  actionRef?: string;
  /**
   * The value is a file's whole text (a manifest template), resolved as Garden resolves such files:
   * before the plugin parses it, each value written where its expression stands. Problems name the
   * line and the object (`Deployment api`) they are in, and end with `hint`. `legacy`: the file is
   * listed under Garden's older key (a kubernetes Deploy's `files`), which Garden 0.13 resolves
   * leniently in an apiVersion garden.io/v0 or v1 project: an expression naming a key that is not
   * there is kept as written.
   */
  fileText?: { hint: string; legacy?: boolean };
}

/** The files an action's handlers resolve as text (`fileText` of `ctx.resolveTemplates`), for `tend validate`. */
export interface TemplateFiles {
  files: string[];
  /** As `fileText.hint`: how to have a file read as written. */
  hint: string;
  /** Those of `files` resolved with `fileText.legacy`. */
  legacy?: string[];
}

/** An action as its handlers see it: configuration resolved, version computed. */
export interface ResolvedAction<Spec = unknown> {
  ref: string;
  kind: ActionKind;
  type: string;
  name: string;
  version: string;
  /** Absolute source directory. */
  sourceDir: string;
  include?: string[];
  exclude?: string[];
  /** Files of the source (relative to sourceDir) after include/exclude, sorted. */
  files: string[];
  spec: Spec;
  /** Outputs of the action's dependencies, by reference (`build.api`). */
  dependencyOutputs: Record<string, Record<string, string>>;
  /** Versions of the action's dependencies, by reference (`build.api`: `v-…`). */
  dependencyVersions: Record<string, string>;
  timeoutMs?: number;
}

export type Outputs = Record<string, string>;

export interface StatusResult {
  /**
   * `ready`: done for this version; `not-ready`: needs work; `unknown`: could not tell (treated
   * as not ready); `paused`: deployed for this version, but paused by cleanup (workloads scaled to
   * 0, processes stopped) until the next `tend deploy|test|run` or `tend resume`.
   */
  state: 'ready' | 'not-ready' | 'unknown' | 'paused';
  outputs?: Outputs;
  /** When not ready (or paused): why, in a sentence for people (`tend status` prints it). */
  reason?: string;
  /** Where the action's log is (an absolute path), when it has one (`tend status` prints it). */
  logFile?: string;
  detail?: Record<string, unknown>;
}

export interface ExecuteResult {
  outputs: Outputs;
  detail?: Record<string, unknown>;
}

export interface RunResult extends ExecuteResult {
  exitCode: number;
  durationMs: number;
  /** Last lines of output, for the summary of a failure. */
  log?: string;
}

export interface ActionHandlerParams<Spec = unknown> {
  action: ResolvedAction<Spec>;
  force: boolean;
}

/** One line of what a deployed service printed, as `Deploy.getLogs` delivers it. */
export interface LogLine {
  /** Where it comes from, for people: `pod/web-7d4b9-x2x1q/main`, `process 4242`. */
  source: string;
  /** When the source tells them apart (a pod's log does not). */
  stream?: 'stdout' | 'stderr';
  text: string;
  /** RFC 3339, when the source records it. */
  time?: string;
}

/** What `Deploy.getLogs` is asked for. */
export interface LogsParams<Spec = unknown> {
  action: ResolvedAction<Spec>;
  /** Keep delivering new lines until `ctx.signal` aborts (Ctrl-C) or every source has ended. */
  follow: boolean;
  /** Only the last N lines of each source (default: all it has). */
  tail?: number;
  /** Called for each line, in order per source. */
  onLine(line: LogLine): void;
}

export interface ActionHandlers<Spec = unknown> {
  Build: {
    getStatus(ctx: PluginContext, params: ActionHandlerParams<Spec>): Promise<StatusResult>;
    build(ctx: PluginContext, params: ActionHandlerParams<Spec>): Promise<ExecuteResult>;
  };
  Deploy: {
    getStatus(ctx: PluginContext, params: ActionHandlerParams<Spec>): Promise<StatusResult>;
    deploy(ctx: PluginContext, params: ActionHandlerParams<Spec>): Promise<ExecuteResult>;
    delete(ctx: PluginContext, params: ActionHandlerParams<Spec>): Promise<StatusResult>;
    /**
     * Optional, read-only (creates nothing): what the deployed service printed — a process's
     * log file, the logs of a workload's pods. Resolves when done (with `follow`: on abort, or
     * when every source has ended); a deploy that is not deployed throws `TEND_LOGS_UNAVAILABLE`.
     */
    getLogs?(ctx: PluginContext, params: LogsParams<Spec>): Promise<void>;
  };
  Test: {
    getResult(ctx: PluginContext, params: ActionHandlerParams<Spec>): Promise<StatusResult>;
    run(ctx: PluginContext, params: ActionHandlerParams<Spec>): Promise<RunResult>;
  };
  Run: {
    getResult(ctx: PluginContext, params: ActionHandlerParams<Spec>): Promise<StatusResult>;
    run(ctx: PluginContext, params: ActionHandlerParams<Spec>): Promise<RunResult>;
  };
}

export interface EnvironmentStatus {
  ready: boolean;
  detail?: Record<string, unknown>;
  /**
   * `prepareEnvironment` only: the provider's outputs for this command, which action templates
   * read as `${providers.<name>.outputs.*}` (the exec provider's `initScript.log`).
   */
  outputs?: Record<string, unknown>;
}

export interface ProviderHandlers<Config = unknown, State = unknown> {
  /** Connects and computes provider state (e.g. the cluster identity). Must not create anything. */
  init(ctx: PluginContext<Config, undefined>): Promise<State>;
  /** Read-only: never creates a namespace. */
  getEnvironmentStatus(ctx: PluginContext<Config, State>): Promise<EnvironmentStatus>;
  /** Ensures the environment exists (creates or adopts the namespace). */
  prepareEnvironment(ctx: PluginContext<Config, State>): Promise<EnvironmentStatus>;
  /** Removes what tend owns in the environment. */
  cleanupEnvironment(ctx: PluginContext<Config, State>): Promise<{ deleted: boolean; message: string }>;
  /**
   * Optional: restores exactly what a pause recorded (docs/cleanup.md#pause-and-resume), called at
   * the start of `tend deploy|test|run` and by `tend resume`. Nothing paused: `resumed: false`.
   */
  resumeEnvironment?(ctx: PluginContext<Config, State>): Promise<ResumeResult>;
  /**
   * Optional: re-creates the environment from the archive an executor took before deleting it
   * (`tend restore`, docs/cleanup.md#undo), into the environment's namespace, which must not
   * exist. Says what it could not restore and why; throws only when nothing could be.
   */
  restoreEnvironment?(ctx: PluginContext<Config, State>, request: RestoreRequest): Promise<RestoreResult>;
}

export interface ResumeResult {
  resumed: boolean;
  /** For people: what was restored ("Deployment api 0 → 3, CronJob report not suspended"). */
  message: string;
}

/** What `versionInputs` is given: the action as its version sees it. */
export interface VersionInputsParams<Spec = unknown> {
  /** Absolute source directory. */
  sourceDir: string;
  projectRoot: string;
  /** The spec with every template expression resolved except dependency outputs (they stay as written). */
  spec: Spec;
}

/** What `checkAction` is given: the action as `versionInputs` sees it, and where it would go. */
export interface CheckActionParams<Spec = unknown> extends VersionInputsParams<Spec> {
  /** The plugin's provider configuration in the environment, resolved (`{}` without an entry). */
  providerConfig: Record<string, unknown>;
  environment: { name: string; namespace: string };
}

/** What `checkEnvironment` is given: the provider's configuration and the environment it would serve. */
export interface CheckEnvironmentParams {
  /** The plugin's provider configuration in the environment, resolved (`{}` without an entry). */
  providerConfig: Record<string, unknown>;
  environment: { name: string; namespace: string };
}

/**
 * What the provider's `init` will refuse for the environment, where it is: `configPath` (inside
 * the provider's entry), else the environment's namespace (its `defaultNamespace`).
 */
export interface EnvironmentProblem {
  message: string;
  configPath?: (string | number)[];
}

/**
 * What `tend validate` warns of in what an action's handlers would read (they will refuse it),
 * where it is: `specPath` (inside the action's `spec`), or `file` (absolute) with its line and column.
 */
export interface ActionWarning {
  message: string;
  specPath?: (string | number)[];
  file?: string;
  line?: number;
  column?: number;
}

/** What an action's version covers beyond its configuration and source files. */
export interface ActionVersionInputs {
  /** Absolute paths of files the handlers read: hashed like source files (template expressions in them too). */
  files?: string[];
  /** Content the handlers use that no file holds as it is (a kustomization rendered): hashed as it is. */
  text?: string;
}

/** One kind of an action type: its spec schema, handlers, and what its version covers beyond the sources. */
export interface ActionKindDefinition<K extends ActionKind> {
  specSchema: TSchema;
  handlers: ActionHandlers[K];
  /**
   * Optional: JSON Schema of the `outputs` its handlers return (`getStatus`/`getResult` when they
   * give outputs, `build`, `deploy`, `run`). The router checks every result against it and fails
   * the call with an error naming the plugin, the handler and the field.
   */
  outputsSchema?: TSchema;
  /**
   * Optional, for handlers that read more than the action's source files (after include/exclude):
   * files elsewhere, or what another program renders. Called whenever versions are computed (in
   * every command that runs or shows the action, before anything runs); reads, never changes
   * anything, never touches a cluster. A rejection does not stop the command: its message enters
   * the version, and the handler, which meets the same problem, reports it.
   */
  versionInputs?(params: VersionInputsParams): Promise<ActionVersionInputs>;
  /**
   * Optional, for handlers that resolve files as text (`fileText` of `ctx.resolveTemplates`): which
   * files, so that `tend validate` checks them before anything runs. Reads, never changes anything.
   */
  templateFiles?(params: VersionInputsParams): Promise<TemplateFiles>;
  /**
   * Optional: what `tend validate` warns of before anything runs, beyond the spec's schema: what
   * the handlers will refuse (a manifest written for another namespace, say). Reads, never changes
   * anything, never touches a cluster; a rejection is left to the handler, which meets the same
   * problem when it runs.
   */
  checkAction?(params: CheckActionParams): Promise<ActionWarning[]>;
}

/** One action type of a plugin, with a spec schema and handlers for each kind it supports. */
export interface ActionTypeDefinition {
  name: string;
  description: string;
  kinds: { [K in ActionKind]?: ActionKindDefinition<K> };
}

export interface PluginDefinition<Config = unknown, State = unknown, Settings = unknown> {
  name: string;
  description: string;
  /** Schema of the provider entry in tend.yml, beyond `name` and `environments`. */
  configSchema: TSchema;
  /**
   * Event types this plugin emits: the catalogue's it uses, and may list its own (`eventTypes`,
   * which it may emit without listing them); anything else is rejected by its broker.
   */
  emits: readonly (EventType | PluginEventType)[];
  /**
   * The plugin's own event types, `<plugin>.<name>` (docs/plugin-api.md#event-types): each with
   * a JSON Schema of its payload, whether it is streamed to the server, and its dedupe key.
   */
  eventTypes?: readonly PluginEventTypeDefinition[];
  provider: ProviderHandlers<Config, State>;
  /**
   * Optional: what `tend validate` refuses before anything runs, because the provider's `init`
   * would refuse it in every command: the environment's namespace is a Kubernetes system
   * namespace, say. Reads, never changes anything, never touches a cluster; a rejection is left
   * to `init`, which meets the same problem when a command runs.
   */
  checkEnvironment?(params: CheckEnvironmentParams): Promise<EnvironmentProblem[]>;
  actionTypes: readonly ActionTypeDefinition[];
  /**
   * How executors clean what this plugin records: its primitives (a loaded plugin has the
   * framework's checks around them); plugins without it are never cleaned automatically.
   */
  cleanup?: CleanupPrimitives<Settings>;
}

/** A plugin as tend runs it: its cleanup primitives with the framework's checks around them. */
export type LoadedPlugin = PluginDefinition & { cleanup?: CleanupHandlers };
