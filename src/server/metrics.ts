/**
 * Prometheus metrics of one server process: ingest counts, batch latency, cleanup job outcomes
 * and planning pass durations kept in memory (each replica reports its own; Prometheus sums
 * them); environment counts and the cleanup gauges (blocked decisions, open breakers, executor
 * heartbeats) read from the database at scrape time.
 */
import { EnvironmentStateSchema } from '../api/views.js';
import type { FreedView, SavingsReport } from '../api/savings.js';
import { metricsWindowDays } from './cleanup/savings-service.js';
import type { EnvironmentState } from './db/schema.js';

export interface CleanupGauges {
  /** Blocked decisions of the last pass by reason code. */
  blocked: Record<string, number>;
  /** Projects whose breaker is open. */
  breakers: string[];
  /** Seconds since an executor last heartbeated, by target. */
  executorsLastSeen: Record<string, number>;
  /** How the last planning pass ended (any replica's); null: none yet. */
  lastPassOutcome: string | null;
}

/** Every state the registry gives an environment: the API schema's, so a new state is reported too. */
const environmentStates: readonly EnvironmentState[] = EnvironmentStateSchema.anyOf.map(
  (literal) => literal.const,
);

export const escapeLabel = (v: string) => v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');

const latencyBuckets = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export class Metrics {
  private acceptedEvents = 0;
  private duplicateEvents = 0;
  private readonly batches = new Map<string, number>();
  private readonly bucketCounts = latencyBuckets.map(() => 0);
  private latencySum = 0;
  private latencyCount = 0;
  private readonly cleanupJobs = new Map<string, number>();
  private readonly passBucketCounts = latencyBuckets.map(() => 0);
  private passSum = 0;
  private passCount = 0;
  private readonly archiveOutcomes = new Map<string, number>();

  /** Environment archives stored, refused (invalid, too large) or pruned (expired). */
  recordArchive(outcome: 'stored' | 'refused' | 'pruned', count = 1): void {
    this.archiveOutcomes.set(outcome, (this.archiveOutcomes.get(outcome) ?? 0) + count);
  }

  /** A cleanup job reached an outcome: planned, done, cancelled, failed, retried. */
  recordCleanupJob(action: string, outcome: string): void {
    const key = `action="${escapeLabel(action)}",outcome="${escapeLabel(outcome)}"`;
    this.cleanupJobs.set(key, (this.cleanupJobs.get(key) ?? 0) + 1);
  }

  recordPlanningPass(seconds: number): void {
    this.passSum += seconds;
    this.passCount++;
    latencyBuckets.forEach((le, i) => {
      if (seconds <= le) this.passBucketCounts[i] = (this.passBucketCounts[i] ?? 0) + 1;
    });
  }

  recordBatch(outcome: 'accepted' | 'rejected', accepted = 0, duplicates = 0, seconds?: number): void {
    this.batches.set(outcome, (this.batches.get(outcome) ?? 0) + 1);
    this.acceptedEvents += accepted;
    this.duplicateEvents += duplicates;
    if (seconds !== undefined) {
      this.latencySum += seconds;
      this.latencyCount++;
      latencyBuckets.forEach((le, i) => {
        if (seconds <= le) this.bucketCounts[i] = (this.bucketCounts[i] ?? 0) + 1;
      });
    }
  }

  /** The exposition text (format 0.0.4). */
  render(
    environments: Record<string, number>,
    cleanup?: CleanupGauges,
    archives?: { count: number; bytes: number },
  ): string {
    const out = new Exposition();
    out.family('tend_ingest_events_total', 'counter', 'Events received by POST /api/v1/events, by result.', [
      ['{result="accepted"}', this.acceptedEvents],
      ['{result="duplicate"}', this.duplicateEvents],
    ]);
    out.family(
      'tend_ingest_batches_total',
      'counter',
      'Batches received by POST /api/v1/events, by outcome.',
      ['accepted', 'rejected'].map((outcome) => [`{outcome="${outcome}"}`, this.batches.get(outcome) ?? 0]),
    );
    out.histogram(
      'tend_ingest_batch_duration_seconds',
      'Time to validate and store one accepted batch.',
      this.bucketCounts,
      this.latencySum,
      this.latencyCount,
    );
    out.family(
      'tend_environments',
      'gauge',
      'Environments in the registry, by state.',
      environmentStates.map((state) => [`{state="${state}"}`, environments[state] ?? 0]),
    );
    out.family(
      'tend_cleanup_jobs_total',
      'counter',
      'Cleanup jobs by action and outcome (planned, done, cancelled, failed, retried).',
      [...this.cleanupJobs].map(([labels, n]) => [`{${labels}}`, n]),
    );
    out.histogram(
      'tend_cleanup_planning_pass_duration_seconds',
      'Time of one planning pass.',
      this.passBucketCounts,
      this.passSum,
      this.passCount,
    );
    if (cleanup) renderCleanupGauges(out, cleanup);
    out.family(
      'tend_archives_total',
      'counter',
      'Environment archives stored, refused or pruned (per replica).',
      ['stored', 'refused', 'pruned'].map((o) => [`{outcome="${o}"}`, this.archiveOutcomes.get(o) ?? 0]),
    );
    if (archives) {
      out.family('tend_archives', 'gauge', 'Environment archives kept for restore.', [['', archives.count]]);
      out.family('tend_archives_bytes', 'gauge', 'Compressed size of the environment archives kept.', [
        ['', archives.bytes],
      ]);
    }
    return out.text();
  }
}

function renderCleanupGauges(out: Exposition, cleanup: CleanupGauges): void {
  out.family(
    'tend_cleanup_blocked',
    'gauge',
    'Blocked cleanup decisions of the last planning pass, by reason.',
    Object.entries(cleanup.blocked).map(([reason, n]) => [`{reason="${escapeLabel(reason)}"}`, n]),
  );
  out.family(
    'tend_cleanup_breaker_open',
    'gauge',
    '1 while the circuit breaker of a project is open.',
    cleanup.breakers.map((project) => [`{project="${escapeLabel(project)}"}`, 1]),
  );
  out.family(
    'tend_executor_last_seen_seconds',
    'gauge',
    'Seconds since an executor serving the target last heartbeated.',
    Object.entries(cleanup.executorsLastSeen).map(([target, age]) => [
      `{target="${escapeLabel(target)}"}`,
      Math.max(0, age),
    ]),
  );
  const outcome = cleanup.lastPassOutcome;
  out.family(
    'tend_cleanup_last_pass_outcome',
    'gauge',
    'The last planning pass ended so (1 for its outcome, 0 for the others).',
    outcome === null
      ? []
      : ['ok', 'partial', 'failed', 'skipped'].map((o) => [`{outcome="${o}"}`, outcome === o ? 1 : 0]),
  );
}

/**
 * The savings gauges (per project and action, the last 30 days), in Prometheus' base units:
 * seconds and bytes. The hour-based names came first and stay, deprecated, with the same figures
 * in hours, until dashboards have moved to the new names.
 */
export function renderSavingsMetrics(report: SavingsReport): string {
  const out = new Exposition();
  const window = `last ${metricsWindowDays} days, by project and action`;
  const perAction = (value: (figures: FreedView) => number | null): [string, number][] =>
    report.projects.flatMap((p) =>
      (['delete', 'pause'] as const).map((action): [string, number] => [
        `{project="${escapeLabel(p.project)}",action="${action}"}`,
        value(p[action]) ?? 0,
      ]),
    );
  const gauges = [
    [
      'tend_cleanup_freed_environment_seconds',
      'tend_cleanup_freed_environment_hours',
      'Time environments were deleted or paused by cleanup (each environment counts 1)',
      (f: FreedView) => f.environmentHours * secondsPerHour,
      (f: FreedView) => f.environmentHours,
    ],
    [
      'tend_cleanup_freed_cpu_seconds',
      'tend_cleanup_freed_cpu_hours',
      'CPU core-seconds freed by cleanup (the CPU its pods requested before the job × the time away)',
      (f: FreedView) => f.cpuHours * secondsPerHour,
      (f: FreedView) => f.cpuHours,
    ],
    [
      'tend_cleanup_freed_memory_byte_seconds',
      'tend_cleanup_freed_gib_hours',
      'Memory byte-seconds freed by cleanup (the memory its pods requested before the job × the time away)',
      (f: FreedView) => f.gibHours * bytesPerGib * secondsPerHour,
      (f: FreedView) => f.gibHours,
    ],
  ] as const;
  for (const [name, , help, value] of gauges)
    out.family(name, 'gauge', `${help}, ${window}.`, perAction(value));
  if (report.total.cost !== null) {
    out.family(
      'tend_cleanup_saved_cost',
      'gauge',
      `What the freed CPU and memory cost at the server prices, ${window}.`,
      perAction((f) => f.cost),
    );
  }
  for (const [name, deprecated, help, , hours] of gauges) {
    out.family(
      deprecated,
      'gauge',
      `Deprecated, use ${name}: ${help}, in hours, ${window}.`,
      perAction(hours),
    );
  }
  return out.text();
}

const secondsPerHour = 3600;
const bytesPerGib = 1024 ** 3;

/** Metric families in the text exposition format: a HELP and a TYPE line, then the samples. */
class Exposition {
  private readonly lines: string[] = [];

  /** `samples`: the label set as written (`{a="b"}`, or empty) and the value. */
  family(name: string, type: 'counter' | 'gauge', help: string, samples: [string, number][]): void {
    this.lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
    for (const [labels, value] of samples) this.lines.push(`${name}${labels} ${value}`);
  }

  histogram(name: string, help: string, bucketCounts: number[], sum: number, count: number): void {
    this.lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} histogram`);
    latencyBuckets.forEach((le, i) => this.lines.push(`${name}_bucket{le="${le}"} ${bucketCounts[i] ?? 0}`));
    this.lines.push(`${name}_bucket{le="+Inf"} ${count}`, `${name}_sum ${sum}`, `${name}_count ${count}`);
  }

  text(): string {
    return this.lines.length > 0 ? this.lines.join('\n') + '\n' : '';
  }
}
