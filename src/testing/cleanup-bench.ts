/**
 * What the cleanup conformance kit (cleanup-conformance.ts) runs a plugin on: its environments
 * created by its own `provider.prepareEnvironment` in real tend sessions (what they are is learnt
 * from the session's status events, as the server learns it), and its cleanup primitives called as
 * an executor calls them — the router's per-call broker and error handling, the executor's
 * settings, the framework's `verifyAndClean` and restore checks — with every primitive call counted.
 */
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { executorTargetKeyOfRecorded } from '../cleanup/targets.js';
import { openProject, startSession } from '../commands/context.js';
import { SessionBus } from '../events/bus.js';
import type { NamespaceStatusPayload } from '../events/catalog.js';
import { statusReportOf } from '../events/resource-status.js';
import { servedPlugins } from '../executor/settings.js';
import {
  cleanupHandlerNames,
  optionalCleanupHandlerNames,
  type CleanupActionResult,
  type CleanupCallContext,
  type CleanupInventory,
  type CleanupPrecondition,
  type CleanupPrimitives,
  type CleanupResource,
  type CleanupResourceRef,
  type CleanupResult,
  type CleanupTarget,
  type ExecutorFlags,
  type PluginDefinition,
  type QueuedCleanupJob,
  type RestoreRequest,
  type RestoreResult,
} from '../plugin/types.js';
import { HandlerCalls, pluginLog } from '../router/calls.js';
import { CleanupRouter, type ServedPlugin } from '../router/cleanup.js';

/** An environment's resource as the plugin's status events recorded it. */
export interface RecordedResource {
  project: string;
  /** The environment's name in the project. */
  environment: string;
  /** The resource's name in its target. */
  name: string;
  uid: string;
  /** The target as the events carry it (what a job's `target` is). */
  target: Record<string, unknown>;
}

/** Where the environments come from: the project, its provider under test, its `--var` values. */
export interface ProjectUnderTest {
  root: string;
  plugin: string;
  vars?: string[];
  /** Changes a resource between a read and an action (a new version); default: its environment used again. */
  changeResource?: (resource: RecordedResource) => Promise<void>;
}

/** The acting primitives: a call of any of them changes (or could change) the target. */
export const actingPrimitives = ['delete', 'pause', 'resume', 'archive', 'restore'] as const;

type PrimitiveName = (typeof cleanupHandlerNames)[number] | (typeof optionalCleanupHandlerNames)[number];

/**
 * `provider.prepareEnvironment` of the environment in a session of its own, and the resource its
 * status events reported ready with a uid for that project and environment (the last such event).
 */
export async function prepareEnvironment(
  project: ProjectUnderTest,
  environment: string,
): Promise<RecordedResource> {
  const opened = await openProject({ root: project.root, env: environment, var: project.vars });
  const { session, router, close } = startSession(opened, 'cleanup-conformance', ['prepareEnvironment'], {
    cleanupWarning: false,
  });
  const reported: NamespaceStatusPayload[] = [];
  const off = session.bus.on('*', (event) => {
    const payload = statusReportOf(event)?.payload;
    if (payload?.pluginName === project.plugin) reported.push(payload);
  });
  let error: unknown;
  try {
    const provider = router.providers.find((p) => p.name === project.plugin);
    if (!provider) {
      throw new Error(
        `the project ${project.root} has no provider "${project.plugin}" for environment ${environment}`,
      );
    }
    await router.initProviders();
    await router.callProvider(provider, 'prepareEnvironment');
  } catch (thrown) {
    error = thrown;
  } finally {
    off();
    await close(error === undefined ? {} : { error });
  }
  if (error !== undefined) throw error;
  const ready = reported.filter(
    (p) =>
      p.state === 'ready' &&
      p.namespaceUid !== undefined &&
      p.project === opened.project.name &&
      p.environment === opened.environment.name,
  );
  const last = ready.at(-1);
  if (!last?.namespaceUid) {
    throw new Error(
      `provider.prepareEnvironment of ${project.plugin} (environment ${environment}) reported no ready resource with a uid in a status event (namespaceStatus or resourceStatus)`,
    );
  }
  return {
    project: last.project,
    environment: last.environment,
    name: last.namespaceName,
    uid: last.namespaceUid,
    target: last.target as Record<string, unknown>,
  };
}

/** The plugin's executor settings, resolved as `tend agent --plugin … --set …` resolves them. */
export async function servedWith(
  plugin: PluginDefinition,
  settings: Record<string, unknown> | undefined,
  flags: Partial<ExecutorFlags> | undefined,
  cwd: string,
): Promise<ServedPlugin> {
  const sets = Object.entries(settings ?? {}).map(
    // JSON is YAML: each value reads back as itself.
    ([key, value]) => `${plugin.name}.${key}=${JSON.stringify(value)}`,
  );
  const served = await servedPlugins([plugin], {
    contexts: [],
    local: false,
    clustersByDefault: false,
    ...flags,
    sets,
    cwd,
  });
  const mine = served.find((s) => s.plugin.name === plugin.name);
  if (!mine) {
    throw new Error(
      `an executor with these settings does not serve plugin ${plugin.name}: give its settings (as --set would) or the flags its settingsFromFlags reads`,
    );
  }
  return mine;
}

/** The primitives, each call counted by name; without the plugin's `verifyAndClean` (the framework's is used). */
function counted(cleanup: CleanupPrimitives, calls: Map<string, number>): CleanupPrimitives {
  const wrapped: Record<string, unknown> = { ...cleanup };
  delete wrapped.verifyAndClean;
  for (const name of [...cleanupHandlerNames, ...optionalCleanupHandlerNames]) {
    const primitive = cleanup[name] as ((...args: unknown[]) => unknown) | undefined;
    if (typeof primitive !== 'function') continue;
    wrapped[name] = (...args: unknown[]) => {
      calls.set(name, (calls.get(name) ?? 0) + 1);
      return primitive.apply(cleanup, args);
    };
  }
  return wrapped as unknown as CleanupPrimitives;
}

/** The plugin's cleanup primitives on the target that serves the environments, as an executor calls them. */
export class CleanupBench {
  /** Every primitive call so far, by name. */
  readonly calls = new Map<string, number>();
  /** The status events the cleanup calls reported (a resourceStatus read as its namespaceStatus), oldest first. */
  readonly reported: NamespaceStatusPayload[] = [];
  readonly served: ServedPlugin;
  readonly cleanup: CleanupPrimitives;
  private readonly bus = new SessionBus();
  private readonly handlerCalls = new HandlerCalls(this.bus);
  private readonly signal = new AbortController().signal;
  private jobCount = 0;
  /** The target, once `targets()` named it (the `targets` check). */
  target: CleanupTarget | undefined;

  constructor(
    served: ServedPlugin,
    readonly protection: CleanupCallContext['protection'],
    readonly identity: { user: string; hostId: string },
    private readonly project: ProjectUnderTest,
  ) {
    this.cleanup = counted(served.plugin.cleanup, this.calls);
    this.served = { plugin: { ...served.plugin, cleanup: this.cleanup }, settings: served.settings };
    this.bus.on('*', (event) => {
      const payload = statusReportOf(event)?.payload;
      if (payload) this.reported.push(payload);
    });
  }

  close(): void {
    this.bus.close();
  }

  /** How many calls of the given primitives were made since `mark` (a copy of `calls`). */
  callsSince(mark: ReadonlyMap<string, number>, names: readonly string[]): number {
    return names.reduce((sum, name) => sum + (this.calls.get(name) ?? 0) - (mark.get(name) ?? 0), 0);
  }

  mark(): ReadonlyMap<string, number> {
    return new Map(this.calls);
  }

  private router(protection = this.protection): CleanupRouter {
    return new CleanupRouter({ bus: this.bus, protection, ...this.identity });
  }

  private get servedTarget(): CleanupTarget {
    if (!this.target) throw new Error('no target serves the environments');
    return this.target;
  }

  targets(): Promise<CleanupTarget[]> {
    return this.router().targets(this.served, this.signal);
  }

  /** The plugin's own inventory (its resources as it names them, before the executor converts them for the server). */
  inventory(): Promise<CleanupInventory> {
    return this.primitive('inventory', (ctx) => this.cleanup.inventory(ctx, this.servedTarget));
  }

  /** The job's reference to the resource, as `verifyAndClean` builds it. */
  refOf(resource: RecordedResource, name = resource.name): CleanupResourceRef {
    const recordedPath = resource.target.path;
    return {
      name,
      ...(typeof recordedPath === 'string' ? { path: recordedPath } : {}),
      project: resource.project,
      environment: resource.environment,
    };
  }

  /**
   * A reference like the resource's to a name that does not exist in the target (in the same
   * place: a recorded path that ends with the name ends with the other name).
   */
  absentRefOf(resource: RecordedResource): CleanupResourceRef {
    const name = `tend-absent-${randomBytes(4).toString('hex')}`;
    const ref = this.refOf(resource, name);
    if (ref.path !== undefined && path.basename(ref.path) === resource.name) {
      ref.path = path.join(path.dirname(ref.path), name);
    }
    return ref;
  }

  read(ref: CleanupResourceRef): Promise<CleanupResource | undefined> {
    return this.primitive('read', (ctx) => this.cleanup.read(ctx, this.servedTarget, ref));
  }

  /** `delete`, `pause` or `resume` called directly, with the given precondition. */
  act(
    action: 'delete' | 'pause' | 'resume',
    resource: CleanupResource,
    precondition: CleanupPrecondition,
  ): Promise<CleanupActionResult> {
    const primitive = action === 'delete' ? this.cleanup.delete : this.cleanup[action];
    if (!primitive) throw new Error(`the plugin has no ${action} primitive`);
    return this.primitive(action, (ctx) =>
      primitive.call(this.cleanup, ctx, this.servedTarget, resource, precondition),
    );
  }

  /** The framework's checks around the primitives, with the hooks an executor gives them. */
  verifyAndClean(
    job: QueuedCleanupJob,
    hooks: Pick<CleanupCallContext, 'confirm' | 'archive'> = {},
    protection = this.protection,
  ): Promise<CleanupResult> {
    return this.router(protection).verifyAndClean(this.served, this.servedTarget, job, this.signal, hooks);
  }

  /** A restore job, through the router's checks of what it names. */
  restore(job: QueuedCleanupJob, request: RestoreRequest): Promise<RestoreResult> {
    return this.router().restore(this.served, this.servedTarget, job, request, this.signal);
  }

  /** A job for the recorded resource, as the server would hand it out; `changes` make it hostile. */
  job(resource: RecordedResource, changes: Partial<QueuedCleanupJob> = {}): QueuedCleanupJob {
    return {
      id: `conformance-${++this.jobCount}`,
      action: 'delete',
      project: resource.project,
      environment: resource.environment,
      namespaceName: resource.name,
      namespaceUid: resource.uid,
      ownership: { proof: 'recorded-uid' },
      // The plan's activity is now: any use so far was before it.
      expectedLastActivityAt: new Date().toISOString(),
      target: resource.target,
      dryRun: false,
      archive: 'none',
      ...changes,
    };
  }

  /**
   * The environment's resource as it is now: read again, or — when an earlier check left it gone
   * — created again by `prepareEnvironment`, so that each check starts from a resource.
   */
  async ensure(resource: RecordedResource): Promise<{ recorded: RecordedResource; now: CleanupResource }> {
    const now = await this.read(this.refOf(resource));
    if (now) return { recorded: { ...resource, uid: now.uid }, now };
    const recorded = await prepareEnvironment(this.project, resource.environment);
    const created = await this.read(this.refOf(recorded));
    if (!created)
      throw new Error(`read() does not find ${recorded.name}, just created by prepareEnvironment`);
    return { recorded, now: created };
  }

  /**
   * The resource changed by someone else, between a read and an action: `changeResource`, or its
   * environment used again (`prepareEnvironment`), as a command would. Its version may change.
   */
  async change(resource: RecordedResource): Promise<void> {
    if (this.project.changeResource) await this.project.changeResource(resource);
    else await prepareEnvironment(this.project, resource.environment);
  }

  /** The executor target key of a recorded target, or undefined. */
  static targetKeyOf(resource: RecordedResource): string | undefined {
    return executorTargetKeyOfRecorded(resource.target);
  }

  private primitive<T>(name: PrimitiveName, invoke: (ctx: CleanupCallContext) => Promise<T>): Promise<T> {
    const plugin = this.served.plugin;
    return this.handlerCalls.run(
      plugin,
      { providerName: plugin.name, handler: `cleanup.${name}` },
      (broker) =>
        invoke({
          provider: { name: plugin.name, config: this.served.settings },
          protection: this.protection,
          events: broker,
          log: pluginLog(broker),
          signal: this.signal,
          ...this.identity,
        }),
    );
  }
}
