/**
 * `tend/testing`'s cleanup conformance kit: one call runs a plugin's cleanup primitives against
 * the plugin's own target — two environments created by its own `prepareEnvironment` in real tend
 * sessions, what they are learnt from the sessions' status events — and checks every promise the
 * primitives make to the framework (docs/plugin-api.md#testing-cleanup-the-conformance-kit):
 * targets, inventory, read, preconditions, dry run, protection, hostile jobs, pause and resume,
 * archive, restore and delete. What the plugin has no primitive for is not applicable, never a
 * failure.
 */
import { openProject } from '../commands/context.js';
import { defaultSystemNamespace } from '../cleanup/protection.js';
import type { ExecutorFlags } from '../plugin/types.js';
import {
  CleanupBench,
  prepareEnvironment,
  servedWith,
  type ProjectUnderTest,
  type RecordedResource,
} from './cleanup-bench.js';
import { checkArchive, checkDelete, checkPauseResume, checkRestore } from './cleanup-conformance-actions.js';
import {
  checkDryRun,
  checkHostileJobs,
  checkInventory,
  checkPreconditions,
  checkProtection,
  checkRead,
  checkTargets,
  type ConformanceRun,
} from './cleanup-conformance-checks.js';
import type { CleanupCheckResult } from './cleanup-findings.js';
import { withKubeconfig } from './kubeconfig.js';

export type { CleanupCheckName, CleanupCheckResult } from './cleanup-findings.js';
export type { RecordedResource } from './cleanup-bench.js';

export interface CleanupConformanceOptions {
  /** A project (a directory with tend.yml) whose provider is the plugin under test. */
  root: string;
  /** The plugin's name (its provider entry's `name`). */
  plugin: string;
  /** The plugin's executor settings, as `--set <plugin>.<key>=<value>` would give them. */
  settings?: Record<string, unknown>;
  /** The executor's flags its `settingsFromFlags` reads (`{ local: true }` for `tend agent --local`). */
  flags?: Partial<ExecutorFlags>;
  /** The kubeconfig that reaches the cluster (sets KUBECONFIG while the kit runs). */
  kubeconfig?: string;
  /**
   * The two environments to create (default: the project's default environment and the first
   * other one): two resources of one target, for completeness over more than one.
   */
  environments?: readonly [string, string];
  /** `--var` values for the project. */
  vars?: string[];
  /**
   * The executor's protection, as `ctx.protection` has it: the tend system name (default
   * `tend-system`) and its `--protect-namespace` globs (a job naming a name they protect is
   * checked too).
   */
  protection?: { systemName?: string; patterns?: readonly string[] };
  /**
   * Changes a resource as someone else would between the framework's read and the action, so
   * that its version changes (for the stale-version precondition); default: its environment
   * prepared again, as a command's use. When the version does not change, that case is not tried.
   */
  changeResource?: (resource: RecordedResource) => Promise<void>;
  /**
   * An adopted resource, when the plugin can make one: `create(name)` makes the environment's
   * resource outside tend, then the kit prepares the environment (the plugin adopts it); a job
   * for it must be cancelled. Without it, that hostile job is not tried.
   */
  adopted?: { environment: string; create: (name: string) => Promise<void> };
}

export interface CleanupConformanceReport {
  plugin: string;
  /** The target the environments were created in, once `targets()` named it. */
  targetKey?: string;
  /** The two resources as `prepareEnvironment` created them. */
  created: RecordedResource[];
  /** Every check, in the order they ran. */
  checks: CleanupCheckResult[];
  /** `<check>: <sentence>` for every failed check; empty when the plugin conforms. */
  failures: string[];
}

export class CleanupConformanceError extends Error {
  constructor(readonly report: CleanupConformanceReport) {
    super(
      `the plugin's cleanup primitives broke the contract:\n${report.failures.map((f) => `  - ${f}`).join('\n')}`,
    );
    this.name = 'CleanupConformanceError';
  }
}

/** The project's default environment and the first other one. */
async function environmentsOf(options: CleanupConformanceOptions): Promise<readonly [string, string]> {
  if (options.environments) return options.environments;
  const { project } = await openProject({ root: options.root, var: options.vars });
  const other = project.environments.find((e) => e.name !== project.defaultEnvironment);
  if (!other) {
    throw new Error(
      `the project ${options.root} has one environment: the kit creates two (options.environments, or a second one in tend.yml)`,
    );
  }
  return [project.defaultEnvironment, other.name];
}

/** Runs every check and returns what it found; `checkCleanupConformance` throws on failures. */
export async function runCleanupConformance(
  options: CleanupConformanceOptions,
): Promise<CleanupConformanceReport> {
  return withKubeconfig(options.kubeconfig, async () => {
    const project = {
      root: options.root,
      plugin: options.plugin,
      ...(options.vars ? { vars: options.vars } : {}),
      ...(options.changeResource ? { changeResource: options.changeResource } : {}),
    };
    const [firstEnvironment, secondEnvironment] = await environmentsOf(options);
    const opened = await openProject({ root: options.root, env: firstEnvironment, var: options.vars });
    const plugin = opened.providers.find((p) => p.name === options.plugin)?.plugin;
    if (!plugin?.cleanup) {
      throw new Error(`the project ${options.root} has no provider "${options.plugin}" with a cleanup part`);
    }
    const served = await servedWith(plugin, options.settings, options.flags, options.root);
    const bench = new CleanupBench(
      served,
      {
        systemName: options.protection?.systemName ?? defaultSystemNamespace,
        patterns: options.protection?.patterns ?? [],
      },
      { user: opened.user, hostId: opened.hostId },
      project,
    );
    try {
      const created = [
        await prepareEnvironment(project, firstEnvironment),
        await prepareEnvironment(project, secondEnvironment),
      ];
      const run: ConformanceRun = { bench, plugin: options.plugin, first: created[0]!, second: created[1]! };
      if (options.adopted) run.adopted = await adoptedResource(options, project, options.adopted);
      const checks = [await checkTargets(run)];
      // Without the target, nothing else can be called.
      if (bench.target) {
        for (const check of [
          checkInventory,
          checkRead,
          checkPreconditions,
          checkDryRun,
          checkProtection,
          checkHostileJobs,
          checkPauseResume,
          checkArchive,
          checkRestore,
          checkDelete,
        ]) {
          checks.push(await check(run));
        }
        await tidy(run);
      }
      return {
        plugin: options.plugin,
        ...(bench.target ? { targetKey: bench.target.targetKey } : {}),
        created,
        checks,
        failures: checks.filter((c) => c.status === 'fail').map((c) => `${c.check}: ${c.sentence}`),
      };
    } finally {
      bench.close();
    }
  });
}

/** Runs every check and throws a CleanupConformanceError listing every failure. */
export async function checkCleanupConformance(
  options: CleanupConformanceOptions,
): Promise<CleanupConformanceReport> {
  const report = await runCleanupConformance(options);
  if (report.failures.length > 0) throw new CleanupConformanceError(report);
  return report;
}

/** The environment's resource made outside tend, then prepared: adopted by the plugin. */
async function adoptedResource(
  options: CleanupConformanceOptions,
  project: ProjectUnderTest,
  adopted: NonNullable<CleanupConformanceOptions['adopted']>,
): Promise<RecordedResource> {
  const opened = await openProject({ root: options.root, env: adopted.environment, var: options.vars });
  await adopted.create(opened.environment.namespace);
  return prepareEnvironment(project, adopted.environment);
}

/** What the checks left (the restored resource, say) deleted with its precondition, as far as it goes. */
async function tidy(run: ConformanceRun): Promise<void> {
  for (const resource of [run.first, run.second]) {
    try {
      const now = await run.bench.read(run.bench.refOf(resource));
      if (now) await run.bench.act('delete', now, { uid: now.uid, version: now.version });
    } catch {
      // Left for the test's own teardown: the checks have spoken.
    }
  }
}
