/**
 * The savings report for the API, the dashboard and /metrics: the spells the database keeps
 * (`repositories/cleanup-savings.ts`) worked out over a window (`savings.ts`), with the server's
 * prices (`--price-cpu-hour`, `--price-gib-hour`). /metrics reads the last 30 days, reworked at
 * most once a minute, so that a scrape every few seconds costs the database nothing more.
 */
import type { Kysely } from 'kysely';
import type { SavingsReport } from '../../api/savings.js';
import { CleanupSavingsRepository } from '../db/repositories/cleanup-savings.js';
import type { Database } from '../db/schema.js';
import { escapeLabel } from '../metrics.js';
import { savingsReport, type SavingsPrices } from './savings.js';

const dayMs = 86_400_000;
/** The window of the /metrics gauges. */
export const metricsWindowDays = 30;
const metricsCacheMs = 60_000;

export class CleanupSavings {
  private readonly repository: CleanupSavingsRepository;
  private cached: { at: number; report: Promise<SavingsReport> } | undefined;

  constructor(
    reader: Kysely<Database>,
    readonly prices: SavingsPrices,
    private readonly now: () => Date,
  ) {
    this.repository = new CleanupSavingsRepository(reader);
  }

  /** What cleanup freed from `sinceMs` ago until now (of one project, when given). */
  async report(sinceMs: number, project?: string): Promise<SavingsReport> {
    const now = this.now();
    const spells = await this.repository.spells(project);
    return savingsReport(spells, { since: new Date(now.getTime() - sinceMs), now }, this.prices);
  }

  /** The last 30 days over every project, for /metrics (at most a minute old). */
  forMetrics(): Promise<SavingsReport> {
    const at = this.now().getTime();
    if (!this.cached || at - this.cached.at > metricsCacheMs || at < this.cached.at) {
      const report = this.report(metricsWindowDays * dayMs);
      this.cached = { at, report };
      report.catch(() => (this.cached = undefined));
    }
    return this.cached.report;
  }
}

/** The savings gauges in Prometheus' exposition format (per project and action, the last 30 days). */
export function renderSavingsMetrics(report: SavingsReport): string {
  const gauges = [
    [
      'tend_cleanup_freed_environment_hours',
      'environmentHours',
      'Hours environments were deleted or paused by cleanup',
    ],
    [
      'tend_cleanup_freed_cpu_hours',
      'cpuHours',
      'CPU core-hours freed by cleanup (requests before the job × hours away)',
    ],
    [
      'tend_cleanup_freed_gib_hours',
      'gibHours',
      'Memory GiB-hours freed by cleanup (requests before the job × hours away)',
    ],
    ['tend_cleanup_saved_cost', 'cost', 'What the freed CPU- and GiB-hours cost at the server prices'],
  ] as const;
  const lines: string[] = [];
  for (const [name, field, help] of gauges) {
    if (field === 'cost' && report.total.cost === null) continue;
    lines.push(`# HELP ${name} ${help}, last ${metricsWindowDays} days, by project and action.`);
    lines.push(`# TYPE ${name} gauge`);
    for (const p of report.projects) {
      for (const action of ['delete', 'pause'] as const) {
        const value = p[action][field] ?? 0;
        lines.push(`${name}{project="${escapeLabel(p.project)}",action="${action}"} ${value}`);
      }
    }
  }
  return lines.join('\n') + (lines.length > 0 ? '\n' : '');
}
