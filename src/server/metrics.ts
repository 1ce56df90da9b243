/**
 * Prometheus metrics of one server process: ingest counts, batch latency, cleanup job outcomes
 * and planning pass durations kept in memory (each replica reports its own; Prometheus sums
 * them); environment counts and the cleanup gauges (blocked decisions, open breakers, executor
 * heartbeats) read from the database at scrape time.
 */

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
    const lines: string[] = [];
    lines.push('# HELP tend_ingest_events_total Events received by POST /api/v1/events, by result.');
    lines.push('# TYPE tend_ingest_events_total counter');
    lines.push(`tend_ingest_events_total{result="accepted"} ${this.acceptedEvents}`);
    lines.push(`tend_ingest_events_total{result="duplicate"} ${this.duplicateEvents}`);
    lines.push('# HELP tend_ingest_batches_total Batches received by POST /api/v1/events, by outcome.');
    lines.push('# TYPE tend_ingest_batches_total counter');
    for (const outcome of ['accepted', 'rejected']) {
      lines.push(`tend_ingest_batches_total{outcome="${outcome}"} ${this.batches.get(outcome) ?? 0}`);
    }
    lines.push('# HELP tend_ingest_batch_duration_seconds Time to validate and store one accepted batch.');
    lines.push('# TYPE tend_ingest_batch_duration_seconds histogram');
    latencyBuckets.forEach((le, i) => {
      lines.push(`tend_ingest_batch_duration_seconds_bucket{le="${le}"} ${this.bucketCounts[i] ?? 0}`);
    });
    lines.push(`tend_ingest_batch_duration_seconds_bucket{le="+Inf"} ${this.latencyCount}`);
    lines.push(`tend_ingest_batch_duration_seconds_sum ${this.latencySum}`);
    lines.push(`tend_ingest_batch_duration_seconds_count ${this.latencyCount}`);
    lines.push('# HELP tend_environments Environments in the registry, by state.');
    lines.push('# TYPE tend_environments gauge');
    for (const state of ['active', 'cleaned']) {
      lines.push(`tend_environments{state="${state}"} ${environments[state] ?? 0}`);
    }
    lines.push(
      '# HELP tend_cleanup_jobs_total Cleanup jobs by action and outcome (planned, done, cancelled, failed, retried).',
    );
    lines.push('# TYPE tend_cleanup_jobs_total counter');
    for (const [labels, n] of this.cleanupJobs) lines.push(`tend_cleanup_jobs_total{${labels}} ${n}`);
    lines.push('# HELP tend_cleanup_planning_pass_duration_seconds Time of one planning pass.');
    lines.push('# TYPE tend_cleanup_planning_pass_duration_seconds histogram');
    latencyBuckets.forEach((le, i) => {
      lines.push(
        `tend_cleanup_planning_pass_duration_seconds_bucket{le="${le}"} ${this.passBucketCounts[i] ?? 0}`,
      );
    });
    lines.push(`tend_cleanup_planning_pass_duration_seconds_bucket{le="+Inf"} ${this.passCount}`);
    lines.push(`tend_cleanup_planning_pass_duration_seconds_sum ${this.passSum}`);
    lines.push(`tend_cleanup_planning_pass_duration_seconds_count ${this.passCount}`);
    if (cleanup) {
      lines.push(
        '# HELP tend_cleanup_blocked Blocked cleanup decisions of the last planning pass, by reason.',
      );
      lines.push('# TYPE tend_cleanup_blocked gauge');
      for (const [reason, n] of Object.entries(cleanup.blocked)) {
        lines.push(`tend_cleanup_blocked{reason="${escapeLabel(reason)}"} ${n}`);
      }
      lines.push('# HELP tend_cleanup_breaker_open 1 while the circuit breaker of a project is open.');
      lines.push('# TYPE tend_cleanup_breaker_open gauge');
      for (const project of cleanup.breakers) {
        lines.push(`tend_cleanup_breaker_open{project="${escapeLabel(project)}"} 1`);
      }
      lines.push(
        '# HELP tend_executor_last_seen_seconds Seconds since an executor serving the target last heartbeated.',
      );
      lines.push('# TYPE tend_executor_last_seen_seconds gauge');
      for (const [target, age] of Object.entries(cleanup.executorsLastSeen)) {
        lines.push(`tend_executor_last_seen_seconds{target="${escapeLabel(target)}"} ${Math.max(0, age)}`);
      }
      lines.push(
        '# HELP tend_cleanup_last_pass_outcome The last planning pass ended so (1 for its outcome, 0 for the others).',
      );
      lines.push('# TYPE tend_cleanup_last_pass_outcome gauge');
      if (cleanup.lastPassOutcome !== null) {
        for (const outcome of ['ok', 'partial', 'failed', 'skipped']) {
          lines.push(
            `tend_cleanup_last_pass_outcome{outcome="${outcome}"} ${cleanup.lastPassOutcome === outcome ? 1 : 0}`,
          );
        }
      }
    }
    lines.push('# HELP tend_archives_total Environment archives stored, refused or pruned (per replica).');
    lines.push('# TYPE tend_archives_total counter');
    for (const outcome of ['stored', 'refused', 'pruned']) {
      lines.push(`tend_archives_total{outcome="${outcome}"} ${this.archiveOutcomes.get(outcome) ?? 0}`);
    }
    if (archives) {
      lines.push('# HELP tend_archives Environment archives kept for restore.');
      lines.push('# TYPE tend_archives gauge');
      lines.push(`tend_archives ${archives.count}`);
      lines.push('# HELP tend_archives_bytes Compressed size of the environment archives kept.');
      lines.push('# TYPE tend_archives_bytes gauge');
      lines.push(`tend_archives_bytes ${archives.bytes}`);
    }
    return lines.join('\n') + '\n';
  }
}
