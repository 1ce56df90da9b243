/**
 * What every project command starts from: the loaded configuration, the selected environment,
 * the providers configured for it, and — for commands that touch the environment — a session
 * (event bus, local log, outbox) and the router. Ctrl-C is `handleInterrupts`: the first aborts
 * the session's signal, the second exits at once.
 */
import { configureEnvironment, type EnvironmentRequest } from './environment-config.js';
import path from 'node:path';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { forgetCommandMemos } from '../plugins/kubernetes/memo.js';
import type { Configuration } from '../config/configuration.js';
import { ignoreFilesMatcher } from '../config/files.js';
import { actionRef, type ActionConfig, type ProjectConfig } from '../config/project.js';
import type { GlobalOptions } from '../cli/output.js';
import { cliVersion } from '../version.js';
import type { PullRequestRef } from '../events/catalog.js';
import { Session } from '../session/session.js';
import { ExitCode, TendError, toTendError } from '../errors.js';
import { ActionGraph } from '../graph/graph.js';
import { actionDirectory, listDirectory } from '../graph/build-directory.js';
import {
  computeVersions,
  type GatheredInputs,
  type VersionInputs,
  type VersionedAction,
} from '../graph/version.js';
import { builtinPlugins } from '../plugins/builtin.js';
import { validatePlugins } from '../plugin/validate.js';
import type {
  ClusterOverride,
  EnvironmentInfo,
  Outputs,
  PluginDefinition,
  ResolvedAction,
} from '../plugin/types.js';
import { Router, type ProviderRuntime } from '../router/router.js';
import { localIdentity } from '../state/identity.js';
import { statePaths } from '../state/files.js';
import { describeDrops, enforceBoundWithoutServer, outboxMaxBytes } from '../outbox/bound.js';
import { plannedCleanup } from '../remote/cleanup-plan.js';
import { startSessionStream } from '../session/stream.js';
import type { StreamReport } from '../stream/report.js';

export interface OpenedProject {
  /** The configuration in the environment, and what a command asks of it per action. */
  configuration: Configuration;
  project: ProjectConfig;
  actions: ActionConfig[];
  environment: EnvironmentInfo;
  providers: ProviderRuntime[];
  plugins: PluginDefinition[];
  tendDir: string;
  user: string;
  hostId: string;
  /** `--kubeconfig` / `--context` of the command line, when given. */
  cluster?: ClusterOverride;
  /** The pull request the environment is for (`environments[].pullRequest`). */
  pullRequest?: PullRequestRef;
  /** The varfiles read (the environment's, then --var-file's), absolute paths: `--watch` reloads on their change. */
  varfiles: string[];
}

/** The command line's kubectl flags for a project command: one kubeconfig file, one context. */
function clusterOverride(options: GlobalOptions): ClusterOverride | undefined {
  const contexts = options.context ?? [];
  if (contexts.length > 1) {
    throw new TendError(
      'TEND_USAGE',
      `--context names one kubeconfig context for this command, got ${contexts.length}: ${contexts.join(', ')}`,
    );
  }
  const cluster: ClusterOverride = {
    ...(options.kubeconfig ? { kubeconfig: path.resolve(options.kubeconfig) } : {}),
    ...(contexts[0] ? { context: contexts[0] } : {}),
  };
  return Object.keys(cluster).length > 0 ? cluster : undefined;
}

export async function openProject(
  options: GlobalOptions,
  builtins: PluginDefinition[] = builtinPlugins(),
  request: EnvironmentRequest = {},
) {
  validatePlugins(builtins);
  forgetCommandMemos();
  // The plugins tend.yml names (`providers[].plugin`) come back checked, after the built-ins.
  const configuration = await configureEnvironment(options, builtins, request);
  const { project, plugins, environment: selected, actions } = configuration;
  const cluster = clusterOverride(options);
  const { user, hostId } = localIdentity();
  const environment: EnvironmentInfo = {
    project: project.name,
    name: selected.name,
    namespace: selected.namespace,
    resourceName: selected.namespace,
    variables: selected.variables,
  };
  if (selected.cleanup) environment.cleanup = selected.cleanup;
  const byName = new Map(plugins.map((p) => [p.name, p]));
  const providers: ProviderRuntime[] = configuration.providers.map((entry) => {
    const plugin = byName.get(entry.name);
    if (!plugin) {
      throw new TendError('TEND_PROVIDER_NOT_FOUND', `unknown provider "${entry.name}"`, {
        location: entry.location,
      });
    }
    return { name: entry.name, plugin, config: configuration.providerConfig(entry) };
  });
  const opened: OpenedProject = {
    configuration,
    project,
    actions,
    environment,
    providers,
    plugins,
    tendDir: statePaths(project.root).root,
    user,
    hostId,
    varfiles: selected.varfiles,
    ...(cluster ? { cluster } : {}),
    ...(selected.pullRequest ? { pullRequest: selected.pullRequest } : {}),
  };
  return opened;
}

export interface Interrupts {
  /** Aborted by the first Ctrl-C (SIGINT) or SIGTERM, with a TEND_INTERRUPTED reason. */
  signal: AbortSignal;
  /** From now on a Ctrl-C exits at once (exit code 130): nothing is left to stop gracefully. */
  closing(): void;
  /** Stops listening; the default behaviour of the signals comes back. */
  dispose(): void;
}

/**
 * Ctrl-C for a command that starts things, in one place for every command (a session's, `tend
 * logs -f`, a watch): the first SIGINT or SIGTERM says on stderr what happens and aborts the
 * signal — handlers stop what they started (process groups get SIGTERM, then SIGKILL after
 * their grace period; requests in flight are aborted) and the command ends with exit code 130;
 * a second one runs `onForce` and exits with 130 at once (process groups still running get
 * SIGKILL as the process exits: src/plugins/exec/process.ts).
 */
export function handleInterrupts(options: { onForce?: (signal: NodeJS.Signals) => void } = {}): Interrupts {
  const controller = new AbortController();
  let closing = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (!controller.signal.aborted && !closing) {
      process.stderr.write(`\n${signal}: stopping started processes… (press Ctrl-C again to exit now)\n`);
      controller.abort(new TendError('TEND_INTERRUPTED', `interrupted by ${signal}`));
      return;
    }
    options.onForce?.(signal);
    process.exit(ExitCode.interrupted);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return {
    signal: controller.signal,
    closing: () => (closing = true),
    dispose() {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    },
  };
}

/** Shortest wait at the end of an interrupted command for the outbox to drain: the user asked to stop. */
export const interruptedExitWaitMs = 1_000;

export interface CommandSession {
  session: Session;
  router: Router;
  /** Aborted by Ctrl-C (see `handleInterrupts`). */
  signal: AbortSignal;
  /**
   * Ends the session (completed or failed; failed with TEND_INTERRUPTED after Ctrl-C) and
   * removes the Ctrl-C handler; when events are streamed, waits at most 5 s (1 s after Ctrl-C)
   * for the outbox to drain (not at all when the server refuses the connection) and says on
   * stderr what still waits; a Ctrl-C during that wait exits at once. Returns the stream's report
   * when streamed.
   */
  close(outcome: {
    error?: unknown;
    counts?: { succeeded: number; cached: number; failed: number; aborted: number };
  }): Promise<StreamReport | undefined>;
}

/** How long a command waits at most for the server's plan of its environment (the warning line). */
export const cleanupWarningTimeoutMs = 1000;

export function startSession(
  opened: OpenedProject,
  command: string,
  args: string[],
  options: { cleanupWarning?: boolean } = {},
): CommandSession {
  const session = new Session({
    projectRoot: opened.project.root,
    started: {
      command,
      args: args.slice(0, 256).map((a) => a.slice(0, 1024)),
      project: opened.project.name,
      environment: opened.environment.name,
      namespace: opened.environment.namespace,
      user: opened.user,
      hostId: opened.hostId,
      cliVersion,
      ...(opened.environment.cleanup ? { cleanupPolicy: opened.environment.cleanup } : {}),
      ...(opened.pullRequest ? { pullRequest: opened.pullRequest } : {}),
    },
  });
  // Delivery to the server, when one is configured: in the background, from the outbox.
  const stream = startSessionStream({
    projectRoot: opened.project.root,
    projectServer: opened.project.server,
    bus: session.bus,
  });
  // The environment's cleanup plan, asked in the background (a down server answers at once, a
  // slow one is given up after a second): printed at the end when its cleanup is near.
  const warning =
    options.cleanupWarning === false
      ? undefined
      : plannedCleanup({
          server: opened.project.server,
          project: opened.project.name,
          environment: opened.environment.name,
          namespace: opened.environment.namespace,
          timeoutMs: cleanupWarningTimeoutMs,
        });
  const interrupts = handleInterrupts({
    onForce: (signal) =>
      session.fail({ code: 'TEND_INTERRUPTED', message: `interrupted twice by ${signal}` }),
  });
  const router = new Router({
    bus: session.bus,
    providers: opened.providers,
    environment: opened.environment,
    templateContext: opened.configuration.templateContext,
    actionTemplateContext: (ref) => {
      const action = opened.actions.find((a) => a.ref === ref);
      return action && opened.configuration.actionContext(action);
    },
    projectRoot: opened.project.root,
    tendDir: opened.tendDir,
    user: opened.user,
    hostId: opened.hostId,
    ...(opened.cluster ? { cluster: opened.cluster } : {}),
    signal: interrupts.signal,
  });
  return {
    session,
    router,
    signal: interrupts.signal,
    async close({ error, counts }) {
      const interrupted = interrupts.signal.aborted;
      interrupts.closing();
      let report: StreamReport | undefined;
      try {
        if (error !== undefined || interrupted) {
          const e = toTendError(error ?? interrupts.signal.reason);
          session.fail({ code: e.code, message: e.toString() });
        } else {
          session.complete(counts ?? { succeeded: 0, cached: 0, failed: 0, aborted: 0 });
        }
        // Ctrl-C during this wait exits at once; the events stay in the outbox.
        if (stream) {
          report = await stream.finish(interrupted ? interruptedExitWaitMs : undefined);
        } else {
          const paths = statePaths(opened.project.root);
          const dropped = enforceBoundWithoutServer(paths.outbox, outboxMaxBytes(), {
            ownSegment: session.id,
            ledgerFile: path.join(paths.cache, 'outbox-bytes.json'),
          });
          if (dropped) process.stderr.write(describeDrops(dropped));
        }
      } finally {
        interrupts.dispose();
      }
      // Not after Ctrl-C, nor from a server that just refused the connection.
      const line = interrupted || report?.gaveUpRefused ? undefined : (await warning)?.warning;
      if (line) process.stderr.write(`${line}\n`);
      return report;
    },
  };
}

/**
 * Checks the templates of the given actions and of everything they depend on, except the
 * outputs of actions (known only once those run), before anything runs: `${var.nope}` in a
 * Deploy spec fails the command with its file:line:col (exit 2) instead of after the builds.
 * A graph that cannot be built (a cycle, a missing dependency) is left to the graph's own error.
 */
export function checkActionTemplates(opened: OpenedProject, refs: readonly string[]): void {
  let ordered: string[];
  try {
    ordered = new ActionGraph(opened.actions).closure(refs);
  } catch {
    return;
  }
  const byRef = new Map(opened.actions.map((a) => [a.ref, a]));
  for (const ref of ordered) {
    const config = byRef.get(ref);
    if (config) opened.configuration.resolveSpec(config, { keepActionOutputs: true });
  }
}

/**
 * Checked specs as resolved for their versions. For an action that reads no other action's
 * outputs it is what resolveAction would resolve again: resolved and checked once a command.
 */
const checkedSpecs = new WeakMap<ActionConfig, unknown>();

/** The versions of an action's dependencies, for `actions.<kind>.<name>.version`. */
function dependencyVersions(
  graph: ActionGraph,
  versions: Map<string, { version: string }>,
  ref: string,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const dependency of graph.get(ref).dependencies) {
    const version = versions.get(dependency)?.version;
    if (version !== undefined) out[dependency] = version;
  }
  return out;
}

/** Resolves an action's templates with its dependencies' outputs, ready for its handlers. */
export function resolveAction(
  opened: OpenedProject,
  graph: ActionGraph,
  versions: Map<string, { version: string; files: string[] }>,
  ref: string,
  dependencyOutputs: Record<string, Outputs>,
  options: { keepActionOutputs?: boolean } = {},
): ResolvedAction {
  const { config, readsOutputs } = graph.get(ref);
  // Without references to other actions' outputs the spec resolves as it did for its version.
  // (A copy: a handler may change what it is given.)
  const known = options.keepActionOutputs || readsOutputs ? undefined : checkedSpecs.get(config);
  const versionsOfDependencies = dependencyVersions(graph, versions, ref);
  const spec =
    (known === undefined ? undefined : structuredClone(known)) ??
    // Templates may turn a number into a string or back: convert to what the spec schema wants, and check.
    opened.configuration.checkSpec(
      config,
      opened.configuration.resolveSpec(config, {
        ...options,
        dependencyOutputs,
        dependencyVersions: versionsOfDependencies,
      }),
    );
  const versioned = versions.get(ref)!;
  // A Deploy, Test or Run with `build:` reads that Build's build directory: its sources, or its
  // staged directory. (A Build's own is staged by the solver.)
  const buildRef = config.kind !== 'Build' && config.build ? actionRef('Build', config.build) : undefined;
  const dir = buildRef ? actionDirectory(graph, config, opened.project.root) : config.sourceDir;
  const files = !buildRef
    ? versioned.files
    : dir === graph.get(buildRef).config.sourceDir
      ? (versions.get(buildRef)?.files ?? listDirectory(dir))
      : listDirectory(dir);
  const action: ResolvedAction = {
    ref,
    kind: config.kind,
    type: config.type,
    name: config.name,
    version: versioned.version,
    sourceDir: dir,
    files,
    spec,
    dependencyOutputs,
    dependencyVersions: versionsOfDependencies,
  };
  if (config.include) action.include = config.include;
  if (config.exclude) action.exclude = config.exclude;
  if (config.timeout !== undefined) action.timeoutMs = config.timeout;
  return action;
}

/**
 * What the cluster is asked (`waiting`, its requests started) and the versions `compute` works
 * out from the event loop's next turn: hashing holds the thread, and by then the requests are
 * sent, so the cluster answers them while it hashes (a round trip saved against a cluster
 * elsewhere: bench/kube-commands.ts). Both are settled; `waiting`'s error is thrown before the
 * versions', as when the two ran in turn.
 */
export async function whileHashing<T, V>(waiting: Promise<T>, compute: () => Promise<V>): Promise<[T, V]> {
  const [waited, computed] = await Promise.allSettled([waiting, nextTurn().then(compute)]);
  if (waited.status === 'rejected') throw waited.reason;
  if (computed.status === 'rejected') throw computed.reason;
  return [waited.value, computed.value];
}

/**
 * The versions of the given actions and their dependencies in this environment: over the
 * resolved configuration (variables, `--var`, `local.*`, the provider's configuration), so a
 * changed value gives a new version, and over what each action type's `versionInputs` adds (files
 * outside the sources, a rendered kustomization), asked of every action first, concurrently. A
 * template or an input that does not resolve is hashed as its error; the action fails with that
 * error when it runs.
 */
export async function actionVersions(
  opened: OpenedProject,
  graph: ActionGraph,
  refs: string[],
): Promise<Map<string, VersionedAction>> {
  const unresolved = (error: unknown) => ({ unresolved: toTendError(error).message });
  // Each spec resolved and checked once: for its version, and for what its type's versionInputs reads.
  const specs = new Map<ActionConfig, { spec: unknown } | { unresolved: string }>();
  const specOf = (config: ActionConfig) => {
    let entry = specs.get(config);
    if (!entry) {
      try {
        let deferred = false;
        const resolved = opened.configuration.resolveSpec(config, {
          keepActionOutputs: true,
          onDeferred: () => (deferred = true),
        });
        entry = { spec: opened.configuration.checkSpec(config, resolved) };
        // A variable that reads an action's outputs kept an expression: resolved again when it runs.
        if (!deferred) checkedSpecs.set(config, entry.spec);
      } catch (error) {
        entry = unresolved(error);
      }
      specs.set(config, entry);
    }
    return entry;
  };
  const gathered = new Map<ActionConfig, GatheredInputs>();
  await Promise.all(
    graph.closure(refs).map(async (ref) => {
      const { config } = graph.get(ref);
      const versionInputs = opened.configuration
        .actionPlugin(config)
        ?.actionTypes.find((type) => type.name === config.type)?.kinds[config.kind]?.versionInputs;
      if (!versionInputs) return;
      const resolved = specOf(config);
      // A spec that does not resolve: its error is in the version already, and the action fails with it.
      if (!('spec' in resolved)) return;
      try {
        const found = await versionInputs({
          sourceDir: actionDirectory(graph, config, opened.project.root),
          projectRoot: opened.project.root,
          spec: structuredClone(resolved.spec),
        });
        gathered.set(config, {
          files: [...new Set(found.files ?? [])].sort(),
          ...(found.text !== undefined ? { text: found.text } : {}),
        });
      } catch (error) {
        gathered.set(config, unresolved(error));
      }
    }),
  );
  const { root, ignoreFiles = [] } = opened.project;
  const ignored = await ignoreFilesMatcher(root, ignoreFiles);
  const inputs: VersionInputs = {
    projectFile: path.join(root, opened.project.file),
    ...(ignoreFiles.length > 0
      ? { isIgnored: (file: string) => ignored(path.relative(root, file).split(path.sep).join('/')) }
      : {}),
    configuration(config) {
      const plugin = opened.configuration.actionPlugin(config)?.name;
      const provider = opened.providers.filter((p) => p.name === plugin).map((p) => p.config);
      const resolved = specOf(config);
      return { spec: 'spec' in resolved ? resolved.spec : resolved, provider };
    },
    expressionValues(expressions) {
      const values: Record<string, unknown> = {};
      for (const expression of expressions) {
        try {
          values[expression] = opened.configuration.resolveExpression(expression);
        } catch (error) {
          values[expression] = unresolved(error);
        }
      }
      return values;
    },
    pluginInputs: (config) => gathered.get(config),
  };
  return computeVersions(graph, refs, inputs);
}
