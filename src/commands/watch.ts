/**
 * `tend build|deploy|test|run --watch`: runs the requested actions, then watches the project
 * (Node's recursive `fs.watch`) and, after each burst of changes settles, runs again only what
 * the change affects: the requested actions whose version changed — the actions whose sources
 * or configuration changed, and their dependants, since a version covers the dependencies'
 * versions. Changes under `.tend/`, `.git/` and `node_modules/`, and files no action has as a
 * source (what `include`/`exclude` leave out), trigger nothing. One session for the whole watch,
 * so its heartbeats keep the environment's activity alive; Ctrl-C stops what runs and exits 130.
 */
import { watch, type FSWatcher } from 'node:fs';
import path from 'node:path';
import type { CommandResult } from '../cli/output.js';
import { ProgressReporter } from '../cli/progress.js';
import { isConfigFile } from '../config/files.js';
import { ExitCode, toTendError } from '../errors.js';
import type { ActionGraph } from '../graph/graph.js';
import { alwaysExcluded, clearSourceCache } from '../graph/sources.js';
import type { VersionedAction } from '../graph/version.js';
import { builtinPlugins } from '../plugins/builtin.js';
import { forgetCommandMemos } from '../plugins/kubernetes/memo.js';
import type { PluginDefinition } from '../plugin/types.js';
import { openProject, type OpenedProject } from './context.js';
import {
  forcedRefs,
  kindOf,
  nothingToRun,
  openExecution,
  planRun,
  requestedRefs,
  runActions,
  type ExecuteData,
  type ExecuteOptions,
  type ExecuteVerb,
} from './execute.js';

/** How long changes must have settled before a round starts (editors write a file in several steps). */
export const debounceMs = 300;

export interface WatchRound {
  /** Files (relative to the project root) whose change started the round; none for the first. */
  changed: string[];
  actions: ExecuteData['actions'];
}

export interface WatchData {
  sessionId: string;
  project: string;
  environment: string;
  namespace: string;
  rounds: WatchRound[];
}

/** Top-level directories and path segments whose changes never matter (tend's state, VCS, dependencies). */
const ignoredSegments = new Set(alwaysExcluded.map((glob) => glob.split('/')[1]!));

function ignored(relative: string): boolean {
  return relative.split(path.sep).some((segment) => ignoredSegments.has(segment));
}

function isConfiguration(relative: string): boolean {
  return isConfigFile(relative.split(path.sep).join('/'));
}

/** Changed paths, collected from a recursive watch, handed out once they have settled. */
class ChangeBatcher {
  private readonly pending = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private waiter: (() => void) | undefined;
  private readonly watcher: FSWatcher;

  constructor(
    root: string,
    private readonly signal: AbortSignal,
  ) {
    this.watcher = watch(root, { recursive: true }, (_event, filename) => {
      if (!filename) return;
      const relative = path.normalize(filename.toString());
      if (ignored(relative)) return;
      this.pending.add(relative);
      clearTimeout(this.timer);
      this.timer = setTimeout(() => {
        this.timer = undefined;
        this.wake();
      }, debounceMs);
    });
    signal.addEventListener('abort', () => this.wake(), { once: true });
  }

  private wake(): void {
    const waiter = this.waiter;
    this.waiter = undefined;
    waiter?.();
  }

  /** The next settled batch of changed paths (relative, sorted), or undefined once aborted. */
  async next(): Promise<string[] | undefined> {
    while (!(this.pending.size > 0 && this.timer === undefined)) {
      if (this.signal.aborted) return undefined;
      await new Promise<void>((resolve) => (this.waiter = resolve));
    }
    if (this.signal.aborted) return undefined;
    const batch = [...this.pending].sort();
    this.pending.clear();
    return batch;
  }

  close(): void {
    clearTimeout(this.timer);
    this.watcher.close();
  }
}

/** The files the actions' versions cover (sources, and files their types read from elsewhere), relative to the project root. */
function sourceFiles(root: string, graph: ActionGraph, versions: Map<string, VersionedAction>): Set<string> {
  const files = new Set<string>();
  for (const [ref, { files: own, inputFiles }] of versions) {
    const dir = graph.get(ref).config.sourceDir;
    for (const file of own) files.add(path.relative(root, path.join(dir, file)));
    for (const file of inputFiles) files.add(path.relative(root, file));
  }
  return files;
}

const note = (line: string) => process.stderr.write(`watch: ${line}\n`);

export async function watchCommand(
  verb: ExecuteVerb,
  names: string[],
  options: ExecuteOptions,
  plugins: PluginDefinition[] = builtinPlugins(),
): Promise<CommandResult<WatchData>> {
  const {
    opened: first,
    refs: firstRefs,
    notRun,
    session,
    progress: firstProgress,
    planned: firstPlan,
  } = await openExecution(verb, names, options, plugins);
  let opened: OpenedProject = first;
  let refs = firstRefs;
  const root = opened.project.root;
  const settings = {
    concurrency: options.concurrency ?? 8,
    showOutput: Boolean(options.showOutput),
  };
  const rounds: WatchRound[] = [];
  const noted = new Set<string>();
  const totals = { succeeded: 0, cached: 0, failed: 0, aborted: 0 };
  // Watching starts before the first round, so a change made while it runs is not missed.
  const changes = new ChangeBatcher(root, session.signal);
  // A progress display per round: on a terminal each one draws its own rows, below the last summary.
  let progress = firstProgress;
  // --force and --force-build apply to the first round; a change's round runs what it changed.
  const round = async (changed: string[], requested: string[], force: boolean, forceBuild = false) => {
    if (rounds.length > 0) progress = new ProgressReporter(session.session.bus);
    // The first round runs what opening the session planned; later ones plan again.
    const planned = rounds.length === 0 ? firstPlan : undefined;
    const run = await runActions(opened, session, requested, {
      ...settings,
      force,
      forceBuild,
      ...(planned ? { planned } : {}),
    });
    progress.finish();
    for (const key of Object.keys(totals) as (keyof typeof totals)[]) totals[key] += run.counts[key];
    rounds.push({ changed, actions: run.actions });
    process.stdout.write(
      (options.json ? JSON.stringify({ changed, actions: run.actions }) : run.human) + '\n',
    );
  };
  const versionsNow = () => {
    clearSourceCache();
    forgetCommandMemos();
    return planRun(opened, refs);
  };
  try {
    // None yet: said once; the watch goes on, and picks up an action declared while it runs.
    for (const line of notRun) note(line);
    if (names.length === 0 && refs.length === 0)
      for (const line of nothingToRun(opened, kindOf[verb])) note(line);
    await round([], refs, Boolean(options.force), Boolean(options.forceBuild));
    let { graph, versions } = await versionsNow();
    note(`watching ${root} for changes (Ctrl-C to stop)`);
    for (;;) {
      const batch = await changes.next();
      if (!batch) break;
      // tend.yml, an action file, or a varfile of the environment (one inside the project).
      const configuration = (file: string) =>
        isConfiguration(file) || opened.varfiles.includes(path.join(root, file));
      if (batch.some(configuration)) {
        try {
          const reopened = await openProject(options, plugins, {
            forceEnabled: forcedRefs(verb, names, options),
          });
          ({ refs } = requestedRefs(reopened, kindOf[verb], names));
          opened = reopened;
        } catch (error) {
          note(`configuration not reloaded: ${toTendError(error).toString()}`);
          continue;
        }
      }
      const before = versions;
      const sourcesBefore = sourceFiles(root, graph, versions);
      ({ graph, versions } = await versionsNow());
      const sources = sourceFiles(root, graph, versions);
      const affected = refs.filter((ref) => before.get(ref)?.version !== versions.get(ref)?.version);
      let relevant = batch.filter(
        (file) => configuration(file) || sources.has(file) || sourcesBefore.has(file),
      );
      // A file no version names can still change one: a file a kustomization reads from outside
      // the action's source (the rendered manifests are in the version, not the files read).
      if (relevant.length === 0 && affected.length > 0) relevant = batch;
      // Said once per file: a file written on every round (output redirected into the project) stays quiet.
      const others = batch.filter((file) => !relevant.includes(file) && !noted.has(file));
      for (const file of others) noted.add(file);
      if (others.length > 0)
        note(`ignored ${others.join(', ')} (not a source of any action; not said again)`);
      if (relevant.length === 0) continue;
      if (affected.length === 0) {
        note(`${relevant.join(', ')} changed; no action's version changed`);
        continue;
      }
      const closure = graph.closure(affected);
      note(
        `${relevant.join(', ')} changed → ${closure.filter((r) => before.get(r)?.version !== versions.get(r)?.version).join(', ')}`,
      );
      await round(relevant, affected, false);
    }
  } catch (caught) {
    changes.close();
    progress.finish();
    const error = session.signal.aborted ? toTendError(session.signal.reason) : caught;
    await session.close({ error });
    throw error;
  }
  changes.close();
  progress.finish();
  await session.close({ counts: totals });
  return {
    exitCode: ExitCode.interrupted,
    human: `stopped watching after ${rounds.length} round(s)`,
    data: {
      sessionId: session.session.id,
      project: opened.project.name,
      environment: opened.environment.name,
      namespace: opened.environment.namespace,
      rounds,
    },
  };
}
