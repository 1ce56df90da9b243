/**
 * The savings report for the API, the dashboard and /metrics: the spells the database keeps
 * (`repositories/cleanup-savings.ts`) worked out over a window (`savings.ts`), with the server's
 * prices (`--price-cpu-hour`, `--price-gib-hour`). /metrics reads the last 30 days, reworked at
 * most once a minute, so that a scrape every few seconds costs the database nothing more.
 */
import type { Kysely } from 'kysely';
import type { SavingsReport } from '../../api/savings.js';
import type { VisibleProjects } from '../db/visible-projects.js';
import { CleanupSavingsRepository } from '../db/repositories/cleanup-savings.js';
import type { Database } from '../db/schema.js';
import { resumingCommands } from '../registry/plan.js';
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

  /** What cleanup freed from `sinceMs` ago until now (in the projects visible). */
  async report(sinceMs: number, visible: VisibleProjects = 'all'): Promise<SavingsReport> {
    const now = this.now();
    const spells = await this.repository.spells(resumingCommands, visible);
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
