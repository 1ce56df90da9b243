/**
 * The planning loop of `tend server`: a planning pass every `--cleanup-interval` (the first one
 * right away). Replicas all run the loop; the lease in the database lets one pass run at a time.
 * A failed pass is logged and the next one tried at the next tick; stopping waits for the pass
 * in flight.
 */
import { startPeriodic } from '../periodic.js';
import type { PlanningPass } from './pass.js';

export interface PlanningLoop {
  stop(): Promise<void>;
}

export interface PlanningLog {
  info(details: Record<string, unknown>, message: string): void;
  warn(details: Record<string, unknown>, message: string): void;
}

export function startPlanningLoop(pass: PlanningPass, log: PlanningLog): PlanningLoop {
  return startPeriodic(
    pass.settings.intervalMs,
    async () => {
      const report = await pass.run();
      if (report && report.outcome !== 'ok') {
        log.warn({ ...report }, `cleanup planning pass ${report.outcome}: ${report.note ?? ''}`);
      } else if (report && (report.planned > 0 || report.cancelled > 0 || report.breakersOpened.length > 0)) {
        log.info({ ...report }, `cleanup: ${report.planned} job(s) planned, ${report.cancelled} cancelled`);
      }
    },
    (err) => log.warn({ err }, 'cleanup planning pass failed; retrying at the next interval'),
  );
}
