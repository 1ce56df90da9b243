/**
 * `tend logs [names…] [-f] [--tail N]`: what the named deploys (all that keep logs when none are
 * named) printed, through each type's `Deploy.getLogs` (the router calls it like any handler).
 * Read-only: dependency outputs come from their status handlers, nothing is built or deployed.
 * Without `--follow` the lines are the result; with it each line is printed as it arrives, until
 * Ctrl-C (exit 130) or every source has ended.
 */
import type { CommandResult, GlobalOptions } from '../cli/output.js';
import { actionRef } from '../config/project.js';
import { ExitCode, TendError, toTendError } from '../errors.js';
import { ActionGraph } from '../graph/graph.js';
import { statusHandler } from '../graph/solver.js';
import type { LogLine, Outputs, ResolvedAction } from '../plugin/types.js';
import type { Router } from '../router/router.js';
import { actionVersions, openProject, resolveAction, startSession, type OpenedProject } from './context.js';

export interface LogsOptions extends GlobalOptions {
  follow?: boolean;
  tail?: number;
}

export interface DeployLogLine extends LogLine {
  /** The deploy it belongs to: `deploy.web`. */
  ref: string;
}

export interface LogsData {
  sessionId: string;
  project: string;
  environment: string;
  namespace: string;
  /** Without --follow: every line. With it: empty (each line was printed as it arrived). */
  lines: DeployLogLine[];
  /** Deploys whose logs could not be read, and why. */
  errors: { ref: string; code: string; message: string }[];
  /** Deploys left out when none were named: their type keeps no logs. */
  skipped: string[];
  interrupted: boolean;
}

export function formatLogLine(line: DeployLogLine): string {
  return `${line.ref} ${line.source} | ${line.stream === 'stderr' ? '[stderr] ' : ''}${line.text}`;
}

function deployRefs(opened: OpenedProject, names: string[]): string[] {
  const deploys = opened.actions.filter((a) => a.kind === 'Deploy');
  if (names.length === 0) return deploys.map((a) => a.ref).sort();
  return names.map((name) => {
    const ref = actionRef('Deploy', name);
    if (!deploys.some((a) => a.ref === ref)) {
      throw new TendError(
        'TEND_ACTION_NOT_FOUND',
        `no Deploy action named "${name}"; defined: ${deploys.map((a) => a.name).join(', ') || '(none)'}`,
      );
    }
    return ref;
  });
}

/** The outputs of the action's dependencies as their status handlers report them (read-only). */
async function dependencyOutputs(
  opened: OpenedProject,
  router: Router,
  graph: ActionGraph,
  versions: Awaited<ReturnType<typeof actionVersions>>,
  ref: string,
  known: Map<string, Outputs>,
): Promise<Record<string, Outputs>> {
  for (const dep of graph.closure([ref]).filter((r) => r !== ref && !known.has(r))) {
    const node = graph.get(dep);
    const deps = Object.fromEntries(node.dependencies.map((d) => [d, known.get(d) ?? {}]));
    const action = resolveAction(opened, graph, versions, dep, deps);
    const status = await router.callAction(action, statusHandler[node.config.kind], { force: false });
    known.set(dep, status.outputs ?? {});
  }
  return Object.fromEntries(graph.get(ref).dependencies.map((d) => [d, known.get(d) ?? {}]));
}

export async function logsCommand(names: string[], options: LogsOptions): Promise<CommandResult<LogsData>> {
  const opened = await openProject(options);
  const refs = deployRefs(opened, names);
  const follow = Boolean(options.follow);
  const { session, router, signal, close } = startSession(opened, 'logs', names);
  const lines: DeployLogLine[] = [];
  const failures: { ref: string; error: TendError }[] = [];
  const skipped: string[] = [];
  const deliver = (line: DeployLogLine) => {
    if (!follow) lines.push(line);
    else process.stdout.write((options.json ? JSON.stringify(line) : formatLogLine(line)) + '\n');
  };
  try {
    await router.initProviders();
    const graph = new ActionGraph(opened.actions);
    const versions = await actionVersions(opened, graph, refs);
    const known = new Map<string, Outputs>();
    const one = async (ref: string) => {
      try {
        const deps = await dependencyOutputs(opened, router, graph, versions, ref, known);
        let action: ResolvedAction;
        try {
          action = resolveAction(opened, graph, versions, ref, deps);
        } catch (error) {
          // A dependency not ready (never built here): its outputs stay unresolved; the workloads'
          // names and selectors rarely depend on them, and the handler says if nothing is deployed.
          if (toTendError(error).code !== 'TEND_TEMPLATE') throw error;
          action = resolveAction(opened, graph, versions, ref, deps, { keepActionOutputs: true });
        }
        await router.actionLogs(action, {
          follow,
          ...(options.tail !== undefined ? { tail: options.tail } : {}),
          onLine: (line) => deliver({ ref, ...line }),
        });
      } catch (error) {
        const e = toTendError(error);
        if (names.length === 0 && e.code === 'TEND_LOGS_UNSUPPORTED') skipped.push(ref);
        else failures.push({ ref, error: e });
      }
    };
    // Following, every deploy at once (lines interleave as they come); otherwise one after the other.
    if (follow) await Promise.all(refs.map(one));
    else for (const ref of refs) await one(ref);
    await close({});
  } catch (error) {
    await close({ error });
    throw error;
  }
  const interrupted = signal.aborted;
  const exitCode = interrupted
    ? ExitCode.interrupted
    : Math.max(ExitCode.ok, ...failures.map((f) => f.error.exitCode));
  for (const { error } of failures) {
    const hint = error.detail?.hint;
    process.stderr.write(`error: ${error.message}\n${typeof hint === 'string' ? `  ${hint}\n` : ''}`);
  }
  if (skipped.length > 0) process.stderr.write(`no logs: the type of ${skipped.join(', ')} keeps none\n`);
  return {
    exitCode,
    human: lines.map(formatLogLine).join('\n'),
    data: {
      sessionId: session.id,
      project: opened.project.name,
      environment: opened.environment.name,
      namespace: opened.environment.namespace,
      lines,
      errors: failures.map(({ ref, error }) => ({ ref, code: error.code, message: error.message })),
      skipped,
      interrupted,
    },
  };
}
