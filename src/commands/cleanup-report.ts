/**
 * `tend cleanup report [--since 30d] [--project P] [--json]`: what the server's cleanup saved —
 * resource-hours freed by deletions and pauses, per project and environment, in money when the
 * server has prices — and how it was estimated (`GET /api/v1/cleanup/report`).
 */
import { formatTable, type CommandResult } from '../cli/output.js';
import { formatFigure, formatMoney } from '../cleanup/format.js';
import { apiRequest } from '../remote/client.js';
import { requireServer } from '../remote/credentials.js';
import type { FreedView, SavingsReport } from '../api/savings.js';
import type { ServerCommandOptions } from './cleanup-server.js';

function cells(f: FreedView): string[] {
  return [
    formatFigure(f.environmentHours),
    formatFigure(f.cpuHours),
    formatFigure(f.gibHours),
    f.cost === null ? '-' : formatMoney(f.cost),
  ];
}

export async function cleanupReportCommand(
  options: ServerCommandOptions & { since?: string; project?: string },
): Promise<CommandResult<SavingsReport>> {
  const connection = requireServer(options);
  const since = options.since ?? '30d';
  const query = new URLSearchParams({ since });
  if (options.project) query.set('project', options.project);
  const report = await apiRequest<SavingsReport>(connection, `/api/v1/cleanup/report?${query.toString()}`);
  const priced = report.total.cost !== null;
  const lines: string[] = [
    `What cleanup freed in the last ${since} (since ${report.since.slice(0, 16).replace('T', ' ')} UTC)${
      priced
        ? `, at ${report.prices.cpuHour ?? 0} per CPU-hour and ${report.prices.gibHour ?? 0} per GiB-hour`
        : ''
    }:`,
    '',
  ];
  if (report.projects.length === 0) lines.push('Nothing was deleted or paused by cleanup in this window.');
  else {
    const header = ['PROJECT', 'ACTION', 'ENV-HOURS', 'CPU-HOURS', 'GIB-HOURS', 'COST'];
    const rows: string[][] = [];
    for (const p of report.projects) {
      for (const action of ['delete', 'pause'] as const) {
        if (p[action].environmentHours > 0) rows.push([p.project, action, ...cells(p[action])]);
      }
    }
    rows.push(['total', '', ...cells(report.total)]);
    lines.push(formatTable(header, rows));
    const weighted = report.environments.filter((e) => e.basis === 'weight').length;
    if (weighted > 0) {
      lines.push(
        '',
        `${weighted} environment(s) had no known pod requests: counted by weight (environment-hours only).`,
      );
    }
  }
  if (!priced)
    lines.push('', 'No prices: start the server with --price-cpu-hour and --price-gib-hour for money.');
  lines.push('', `Method: ${report.method}.`);
  return { data: report, human: lines.join('\n'), exitCode: 0 };
}
