/**
 * The Savings page (`/savings`): what cleanup freed, per project and week, deletions against
 * pauses (savings-chart.ts), with the figures per project and environment and how they were
 * estimated — the same report as `GET /api/v1/cleanup/report` and `tend cleanup report`, of the
 * projects the principal sees (a project-bound token's, a person's with a role).
 */
import { Type } from 'typebox';
import { visibleProjects } from '../../auth.js';
import { canSee, narrowTo } from '../../db/visible-projects.js';
import type { FreedView, SavingsReport } from '../../../api/savings.js';
import { sinceOf } from '../../routes/cleanup-report.js';
import type { App, ServerServices } from '../../services.js';
import { formatFigure, formatMoney } from '../../../cleanup/format.js';
import type { PageSession } from '../common/elements.js';
import { html, type Html } from '../common/html.js';
import { layout, messagePage } from '../common/layout.js';
import { dropEmptyQueryFields, hidden } from '../common/route-options.js';
import { notVisible, send, sessionGuards } from '../common/session.js';
import { measureNames, savingsChart, savingsWeeks, type SavingsMeasure } from './savings-chart.js';

const SavingsQuery = Type.Object({
  since: Type.Optional(Type.String({ maxLength: 64 })),
  project: Type.Optional(Type.String({ maxLength: 253 })),
  measure: Type.Optional(
    Type.Union([
      Type.Literal('cost'),
      Type.Literal('cpuHours'),
      Type.Literal('gibHours'),
      Type.Literal('environmentHours'),
    ]),
  ),
});

/** Most projects drawn a chart of their own. */
const maxProjectCharts = 12;
const money = (n: number | null) => (n === null ? '—' : formatMoney(n));

/** The headings of `figures`' cells. */
const figureHeadings = html`<th>Environment-hours</th>
  <th>CPU-hours</th>
  <th>GiB-hours</th>
  <th>Cost</th>`;

function figures(f: FreedView): Html {
  return html`<td>${formatFigure(f.environmentHours)}</td>
    <td>${formatFigure(f.cpuHours)}</td>
    <td>${formatFigure(f.gibHours)}</td>
    <td>${money(f.cost)}</td>`;
}

/** The figure the bars show: money when the server has prices, else CPU-hours when known, else environment-hours. */
function defaultMeasure(report: SavingsReport): SavingsMeasure {
  if (report.total.cost !== null) return 'cost';
  return report.total.cpuHours > 0 ? 'cpuHours' : 'environmentHours';
}

export function savingsPage(
  report: SavingsReport,
  view: { since: string; project: string | null; measure: SavingsMeasure; bound: boolean },
  session: PageSession,
): Html {
  const link = (measure: SavingsMeasure) => {
    const q = new URLSearchParams({ since: view.since, measure });
    if (view.project) q.set('project', view.project);
    return measure === view.measure
      ? html`<strong>${measureNames[measure]}</strong>`
      : html`<a href="/savings?${q.toString()}">${measureNames[measure]}</a>`;
  };
  const charts = [
    savingsChart(
      savingsWeeks(report, view.measure, view.project),
      view.measure,
      view.project ? `project ${view.project}` : 'all projects',
      'savings-chart',
    ),
    ...(view.project
      ? []
      : report.projects
          .slice(0, maxProjectCharts)
          .map((p, i) =>
            savingsChart(
              savingsWeeks(report, view.measure, p.project),
              view.measure,
              `project ${p.project}`,
              `savings-chart-${i}`,
            ),
          )),
  ];
  return layout(
    'Savings',
    html`<h1>What cleanup saved</h1>
      <p>
        The last ${view.since} (since ${report.since.slice(0, 16).replace('T', ' ')}
        UTC)${view.project ? html`, project <strong>${view.project}</strong>` : ''}${
          report.total.cost !== null
            ? html`, at ${report.prices.cpuHour ?? 0} per CPU-hour and ${report.prices.gibHour ?? 0} per
              GiB-hour`
            : html` ·
                <span class="muted"
                  >no prices: start the server with --price-cpu-hour and --price-gib-hour</span
                >`
        }.
      </p>
      <p class="muted">Method: ${report.method}.</p>
      <p>
        Show: ${(['cost', 'cpuHours', 'gibHours', 'environmentHours'] as const).map((m) => html`${link(m)} `)}
      </p>
      ${charts}
      <h2>Per project</h2>
      ${
        report.projects.length === 0
          ? html`<p class="muted">Nothing was deleted or paused by cleanup in this window.</p>`
          : html`<table id="savings-projects">
              <thead>
                <tr>
                  <th>Project</th>
                  <th>Action</th>
                  ${figureHeadings}
                </tr>
              </thead>
              <tbody>
                ${report.projects.flatMap((p) =>
                  (['delete', 'pause'] as const).map(
                    (a) =>
                      html`<tr>
                        <td>
                          ${view.bound ? p.project : html`<a href="/savings?project=${encodeURIComponent(p.project)}&since=${view.since}">${p.project}</a>`}
                        </td>
                        <td>${a === 'delete' ? 'deletions' : 'pauses'}</td>
                        ${figures(p[a])}
                      </tr>`,
                  ),
                )}
                <tr>
                  <td><strong>total</strong></td>
                  <td></td>
                  ${figures(report.total)}
                </tr>
              </tbody>
            </table>`
      }
      ${
        report.environments.length === 0
          ? ''
          : html`<h2>Per environment</h2>
              <table id="savings-environments">
                <thead>
                  <tr>
                    <th>Project</th>
                    <th>Environment</th>
                    <th>Namespace</th>
                    <th>Action</th>
                    <th>Requested</th>
                    ${figureHeadings}
                  </tr>
                </thead>
                <tbody>
                  ${report.environments.map(
                    (e) =>
                      html`<tr>
                        <td>${e.project}</td>
                        <td><a href="/environments/${e.environmentId}">${e.environment}</a></td>
                        <td>${e.namespace}</td>
                        <td>${e.action}${e.ongoing ? ' (now)' : ''}</td>
                        <td>
                          ${
                            e.basis === 'weight'
                              ? html`<span class="muted">unknown: by weight</span>`
                              : `${e.cpuMillicores}m CPU, ${(e.memoryBytes / 2 ** 20).toFixed(0)} MiB`
                          }
                        </td>
                        ${figures(e)}
                      </tr>`,
                  )}
                </tbody>
              </table>
              ${report.environmentsTruncated ? html`<p class="muted">Only the first 200 environments are listed.</p>` : ''}`
      }`,
    session,
  );
}

/** `GET /savings`. */
export function register(app: App, services: ServerServices): void {
  const { requireSession } = sessionGuards(services);
  app.get(
    '/savings',
    { schema: { ...hidden, querystring: SavingsQuery }, preValidation: dropEmptyQueryFields },
    async (request, reply) => {
      const session = await requireSession(request, reply);
      if (!session) return reply;
      const q = request.query as { since?: string; project?: string; measure?: SavingsMeasure };
      const since = q.since ?? '84d';
      let sinceMs: number;
      try {
        sinceMs = sinceOf(since);
      } catch (error) {
        return send(reply, messagePage('Bad window', (error as Error).message, session), 400);
      }
      const visible = visibleProjects(session.principal);
      if (q.project !== undefined && !canSee(visible, q.project)) {
        return send(reply, messagePage('Forbidden', notVisible(session.principal, q.project), session), 403);
      }
      // A principal that sees one project sees its savings (no links to narrow further).
      const only = visible !== 'all' && visible.size === 1 ? [...visible][0] : undefined;
      const project = q.project ?? only ?? null;
      const report = await services.savings.report(sinceMs, narrowTo(visible, project ?? undefined));
      const measure = q.measure ?? defaultMeasure(report);
      return send(
        reply,
        savingsPage(report, { since, project, measure, bound: only !== undefined }, session),
      );
    },
  );
}
