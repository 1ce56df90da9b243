/**
 * `tend agent`: the cleanup executor as a process of its own, next to a cluster whose credentials
 * the server must not hold (`--kubeconfig`, `--context`), or on a developer machine for the exec
 * environments of that host (`--local`). It talks to the server's job queue over HTTP with an
 * `agent`-scope token — from `--token-file`, TEND_TOKEN or `tend login`, not the command line
 * (`ps` shows that) —, runs a pass every interval, and stops gracefully on SIGTERM/SIGINT: the
 * jobs in flight finish; a second signal exits at once (their leases return them to the queue).
 */
import os from 'node:os';
import type { CommandResult, GlobalOptions } from '../cli/output.js';
import { cliVersion } from '../version.js';
import { CleanupExecutor, type PassReport } from '../executor/executor.js';
import { targetLabel, type ExecutorLogLevel } from '../executor/log.js';
import { HttpCleanupQueue } from '../executor/http-queue.js';
import { TendError } from '../errors.js';
import { builtinPlugins } from '../plugins/builtin.js';
import type { PluginDefinition } from '../plugin/types.js';
import { servedPlugins } from '../executor/settings.js';
import { readTokenFile, resolveServer } from '../remote/credentials.js';
import { redactUrl } from '../redact.js';
import { localIdentity } from '../state/identity.js';
import { parseDuration } from '../cleanup/policy.js';
import { AgentHealth, staleAfterMs } from '../executor/health.js';

export interface AgentOptions extends GlobalOptions {
  server?: string;
  token?: string;
  tokenFile?: string;
  kubeconfig?: string;
  context?: string[];
  local?: boolean;
  /** `--plugin <module>` (repeatable): a third-party plugin whose environments this agent cleans. */
  plugin?: string[];
  /** `--set <plugin>.<key>=<value>` (repeatable): a plugin's executor settings. */
  set?: string[];
  interval?: string;
  dryRun?: boolean;
  once?: boolean;
  protectNamespace?: string[];
  systemNamespace?: string;
  concurrency?: number;
  /** `--health-port`: serve `/healthz` and `/readyz` for Kubernetes probes (executor/health.ts). */
  healthPort?: number;
}

export interface AgentData {
  executorId: string;
  passes: number;
  /** The last pass (with `--once`, the only one). */
  last?: PassReport;
}

export function parseInterval(value: string, flag = '--interval'): number {
  const ms = parseDuration(value);
  if (ms === undefined || ms < 1000 || ms > 86_400_000) {
    throw new TendError(
      'TEND_USAGE',
      `${flag} expects a duration from 1s to 1d such as 30s or 5m, got "${value}"`,
    );
  }
  return ms;
}

/** The pause between passes before the server's first answer, when --interval is not given. */
const defaultInterval = '30s';

const seconds = (ms: number) => `${ms / 1000} s`;

/** Why the passes run at another pace than the agent started with: the server asked for it. */
export function serverInterval(ms: number, flag: string | undefined): string {
  return (
    `a pass every ${seconds(ms)}, as the server asks (its --cleanup-interval` +
    (flag === undefined ? ')' : `; --interval ${flag} only paces the passes until the server answers)`)
  );
}

/** `namespaces`, `directories`, `buckets`: a plugin's word for its resources, in the plural. */
function plural(word: string): string {
  return /[^aeiou]y$/.test(word) ? `${word.slice(0, -1)}ies` : `${word}s`;
}

/**
 * One line per pass, for people: each target by its context (or host), its key after it, and how
 * many resources it listed, in its plugin's word (`resourceWord`, default `resource`).
 */
export function describePass(
  report: PassReport,
  resourceWord: (pluginName: string) => string = () => 'resource',
): string {
  const listed = report.inventories
    .map((i) => {
      const target = report.targets.find((t) => t.targetKey === i.targetKey);
      const word = plural(resourceWord(target?.pluginName ?? ''));
      return `${targetLabel(target ?? i)}: ${i.items} ${word}${i.complete ? '' : ` (incomplete: ${i.error ?? 'no reason'})`}`;
    })
    .join('; ');
  const counts = new Map<string, number>();
  for (const job of report.jobs) counts.set(job.outcome, (counts.get(job.outcome) ?? 0) + 1);
  const jobs = [...counts].map(([outcome, n]) => `${n} ${outcome}`).join(', ') || 'no jobs';
  const errors = report.errors.length ? `; errors: ${report.errors.join('; ')}` : '';
  return `${listed || 'no targets'}; ${jobs}${errors}`;
}

export async function agentCommand(
  options: AgentOptions,
  plugins: PluginDefinition[] = builtinPlugins(),
): Promise<CommandResult<AgentData>> {
  if (options.token !== undefined && options.tokenFile !== undefined) {
    throw new TendError('TEND_USAGE', 'give the token once: --token-file or --token, not both');
  }
  const connection = resolveServer({
    server: options.server,
    token: options.tokenFile !== undefined ? readTokenFile(options.tokenFile) : options.token,
  });
  if (!connection?.token) {
    throw new TendError(
      'TEND_USAGE',
      'tend agent needs a server and an agent-scope token (tend server token create --scope agent): ' +
        '--server URL (or TEND_SERVER_URL) and --token-file FILE (or TEND_TOKEN), or the ones of tend login',
    );
  }
  const { url: server, token } = connection;
  // Until the server's first heartbeat answer: from then on its `--cleanup-interval` paces the
  // passes (its planning passes and the 3 intervals after which a silent executor blocks its
  // targets are counted in it), and the log says so when that differs from --interval.
  const intervalMs = parseInterval(options.interval ?? defaultInterval);
  if (options.healthPort !== undefined && options.once) {
    throw new TendError('TEND_USAGE', '--health-port answers the probes of a running agent: not with --once');
  }
  const served = await servedPlugins(plugins, {
    ...(options.kubeconfig !== undefined ? { kubeconfig: options.kubeconfig } : {}),
    contexts: options.context ?? [],
    local: options.local === true,
    // Asked for nothing else (no --local, no --set for a plugin), the agent serves the current
    // context; `--plugin x --set x.root=…` serves only what it names.
    clustersByDefault: !options.local && (options.set ?? []).length === 0,
    pluginModules: options.plugin ?? [],
    sets: options.set ?? [],
    cwd: process.cwd(),
  });
  const resourceWordOf = (pluginName: string) =>
    served.find((s) => s.plugin.name === pluginName)?.plugin.cleanup.words?.resource ?? 'resource';
  const controller = new AbortController();
  const queue = new HttpCleanupQueue({
    server,
    token,
    signal: controller.signal,
    onRetry: (what, error, waitMs) => log('debug', `${what}: ${error.message}; retrying in ${waitMs} ms`),
  });
  const json = options.json === true;
  const log = (level: ExecutorLogLevel, message: string) => {
    if (level === 'debug' && !options.debug) return;
    if (json) process.stderr.write(JSON.stringify({ level, message, at: new Date().toISOString() }) + '\n');
    else process.stderr.write(`${level === 'info' ? '' : `${level}: `}${message}\n`);
  };
  const executor = new CleanupExecutor({
    queue,
    plugins: served,
    protection: {
      patterns: options.protectNamespace ?? [],
      systemName: options.systemNamespace ?? 'tend-system',
    },
    hostId: localIdentity().hostId,
    kind: 'agent',
    name: `tend agent on ${os.hostname()}`,
    version: cliVersion,
    intervalMs,
    ...(options.concurrency ? { concurrency: options.concurrency } : {}),
    // Every check, no action: the jobs this agent claims are verified and left alone.
    ...(options.dryRun ? { dryRun: true } : {}),
    log,
  });
  let passes = 0;
  let last: PassReport | undefined;
  const health = options.healthPort !== undefined ? new AgentHealth(staleAfterMs(intervalMs)) : undefined;
  let pacedBy = intervalMs;
  const onPass = (report: PassReport) => {
    passes++;
    last = report;
    health?.passEnded(report);
    if (executor.interval !== pacedBy) {
      pacedBy = executor.interval;
      log('info', serverInterval(pacedBy, options.interval));
    }
    // With --once the result carries the pass; otherwise one JSON line per pass.
    if (json && !options.once) process.stdout.write(JSON.stringify({ pass: passes, ...report }) + '\n');
    else log('info', `pass ${passes}: ${describePass(report, resourceWordOf)}`);
  };
  if (options.once) {
    onPass(await executor.runPass(controller.signal));
    const failed = last!.errors.length > 0 || last!.jobs.some((j) => j.outcome === 'failed');
    return { exitCode: failed ? 1 : 0, human: '', data: { executorId: executor.executorId, passes, last } };
  }
  let signalled = false;
  const onSignal = () => {
    if (signalled) process.exit(130);
    signalled = true;
    log('info', 'stopping: finishing the jobs in flight (a second signal exits at once)');
    controller.abort();
  };
  const probes = health
    ? await health.listen(options.healthPort!).catch((error: unknown) => {
        throw new TendError(
          'TEND_USAGE',
          `--health-port ${options.healthPort}: cannot listen: ${(error as Error).message}`,
        );
      })
    : undefined;
  if (probes) log('info', `health checks on port ${probes.port}: /healthz, /readyz`);
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  log(
    'info',
    `tend agent ${executor.executorId} started: ${redactUrl(server)}, a pass every ${seconds(intervalMs)} ` +
      `(${options.interval === undefined ? 'the default' : '--interval'}) until the server answers with its own interval`,
  );
  try {
    await executor.run(controller.signal, onPass);
  } finally {
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
    probes?.server.close();
  }
  log('info', 'tend agent stopped');
  return {
    exitCode: 0,
    human: '',
    data: { executorId: executor.executorId, passes, ...(last ? { last } : {}) },
  };
}
