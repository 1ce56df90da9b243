/**
 * The cleanup executor: one implementation, two homes — inside `tend server --kubeconfig` (the
 * queue is the server's DatabaseCleanupQueue, in-process) and `tend agent` (the queue is HTTP).
 *
 * Each pass: (1) heartbeat with the targets it serves, (2) the inventory of each target, (3) claim
 * the due jobs of the targets whose inventory was complete in this pass — a failed, partial or
 * truncated list means nothing is done there until a later pass — (4) for each job, concurrently
 * up to a bound: `start` (the server re-checks the registry), the framework's checked cleanup
 * around the primitives of the job's plugin (plugin/cleanup-checks.ts: fresh read, every check,
 * the action with its precondition),
 * then `complete` with the outcome. A job whose lease was lost is dropped; the lease returns it.
 * Every plugin call goes through the router (router/cleanup.ts), as every handler call does.
 */
import { getMaxListeners, setMaxListeners } from 'node:events';
import { TendError } from '../errors.js';
import { newId, SessionBus } from '../events/bus.js';
import type { TendEvent } from '../events/catalog.js';
import type { CleanupCallContext, CleanupResult, CleanupTarget } from '../plugin/types.js';
import { CleanupRouter, type ServedPlugin } from '../router/cleanup.js';
import type { EnvironmentArchive } from '../cleanup/archive.js';
import { cleanupActionsOf } from '../plugin/cleanup-actions.js';
import {
  defaultClaimedActions,
  type CleanupAction,
  type CleanupJob,
  type CleanupQueue,
  type ExecutorKind,
  type InventoryResponse,
} from '../cleanup/protocol.js';
import { logPluginEvents, targetLabel, type ExecutorLogger } from './log.js';
import { runRestoreSession } from './restore-session.js';
import { monotonicMs } from '../monotonic.js';

export interface ExecutorOptions {
  queue: CleanupQueue;
  /** The plugins it serves, each with its executor settings (settings.ts). */
  plugins: readonly ServedPlugin[];
  /** Never cleaned, whatever a job says: the system namespace and `--protect-namespace` globs. */
  protection: CleanupCallContext['protection'];
  kind: ExecutorKind;
  /** For people: the host or agent name. */
  name: string;
  version: string;
  /** Stable for the process; a new one at each start. */
  executorId?: string;
  user?: string;
  hostId?: string;
  /** Jobs verified and executed at once (default 64): each waits for its namespace to be gone. */
  concurrency?: number;
  /** Jobs claimed per request (default 4 × concurrency). */
  claimBatch?: number;
  /** Lease of a claimed job (default 300 s): longer than a namespace takes to go. */
  leaseSeconds?: number;
  /** Pause between passes until the server's heartbeat answer says otherwise (default 30 s). */
  intervalMs?: number;
  log?: ExecutorLogger;
  /** Every check, no action: the jobs it claims are verified and left alone (`tend agent --dry-run`). */
  dryRun?: boolean;
  /** Every event the plugins emitted while cleaning (namespaceStatus of what was deleted, logs). */
  onEvent?: (event: TendEvent) => void;
}

export interface JobReport {
  id: string;
  targetKey: string;
  namespaceName: string;
  /** `lease-lost`: another executor holds the job now (or the lease expired); nothing was reported. */
  outcome: 'done' | 'cancelled' | 'failed' | 'lease-lost';
  message: string;
}

export interface InventoryReportSummary {
  targetKey: string;
  pluginName: string;
  complete: boolean;
  items: number;
  error?: string;
  response?: InventoryResponse;
}

export interface PassReport {
  targets: { targetKey: string; pluginName: string; description: string }[];
  inventories: InventoryReportSummary[];
  jobs: JobReport[];
  /** What went wrong outside a job (target discovery, heartbeat, claim): the pass went on where it could. */
  errors: string[];
}

const defaultIntervalMs = 30_000;

export class CleanupExecutor {
  readonly executorId: string;
  private targets: CleanupTarget[] | undefined;
  private intervalMs: number;
  private readonly bus: SessionBus;
  private readonly router: CleanupRouter;
  private readonly log: ExecutorLogger;

  constructor(private readonly options: ExecutorOptions) {
    this.executorId = options.executorId ?? newId();
    this.intervalMs = options.intervalMs ?? defaultIntervalMs;
    this.log = options.log ?? (() => {});
    // Plugin events of cleanup calls are validated and stamped like those of any handler call.
    this.bus = new SessionBus(this.executorId);
    if (options.onEvent) this.bus.on('*', options.onEvent);
    logPluginEvents(this.bus, this.log);
    this.router = new CleanupRouter({
      bus: this.bus,
      protection: options.protection,
      user: options.user ?? 'tend-executor',
      hostId: options.hostId ?? options.name,
    });
  }

  /** The pause between passes: the server's `--cleanup-interval` once a heartbeat answered. */
  get interval(): number {
    return this.intervalMs;
  }

  private served(pluginName: string): ServedPlugin | undefined {
    return this.options.plugins.find((p) => p.plugin.name === pluginName);
  }

  /** The cleanup actions this executor runs for the plugin. */
  private actionsOf(pluginName: string): CleanupAction[] {
    const served = this.served(pluginName);
    return served ? cleanupActionsOf(served.plugin.cleanup) : [...defaultClaimedActions];
  }

  /** The targets every plugin serves with these settings; found once, again after a failure. */
  async discoverTargets(signal: AbortSignal = new AbortController().signal): Promise<{
    targets: CleanupTarget[];
    errors: string[];
  }> {
    if (this.targets) return { targets: this.targets, errors: [] };
    const targets: CleanupTarget[] = [];
    const errors: string[] = [];
    for (const served of this.options.plugins) {
      try {
        targets.push(...(await this.router.targets(served, signal)));
      } catch (error) {
        errors.push(`plugin ${served.plugin.name}: cannot find its targets: ${(error as Error).message}`);
      }
    }
    if (errors.length === 0) this.targets = targets;
    return { targets, errors };
  }

  /** One pass: heartbeat, inventories, claim, execute. Never throws for a single failure. */
  async runPass(signal: AbortSignal = new AbortController().signal): Promise<PassReport> {
    const report: PassReport = { targets: [], inventories: [], jobs: [], errors: [] };
    const { targets, errors } = await this.discoverTargets(signal);
    report.errors.push(...errors);
    report.targets = targets.map(({ targetKey, pluginName, description }) => ({
      targetKey,
      pluginName,
      description,
    }));
    try {
      await this.heartbeat(report.targets);
    } catch (error) {
      report.errors.push(`heartbeat: ${(error as Error).message}`);
      return report;
    }
    const stopBeating = this.keepAlive(report.targets);
    try {
      report.inventories = await Promise.all(targets.map((t) => this.takeInventory(t, signal)));
      // Unknown is not idle: only targets listed completely in this pass, and not held back as
      // suspect by the server, are acted on.
      const ready = targets.filter((t) => {
        const listed = report.inventories.find((i) => i.targetKey === t.targetKey);
        return listed?.complete === true && listed.response?.suspect === undefined;
      });
      if (ready.length > 0 && !signal.aborted) await this.executeDueJobs(ready, signal, report);
    } finally {
      stopBeating();
    }
    return report;
  }

  /**
   * Heartbeats each interval until the returned function is called. The server takes an executor
   * unseen for three intervals for gone and withdraws the jobs it planned for its target: a long
   * pass (a large inventory, many jobs, a slow cluster) says it is alive meanwhile.
   */
  private keepAlive(targets: PassReport['targets']): () => void {
    let beating = false;
    const timer = setInterval(() => {
      if (beating) return;
      beating = true;
      this.heartbeat(targets)
        .catch((error: unknown) => this.log('warn', `heartbeat: ${(error as Error).message}`))
        .finally(() => (beating = false));
    }, this.intervalMs);
    timer.unref();
    return () => clearInterval(timer);
  }

  /** Tells the server this executor is alive and what it serves; the answer sets the interval. */
  private async heartbeat(targets: PassReport['targets']): Promise<void> {
    const answer = await this.options.queue.heartbeat({
      executorId: this.executorId,
      name: this.options.name,
      kind: this.options.kind,
      version: this.options.version,
      // Each target with the actions its plugin runs: the server asks restores only of those that restore.
      targets: targets.map((t) => ({ ...t, actions: this.actionsOf(t.pluginName) })),
    });
    this.intervalMs = answer.intervalSeconds * 1000;
  }

  private async takeInventory(target: CleanupTarget, signal: AbortSignal): Promise<InventoryReportSummary> {
    let inventory: Awaited<ReturnType<CleanupRouter['inventory']>>;
    try {
      inventory = await this.router.inventory(this.served(target.pluginName)!, target, signal);
    } catch (error) {
      inventory = { complete: false, error: (error as Error).message, items: [] };
    }
    const listed = { at: monotonicMs(), observedAt: Date.parse(inventory.observedAt ?? '') };
    const summary: InventoryReportSummary = {
      targetKey: target.targetKey,
      pluginName: target.pluginName,
      complete: inventory.complete,
      items: inventory.items.length,
      ...(inventory.error ? { error: inventory.error.slice(0, 4000) } : {}),
    };
    if (!inventory.complete) {
      this.log(
        'warn',
        `${targetLabel(target)}: inventory incomplete (${inventory.error ?? 'no reason'}); nothing is cleaned there in this pass`,
      );
    }
    try {
      summary.response = await this.options.queue.inventory({
        executorId: this.executorId,
        targetKey: target.targetKey,
        pluginName: target.pluginName,
        complete: inventory.complete,
        ...(summary.error ? { error: summary.error } : {}),
        items: inventory.items,
        // The target's clock carried forward to now (on a clock that never steps). A plugin
        // without a clock of its own attests none: the executor's would only repeat its host's.
        ...(Number.isFinite(listed.observedAt)
          ? { observedAt: new Date(listed.observedAt + (monotonicMs() - listed.at)).toISOString() }
          : {}),
      });
      if (summary.response.suspect !== undefined) {
        this.log(
          'warn',
          `${targetLabel(target)}: the server held the inventory back as suspect (${summary.response.suspect}); nothing is cleaned there in this pass`,
        );
      }
    } catch (error) {
      // The server did not take the inventory: it must not see this target as listed.
      summary.complete = false;
      summary.error = `the server did not take the inventory: ${(error as Error).message}`.slice(0, 4000);
      this.log('warn', `${targetLabel(target)}: ${summary.error}`);
    }
    return summary;
  }

  private async executeDueJobs(targets: CleanupTarget[], signal: AbortSignal, report: PassReport) {
    const concurrency = this.options.concurrency ?? 64;
    const batch = this.options.claimBatch ?? concurrency * 4;
    // Each running job's requests listen on the pass's signal, the archive's lists at once (the
    // kubernetes plugin's 13 kinds): up to 16 per job are no leak.
    setMaxListeners(Math.max(getMaxListeners(signal), concurrency * 16 + 10), signal);
    const byKey = new Map(targets.map((t) => [t.targetKey, t]));
    const seen = new Set<string>();
    while (!signal.aborted) {
      let jobs: CleanupJob[];
      try {
        ({ jobs } = await this.options.queue.claim({
          executorId: this.executorId,
          targetKeys: [...byKey.keys()],
          // Every action some plugin runs (what servers before `pluginActions` read), and each
          // plugin's own: a job goes only to an executor that runs its action for its plugin.
          actions: [...new Set(this.options.plugins.flatMap((p) => this.actionsOf(p.plugin.name)))],
          pluginActions: Object.fromEntries(
            this.options.plugins.map((p) => [p.plugin.name, this.actionsOf(p.plugin.name)]),
          ),
          max: batch,
          leaseSeconds: this.options.leaseSeconds ?? 300,
        }));
      } catch (error) {
        report.errors.push(`claim: ${(error as Error).message}`);
        return;
      }
      // A job failed in this pass may be claimable again after its backoff: not in this pass.
      const fresh = jobs.filter((j) => !seen.has(j.id));
      for (const job of fresh) seen.add(job.id);
      await forEachLimited(fresh, concurrency, async (job) => {
        report.jobs.push(await this.executeJob(job, byKey.get(job.targetKey), signal));
      });
      if (jobs.length < batch || fresh.length === 0) return;
    }
  }

  /** start → verifyAndClean → complete, for one job. */
  async executeJob(
    job: CleanupJob,
    target: CleanupTarget | undefined,
    signal: AbortSignal,
  ): Promise<JobReport> {
    const base = { id: job.id, targetKey: job.targetKey, namespaceName: job.namespaceName };
    // A call to the queue that failed: the lease is gone (another executor has the job), or the
    // server could not be asked (the lease will return the job).
    const queueFailure = (call: string, error: unknown): JobReport => {
      const report: JobReport =
        error instanceof TendError && error.code === 'TEND_CLEANUP_LEASE_LOST'
          ? { ...base, outcome: 'lease-lost', message: error.message }
          : { ...base, outcome: 'failed', message: `${call}: ${(error as Error).message}` };
      this.log('warn', `${job.namespaceName}: ${report.message}`);
      return report;
    };
    try {
      const started = await this.options.queue.start(job.id, { executorId: this.executorId });
      if (!started.proceed) {
        const outcome = started.finished ?? 'cancelled';
        this.log('info', `${job.namespaceName}: ${outcome} by the server: ${started.reason}`);
        return { ...base, outcome, message: started.reason };
      }
      job = started.job;
    } catch (error) {
      return queueFailure('start', error);
    }
    const { events, ...result } =
      job.action === 'restore'
        ? await this.restore(job, target, signal)
        : { ...(await this.verifyAndClean(job, target, signal)), events: undefined };
    this.log(
      result.outcome === 'failed' ? 'warn' : 'info',
      `${job.namespaceName} (${targetLabel(target ?? job)}): ${result.outcome}: ${result.message}`,
    );
    try {
      await this.options.queue.complete(job.id, {
        executorId: this.executorId,
        outcome: result.outcome,
        message: result.message.slice(0, 4000),
        ...(events ? { events } : {}),
      });
    } catch (error) {
      return queueFailure('complete', error);
    }
    return { ...base, ...result };
  }

  /** The plugin and target that serve the job here, or the failure to report. */
  private servedFor(
    job: CleanupJob,
    target: CleanupTarget | undefined,
  ): { served: ServedPlugin; target: CleanupTarget } | CleanupResult {
    const served = this.served(job.pluginName);
    if (!served) {
      return {
        outcome: 'failed',
        message: `this executor has no cleanup handlers for plugin "${job.pluginName}"`,
      };
    }
    if (!target || target.pluginName !== served.plugin.name) {
      return {
        outcome: 'failed',
        message: `this executor does not serve target ${job.targetKey} for plugin ${served.plugin.name}`,
      };
    }
    return { served, target };
  }

  /** A restore job: a restore session at this executor (restore-session.ts). */
  private async restore(
    job: CleanupJob,
    target: CleanupTarget | undefined,
    signal: AbortSignal,
  ): Promise<CleanupResult & { events?: TendEvent[] }> {
    const found = this.servedFor(job, target);
    if ('outcome' in found) return found;
    return runRestoreSession({
      queue: this.options.queue,
      executorId: this.executorId,
      ...found,
      job,
      protection: this.options.protection,
      hostId: this.options.hostId ?? this.options.name,
      signal,
      log: this.log,
    });
  }

  private async verifyAndClean(
    job: CleanupJob,
    target: CleanupTarget | undefined,
    signal: AbortSignal,
  ): Promise<CleanupResult> {
    const found = this.servedFor(job, target);
    if ('outcome' in found) return found;
    // Ownership is the server's to prove: a job that does not say how (a server older than this
    // executor, a namespace no longer recorded as owned) changes nothing.
    if (!job.ownership) {
      return {
        outcome: 'cancelled',
        message: `namespace ${job.namespaceName} left alone: the job does not say how the server knows tend created it (a server older than this executor?)`,
      };
    }
    try {
      return await this.router.verifyAndClean(
        found.served,
        found.target,
        this.options.dryRun ? { ...job, dryRun: true } : job,
        signal,
        {
          confirm: async () => {
            const again = await this.options.queue.start(job.id, { executorId: this.executorId });
            return again.proceed ? undefined : `the server withdrew the job: ${again.reason}`;
          },
          // Only a delete that must be archived gets the hook: a handler asked to archive without
          // it fails the job rather than delete unarchived.
          ...((job.archive ?? 'none') !== 'none'
            ? {
                archive: async (archive: EnvironmentArchive) => {
                  const stored = await this.options.queue.archive(job.id, this.executorId, archive);
                  this.log(
                    'info',
                    `${job.namespaceName}: archived ${stored.objects} object(s), ${stored.secrets} secret(s) until ${stored.expiresAt}`,
                  );
                },
              }
            : {}),
        },
      );
    } catch (error) {
      // Never reported done: the server retries it with backoff.
      return { outcome: 'failed', message: (error as Error).message };
    }
  }

  /** Passes until `signal` aborts; the current pass finishes its jobs first. */
  async run(signal: AbortSignal, onPass?: (report: PassReport) => void): Promise<void> {
    while (!signal.aborted) {
      try {
        const report = await this.runPass(signal);
        for (const error of report.errors) this.log('error', error);
        onPass?.(report);
        if (report.errors.length > 0 && !this.targets)
          this.log('warn', 'targets not found yet; trying again next pass');
      } catch (error) {
        // A pass never takes the executor down: the next one starts over.
        this.log('error', `the pass failed: ${(error as Error).message}`);
      }
      await sleep(this.intervalMs, signal);
    }
    this.bus.close();
  }
}

/** Runs `fn` over the items, at most `limit` at once. */
async function forEachLimited<T>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
