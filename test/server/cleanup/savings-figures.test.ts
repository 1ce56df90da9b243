/**
 * Small savings are shown, not rounded away: a deletion undone after 14 seconds freed 0.0039
 * environment-hours, which `tend cleanup report` and the dashboard's Savings page printed as 0.0
 * and 0.00. Figures keep two significant digits below 1, and money below one cent too.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FreedView, SavingsReport } from '../../../src/api/savings.js';
import { formatFigure, formatMoney } from '../../../src/cleanup/format.js';
import { cleanupReportCommand } from '../../../src/commands/cleanup-report.js';
import { savingsPage } from '../../../src/server/dashboard/pages/savings.js';

/** 14 seconds of one environment with 1 CPU and 1 GiB requested; a third of a tenth of a cent. */
const hours = 14 / 3600;
const freed: FreedView = { environmentHours: hours, cpuHours: hours, gibHours: hours, cost: 0.00031 };
const none: FreedView = { environmentHours: 0, cpuHours: 0, gibHours: 0, cost: 0 };
const report: SavingsReport = {
  serverTime: '2026-03-30T12:00:00.000Z',
  since: '2026-02-28T12:00:00.000Z',
  method: 'freed = requests × hours',
  prices: { cpuHour: 0.04, gibHour: 0.005 },
  total: freed,
  byAction: { delete: freed, pause: none },
  projects: [{ project: 'shop', delete: freed, pause: none, total: freed }],
  days: [{ day: '2026-03-30', project: 'shop', action: 'delete', ...freed }],
  environments: [
    {
      environmentId: 'env-1',
      project: 'shop',
      environment: 'dev',
      namespace: 'shop-dev',
      action: 'delete',
      basis: 'requests',
      cpuMillicores: 1000,
      memoryBytes: 2 ** 30,
      ongoing: false,
      ...freed,
    },
  ],
} as SavingsReport;

describe('savings figures', () => {
  let server: http.Server;
  let url: string;
  beforeAll(async () => {
    // The server's answer to the report route, over real HTTP.
    server = http.createServer((req, res) => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify(req.url?.startsWith('/api/v1/cleanup/report') ? report : {}));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('read with two significant digits below 1, one decimal to 100, whole above', () => {
    expect(formatFigure(0)).toBe('0');
    expect(formatFigure(hours)).toBe('0.0039');
    expect(formatFigure(0.5)).toBe('0.50');
    expect(formatFigure(1.2e-7)).toBe('0.00000012');
    expect(formatFigure(8)).toBe('8.0');
    expect(formatFigure(42.25)).toBe('42.3');
    expect(formatFigure(1234.5)).toBe('1235');
    expect(formatMoney(0.36)).toBe('0.36');
    expect(formatMoney(0)).toBe('0.00');
    expect(formatMoney(0.00031)).toBe('0.00031');
  });

  it('tend cleanup report shows a 14-second deletion, not 0.0', async () => {
    const cli = await cleanupReportCommand({ server: url, token: 'tend_test', since: '30d' });
    expect(cli.human).toMatch(/^shop\s+delete\s+0\.0039\s+0\.0039\s+0\.0039\s+0.00031$/m);
    expect(cli.human).toMatch(/^total\s+0\.0039\s+0\.0039\s+0\.0039\s+0.00031$/m);
  });

  it('the dashboard’s Savings page shows it too', () => {
    const page = String(
      savingsPage(
        report,
        { since: '30d', project: null, measure: 'environmentHours', bound: false },
        { csrf: 'x', user: 'alice' },
      ),
    );
    expect(page).toContain('<td>0.0039</td>');
    expect(page).toContain('<td>0.00031</td>');
  });
});
