/**
 * Prometheus metrics of one server process: ingest counts and batch latency kept in memory
 * (each replica reports its own; Prometheus sums them), environment counts read at scrape time.
 */

const latencyBuckets = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export class Metrics {
  private acceptedEvents = 0;
  private duplicateEvents = 0;
  private readonly batches = new Map<string, number>();
  private readonly bucketCounts = latencyBuckets.map(() => 0);
  private latencySum = 0;
  private latencyCount = 0;

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
  render(environments: Record<string, number>): string {
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
    return lines.join('\n') + '\n';
  }
}
