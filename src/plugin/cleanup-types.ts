/**
 * The cleanup part of the plugin contract: the primitives a plugin supplies, and the framework's
 * checks around them (cleanup-checks.ts). types.ts re-exports it; docs/plugin-api.md#cleanup.
 */
import type { TSchema } from 'typebox';
import type { EnvironmentArchive } from '../cleanup/archive.js';
import type { CleanupJob, CleanupOutcome, CleanupResource } from '../cleanup/protocol.js';
import type { EventBroker, PluginLog, RestoreRequest, RestoreResult } from './io-types.js';

/**
 * The executor's command-line flags (`tend agent`, `tend server`) a plugin may read to decide
 * whether and what it serves (`settingsFromFlags`); anything else it takes from `--set`.
 */
export interface ExecutorFlags {
  /** `--kubeconfig`: the kubeconfig file of the clusters to serve. */
  kubeconfig?: string;
  /** `--context` (repeatable). */
  contexts: readonly string[];
  /** `tend agent --local`: the local environments of this host. */
  local: boolean;
  /** Serve the kubeconfig's current context when no `--kubeconfig`/`--context` is given (`tend agent` without `--local` or `--set`). */
  clustersByDefault: boolean;
}

/**
 * One place an executor cleans: a cluster (`kubernetes/<clusterId>`) or the local environments of a
 * host (`local/<hostId>`). `state` is the plugin's own (a connection, the context name); the
 * executor hands the target back to the plugin's handlers unchanged.
 */
export interface CleanupTarget {
  targetKey: string;
  pluginName: string;
  /** For people: `context kind-dev (https://127.0.0.1:6443)`, `local environments of host-1`. */
  description: string;
  state?: unknown;
}

/** A target's inventory: every environment there that carries tend's label, and whether the list is whole. */
export interface CleanupInventory {
  /** True only if every page of the list arrived; a partial list never proves anything idle. */
  complete: boolean;
  /** Why the list is not complete: the failed call, a truncated list, an expired continue token. */
  error?: string;
  items: CleanupResource[];
  /**
   * The target's own clock when the list was taken, if it has one (Kubernetes: the API server's
   * `Date`). The server compares its clock with it and plans nothing on a target whose clock
   * disagrees; left out, the inventory attests no time (the server's other clock checks stand).
   */
  observedAt?: string;
}

/** The queue's job as the framework's checks read it (the wire's words). */
export type QueuedCleanupJob = Pick<
  CleanupJob,
  | 'id'
  | 'action'
  | 'project'
  | 'environment'
  | 'namespaceName'
  | 'namespaceUid'
  | 'ownership'
  | 'expectedLastActivityAt'
  | 'target'
  | 'dryRun'
  | 'archive'
>;

/**
 * The job as a plugin's `restore` sees it: the environment's resource by its name in the target
 * (`resourceName`) and the identity it was recorded with (`resourceUid`).
 */
export interface CleanupJobSpec {
  id: string;
  action: CleanupJob['action'];
  project: string;
  environment: string;
  resourceName: string;
  resourceUid?: string;
  target: CleanupJob['target'];
  dryRun: boolean;
}

/** `done`: the action happened (or the resource was already gone); `cancelled`: a check refused it; `failed`: retry later. */
export interface CleanupResult {
  outcome: CleanupOutcome;
  message: string;
}

/** What each cleanup handler call receives (built by the router, like a handler's PluginContext). */
export interface CleanupCallContext<Settings = unknown> {
  /**
   * The plugin's executor settings: what its `settingsFromFlags` made of the executor's flags,
   * with `--set <plugin>.<key>=<value>` on top, checked against its `settingsSchema`. At an
   * executor this is the provider's configuration.
   */
  provider: { name: string; config: Settings };
  /**
   * Never cleaned, whatever a job says (beyond `kube-*` and `default`): the tend system name
   * (`tend-system`) and the executor's protection globs (`--protect-namespace`). The framework
   * checks them before any primitive is called.
   */
  protection: { systemName: string; patterns: readonly string[] };
  /** Validated like any plugin event; the executor records them. */
  events: EventBroker;
  log: PluginLog;
  signal: AbortSignal;
  user: string;
  hostId: string;
  /**
   * The framework's checked cleanup only (never the primitives): asks the server, right before
   * the irreversible step (after the fresh read and every check), whether the job still stands —
   * a session started or activity recorded since the executor's `start` wins. Returns why to
   * stop (report `cancelled`), or undefined.
   */
  confirm?: () => Promise<string | undefined>;
  /**
   * The framework's checked cleanup only, for a job whose `archive` is not `none`: stores the
   * environment's archive with the server, right before the deletion (after every check and
   * `confirm`). It throws when the server did not store it: then nothing is deleted (the job
   * fails and is retried).
   */
  archive?: (archive: EnvironmentArchive) => Promise<void>;
}

/**
 * One resource as the plugin lists and reads it: its name in the target, identity, version,
 * marks, activity and creation time, in tend's terms (docs/plugin-api.md#inventory-items).
 */
export type { CleanupResource };

/**
 * Which resource a job names: its name in the target, the recorded target's `path` when it has
 * one, and the project and environment it was recorded for (to name them in events it reports).
 */
export interface CleanupResourceRef {
  name: string;
  path?: string;
  project: string;
  environment: string;
}

/**
 * What an acting primitive is given with the resource: the identity and version the framework
 * checked. The plugin acts only if the resource still has both (Kubernetes: DELETE
 * `preconditions`), and otherwise answers `changed`.
 */
export interface CleanupPrecondition {
  uid: string;
  version: string;
}

/**
 * An acting primitive's answer: `done` (it acted), `gone` (there was nothing to act on),
 * `changed` (the precondition failed: nothing was done). Throwing fails the job (retried later).
 */
export interface CleanupActionResult {
  outcome: 'done' | 'gone' | 'changed';
  message: string;
}

/**
 * The cleanup part a plugin supplies: primitives only. The framework decides and checks — the
 * target, the name, protection, the ownership proof, project and environment, identity, adoption,
 * activity since the plan, dry-run, the server's confirmation, the archive — and only then calls
 * an acting primitive (docs/plugin-api.md#cleanup). No primitive needs to check anything of that.
 */
export interface CleanupPrimitives<Settings = unknown> {
  /**
   * The kind of its targets: `kubernetes`, `local`, or the plugin's own (`targetKind` of the
   * `{kind: 'plugin'}` targets its status events carry). The first part of their keys.
   */
  targetKind: string;
  /** What the executor's settings for this plugin may hold (`--set <plugin>.<key>=<value>`). */
  settingsSchema: TSchema;
  /** The settings the executor's flags imply; undefined: not served unless `--set` gives some. */
  settingsFromFlags?(flags: ExecutorFlags): Settings | undefined;
  /**
   * How messages name its resources and the places that hold them (default: `resource`,
   * `target`): `{resource: 'namespace', target: 'cluster'}`.
   */
  words?: { resource: string; target: string };
  /** The targets this executor serves for the plugin, from its settings. Connects; creates nothing. */
  targets(ctx: CleanupCallContext<Settings>): Promise<CleanupTarget[]>;
  /** Every environment of the target marked as tend's (paged); `complete` only if every page arrived. */
  inventory(ctx: CleanupCallContext<Settings>, target: CleanupTarget): Promise<CleanupInventory>;
  /** One resource as it is now (a fresh read, no cache), or undefined when there is none of that name. */
  read(
    ctx: CleanupCallContext<Settings>,
    target: CleanupTarget,
    ref: CleanupResourceRef,
  ): Promise<CleanupResource | undefined>;
  /** Deletes the resource, if it still has the precondition's uid and version; reports it `missing`/`deleted`. */
  delete(
    ctx: CleanupCallContext<Settings>,
    target: CleanupTarget,
    resource: CleanupResource,
    precondition: CleanupPrecondition,
  ): Promise<CleanupActionResult>;
  /** Optional: stops what tend started there and records how to restore it (a `pause` job). */
  pause?(
    ctx: CleanupCallContext<Settings>,
    target: CleanupTarget,
    resource: CleanupResource,
    precondition: CleanupPrecondition,
  ): Promise<CleanupActionResult>;
  /** Optional: restores exactly what `pause` stopped (a `resume` job). */
  resume?(
    ctx: CleanupCallContext<Settings>,
    target: CleanupTarget,
    resource: CleanupResource,
    precondition: CleanupPrecondition,
  ): Promise<CleanupActionResult>;
  /**
   * Optional, read-only: what the action would change, for a dry run's message
   * (`Deployment api 3 → 0`); called only in a dry run, after every check.
   */
  preview?(
    ctx: CleanupCallContext<Settings>,
    target: CleanupTarget,
    resource: CleanupResource,
    action: 'delete' | 'pause' | 'resume',
  ): Promise<string | undefined>;
  /**
   * Optional, read-only: the environment's archive, for a deletion whose job asks for one (the
   * framework sends it to the server before the deletion). Without it, such a job fails.
   */
  archive?(
    ctx: CleanupCallContext<Settings>,
    target: CleanupTarget,
    resource: CleanupResource,
    o: { withSecrets: boolean },
  ): Promise<EnvironmentArchive>;
  /**
   * Optional: a `restore` job (the dashboard's Restore button) — re-creates the environment from
   * its archive into `job.resourceName`, which must not exist, through the same gate as
   * `restoreEnvironment`, reporting the resource it creates on `ctx.events` (the executor's
   * restore session records it). Throws TEND_ARCHIVE for a refusal (the resource exists again).
   */
  restore?(
    ctx: CleanupCallContext<Settings>,
    target: CleanupTarget,
    job: CleanupJobSpec,
    request: RestoreRequest,
  ): Promise<RestoreResult>;
}

/**
 * The cleanup part as a loaded plugin has it: its primitives, and `verifyAndClean` — the
 * framework's every check around them (plugin/cleanup-checks.ts), never the plugin's own.
 */
export interface CleanupHandlers<Settings = unknown> extends CleanupPrimitives<Settings> {
  verifyAndClean(
    ctx: CleanupCallContext<Settings>,
    target: CleanupTarget,
    job: QueuedCleanupJob,
  ): Promise<CleanupResult>;
}

/** The primitives every cleanup part has. */
export const cleanupHandlerNames: readonly ('targets' | 'inventory' | 'read' | 'delete')[] = [
  'targets',
  'inventory',
  'read',
  'delete',
];

/** The primitives a cleanup part may have. */
export const optionalCleanupHandlerNames: readonly (
  'pause' | 'resume' | 'preview' | 'archive' | 'restore' | 'settingsFromFlags'
)[] = ['pause', 'resume', 'preview', 'archive', 'restore', 'settingsFromFlags'];
