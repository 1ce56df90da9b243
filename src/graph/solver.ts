/**
 * The solver: runs the requested actions and their dependencies. Independent actions run
 * concurrently up to a limit; an action starts only after its dependencies succeeded; a failure
 * aborts only its dependants. Every action asks its status first and is skipped when it is
 * already ready for its version (unless forced). Transitions are `actionStatus` events.
 */
import type { SessionBus } from '../events/bus.js';
import type { ActionState } from '../events/catalog.js';
import { TendError, toTendError } from '../errors.js';
import type { ActionConfig } from '../config/project.js';
import type { ActionKind, Outputs, ResolvedAction } from '../plugin/types.js';
import type { Router } from '../router/router.js';
import type { ActionGraph } from './graph.js';
import { stageBuildDirectory } from './build-directory.js';
import { monotonicMs } from '../monotonic.js';

export type FinalState = 'cached' | 'ready' | 'failed' | 'aborted';

export interface ActionOutcome {
  ref: string;
  kind: ActionKind;
  version: string;
  state: FinalState;
  durationMs: number;
  outputs: Outputs;
  error?: TendError;
  /** For Test/Run: the process's exit code. */
  exitCode?: number;
}

export interface SolveOptions {
  graph: ActionGraph;
  versions: Map<string, { version: string }>;
  /** The actions asked for; their dependencies are added. */
  requested: string[];
  router: Router;
  bus: SessionBus;
  force: boolean;
  /** Garden's `--force-build`: every Build the solve runs is built again, even when ready for its version. */
  forceBuild?: boolean;
  concurrency: number;
  signal: AbortSignal;
  /** The project root: a Build with `copyFrom` is staged in its `.tend/build/`. */
  projectRoot: string;
  /** Resolves an action's templates with its dependencies' outputs. */
  resolve(ref: string, dependencyOutputs: Record<string, Outputs>): ResolvedAction;
}

/** The handler that tells whether an action is already done for its version, by kind. */
export const statusHandler = {
  Build: 'getStatus',
  Deploy: 'getStatus',
  Test: 'getResult',
  Run: 'getResult',
} as const;
const executeHandler = { Build: 'build', Deploy: 'deploy', Test: 'run', Run: 'run' } as const;

/**
 * Whether an action is skipped when it is already done for its version. Builds and Deploys
 * always are; a Test or Run as its `cacheResult` says (default: a Test yes, a Run no — a Run is
 * usually run for its effect, such as seeding a database).
 */
export function reusesResult(config: Pick<ActionConfig, 'kind' | 'cacheResult'>): boolean {
  if (config.kind === 'Build' || config.kind === 'Deploy') return true;
  return config.cacheResult ?? config.kind === 'Test';
}

/** A counting semaphore: at most `limit` holders at once, FIFO. */
class Limiter {
  private active = 0;
  private readonly waiting: (() => void)[] = [];
  constructor(private readonly limit: number) {}

  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.active >= this.limit) await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.active++;
    try {
      return await fn();
    } finally {
      this.active--;
      this.waiting.shift()?.();
    }
  }
}

export async function solve(options: SolveOptions): Promise<Map<string, ActionOutcome>> {
  const { graph, bus, router } = options;
  const limiter = new Limiter(options.concurrency);
  const requested = new Set(options.requested);
  const promises = new Map<string, Promise<ActionOutcome>>();

  const emit = (ref: string, kind: ActionKind, version: string, state: ActionState, extra = {}) =>
    bus.emit('actionStatus', { actionRef: ref, kind, version, state, ...extra });

  const process = (ref: string): Promise<ActionOutcome> => {
    let promise = promises.get(ref);
    if (promise) return promise;
    promise = (async () => {
      const node = graph.get(ref);
      const kind = node.config.kind;
      const version = options.versions.get(ref)!.version;
      const deps = await Promise.all(node.dependencies.map(process));
      const failedDeps = deps.filter((d) => d.state === 'failed' || d.state === 'aborted');
      if (failedDeps.length > 0 || options.signal.aborted) {
        const why = options.signal.aborted
          ? 'interrupted'
          : `dependency ${failedDeps.map((d) => d.ref).join(', ')} did not succeed`;
        const error = new TendError('TEND_ACTION_FAILED', `${ref} aborted: ${why}`, { actionRef: ref });
        emit(ref, kind, version, 'aborted', { error: { code: error.code, message: error.message } });
        return { ref, kind, version, state: 'aborted', durationMs: 0, outputs: {}, error } as ActionOutcome;
      }
      return limiter.run(() => runAction(ref, kind, version, deps));
    })();
    promises.set(ref, promise);
    return promise;
  };

  const runAction = async (
    ref: string,
    kind: ActionKind,
    version: string,
    deps: ActionOutcome[],
  ): Promise<ActionOutcome> => {
    const started = monotonicMs();
    const elapsed = () => Math.round((monotonicMs() - started) * 1000) / 1000;
    emit(ref, kind, version, 'getting-status');
    try {
      const resolved = options.resolve(ref, Object.fromEntries(deps.map((d) => [d.ref, d.outputs])));
      // A Build with copyFrom builds in its staged build directory: staged anew before it runs, or
      // kept (made when missing) when it is done for its version, for the actions that read it.
      const staged = (keep: boolean): ResolvedAction => {
        const config = graph.get(ref).config;
        if (kind !== 'Build' || !config.copyFrom) return resolved;
        const stage = stageBuildDirectory(graph, config, options.projectRoot, resolved.files, keep);
        for (const message of stage.warnings) bus.emit('log', { level: 'warn', message, actionRef: ref });
        return { ...resolved, sourceDir: stage.dir, files: stage.files };
      };
      const force =
        (options.force && requested.has(ref)) || (options.forceBuild === true && kind === 'Build');
      const status = reusesResult(graph.get(ref).config)
        ? await router.callAction(resolved, statusHandler[kind], { force })
        : undefined;
      if (status?.state === 'ready' && !force) {
        staged(true);
        const durationMs = elapsed();
        emit(ref, kind, version, 'cached', { durationMs });
        return { ref, kind, version, state: 'cached', durationMs, outputs: status.outputs ?? {} };
      }
      emit(ref, kind, version, 'processing');
      const result = await router.callAction(staged(false), executeHandler[kind], { force });
      const exitCode = 'exitCode' in result ? (result.exitCode as number) : undefined;
      if (exitCode !== undefined && exitCode !== 0) {
        throw new TendError('TEND_EXEC_FAILED', `${ref} exited with code ${exitCode}`, {
          actionRef: ref,
          detail: { exitCode, log: 'log' in result ? result.log : undefined },
        });
      }
      const durationMs = elapsed();
      emit(ref, kind, version, 'ready', { durationMs });
      const outcome: ActionOutcome = {
        ref,
        kind,
        version,
        state: 'ready',
        durationMs,
        outputs: result.outputs,
      };
      if (exitCode !== undefined) outcome.exitCode = exitCode;
      return outcome;
    } catch (caught) {
      const error = toTendError(caught);
      const durationMs = elapsed();
      // Stopped by Ctrl-C: aborted, not failed (and never ready: the handler did not finish).
      const state = options.signal.aborted || error.code === 'TEND_INTERRUPTED' ? 'aborted' : 'failed';
      emit(ref, kind, version, state, { durationMs, error: { code: error.code, message: error.message } });
      return { ref, kind, version, state, durationMs, outputs: {}, error };
    }
  };

  const refs = graph.closure(options.requested);
  await Promise.all(refs.map(process));
  const outcomes = new Map<string, ActionOutcome>();
  for (const ref of refs) outcomes.set(ref, await promises.get(ref)!);
  return outcomes;
}
