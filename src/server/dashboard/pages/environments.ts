/**
 * The environments list (`/`): a search and filter form, the environments per state, the states
 * chart (environments-chart.ts) and one row per environment with its next cleanup decision.
 */
import type { EnvironmentView } from '../../../api/views.js';
import { visibleProjects } from '../../auth.js';
import { narrowTo, type VisibleProjects } from '../../db/visible-projects.js';
import { DashboardCleanupRepository } from '../../db/repositories/dashboard-cleanup.js';
import { decodeCursor } from '../../db/repositories/environments.js';
import { listFilter, ListQuery, maxSearchLength } from '../../environment-queries.js';
import type { App, ServerServices } from '../../services.js';
import { environmentView } from '../../views.js';
import { decisionItem, kindBadge, type DecisionItem } from '../common/cleanup-parts.js';
import { activitySource, when, type PageSession } from '../common/elements.js';
import { html, raw, relativeTime, type Html } from '../common/html.js';
import { layout, messagePage } from '../common/layout.js';
import { dropEmptyQueryFields, hidden } from '../common/route-options.js';
import { send, sessionGuards } from '../common/session.js';
import { firstDay, stateDays, statesChart } from './environments-chart.js';

export interface ListPageInput {
  items: EnvironmentView[];
  /** The "Next" cell of each environment (its next cleanup decision), by id. */
  next: Map<string, Html>;
  nextCursor: string | null;
  filter: { search?: string; project?: string; state?: string; environment?: string };
  /** Environments per state under the filter, the state itself left out. */
  counts: Record<string, number>;
  /** Environments by state over time (environments-chart.ts). */
  chart: Html;
  now: Date;
}

/** "All 12 · active 9 · cleaned 3": each a link to the list in that state, the filter kept. */
function stateCounts(filter: ListPageInput['filter'], counts: Record<string, number>): Html {
  const link = (state: string | undefined, label: string, n: number) => {
    const query = new URLSearchParams();
    for (const [k, v] of Object.entries({ ...filter, state })) if (v) query.set(k, v);
    const current = (filter.state || undefined) === state;
    return html`<a
      href="/${query.size > 0 ? `?${query.toString()}` : ''}"
      data-state="${state ?? 'all'}"
      ${current ? raw('aria-current="page"') : ''}
      >${label} <strong>${n}</strong></a
    >`;
  };
  const states = Object.keys(counts).sort();
  const all = Object.values(counts).reduce((a, b) => a + b, 0);
  return html`<nav class="counts" aria-label="Environments per state">
    ${link(undefined, 'All', all)} ${states.map((state) => link(state, state, counts[state] ?? 0))}
  </nav>`;
}

export function environmentsPage(input: ListPageInput, session: PageSession): Html {
  const { items, filter, now } = input;
  const nextQuery = new URLSearchParams();
  for (const [k, v] of Object.entries(filter)) if (v) nextQuery.set(k, v);
  if (input.nextCursor) nextQuery.set('cursor', input.nextCursor);
  return layout(
    'Environments',
    html`<h1>Environments</h1>
      <form class="filters" method="get" action="/" role="search">
        <label
          >Search
          <input
            type="search"
            name="search"
            value="${filter.search ?? ''}"
            maxlength="${maxSearchLength}"
            placeholder="project, environment, namespace or owner"
        /></label>
        <label>Project <input name="project" value="${filter.project ?? ''}" /></label>
        <label>Environment <input name="environment" value="${filter.environment ?? ''}" /></label>
        <label
          >State
          <select name="state">
            <option value="">any</option>
            <option value="active" ${filter.state === 'active' ? raw(' selected') : ''}>active</option>
            <option value="paused" ${filter.state === 'paused' ? raw(' selected') : ''}>paused</option>
            <option value="cleaned" ${filter.state === 'cleaned' ? raw(' selected') : ''}>cleaned</option>
          </select></label
        >
        <button type="submit">Filter</button>
      </form>
      ${stateCounts(filter, input.counts)} ${input.chart}
      <table id="environments" class="cards">
        <thead>
          <tr>
            <th>Project</th>
            <th>Environment</th>
            <th>Namespace</th>
            <th>Owner</th>
            <th>Last activity</th>
            <th>State</th>
            <th>Protected</th>
            <th>Next</th>
          </tr>
        </thead>
        <tbody>
          ${
            items.length === 0
              ? html`<tr>
                  <td colspan="8" class="muted">
                    No environments${Object.values(filter).some(Boolean) ? ' match' : ' yet'}.
                  </td>
                </tr>`
              : items.map(
                  (e) =>
                    html`<tr data-environment-id="${e.id}">
                      <td data-label="Project">${e.project}</td>
                      <td data-label="Environment">
                        <a href="/environments/${encodeURIComponent(e.id)}">${e.name}</a>
                      </td>
                      <td data-label="Namespace">${e.namespace}</td>
                      <td data-label="Owner">${e.owner ?? '—'}</td>
                      <td data-label="Last activity">
                        <time datetime="${e.lastActivity.at}" title="${e.lastActivity.at}"
                          >${relativeTime(e.lastActivity.at, now)}</time
                        >
                        <span class="muted">${activitySource(e.lastActivity)}</span>
                      </td>
                      <td data-label="State"><span class="badge ${e.state}">${e.state}</span></td>
                      <td data-label="Protected">
                        ${e.protected ? html`<span class="badge protected">protected</span>` : 'no'}
                      </td>
                      <td data-label="Next" class="next-cell">${input.next.get(e.id) ?? ''}</td>
                    </tr>`,
                )
          }
        </tbody>
      </table>
      ${input.nextCursor ? html`<p><a href="/?${nextQuery.toString()}" rel="next">Next page →</a></p>` : ''}`,
    session,
  );
}

/**
 * The list's "Next" cell: action, due time and reason of the environment's next decision; for a
 * cleaned environment, when it was cleaned and by which job (or by hand, `tend cleanup env`).
 */
function nextCell(
  d: DecisionItem | undefined,
  environment: {
    hasPolicy: boolean;
    /** When a cleaned environment was cleaned (null: not cleaned). */
    cleanedAt: string | null;
    lastActivityAt: string;
    /** Its latest done delete job. */
    cleanedBy: { id: string; finishedAt: string } | undefined;
  },
  now: Date,
): Html {
  if (environment.cleanedAt !== null) {
    const by = environment.cleanedBy;
    // A job that finished before the environment's last use did not clean what is gone now.
    return html`<span class="muted"
      >cleaned ${when(environment.cleanedAt, now)}
      ${
        by && by.finishedAt >= environment.lastActivityAt
          ? html`by cleanup job <code title="${by.id}">${by.id.slice(0, 8)}</code>`
          : 'by hand (`tend cleanup env`) or found gone'
      }</span
    >`;
  }
  if (!d) {
    return html`<span class="muted"
      >${environment.hasPolicy ? 'not planned yet' : 'no cleanup policy'}</span
    >`;
  }
  return html`<span class="next"
      >${kindBadge(d, now)} ${d.action}
      ${d.kind === 'blocked' ? '' : d.kind === 'due' ? html`<strong>now</strong>` : when(d.dueAt, now)}</span
    >
    <div class="muted sentence">${d.sentence}</div>`;
}

/** Order of what matters most for an environment's "Next": the soonest due, blocked last. */
function nextRank(d: DecisionItem): [number, string] {
  return [d.kind === 'blocked' ? 1 : 0, d.dueAt];
}

/** The decision to show in an environment's "Next" column, per environment id. */
async function nextDecisions(
  reads: DashboardCleanupRepository,
  environmentIds: string[],
): Promise<Map<string, DecisionItem>> {
  const next = new Map<string, DecisionItem>();
  for (const row of await reads.decisionsOf(environmentIds)) {
    const d = decisionItem(row);
    const current = next.get(d.environmentId);
    if (!current) {
      next.set(d.environmentId, d);
      continue;
    }
    const [a, b] = [nextRank(d), nextRank(current)];
    if (a[0] < b[0] || (a[0] === b[0] && a[1] < b[1])) next.set(d.environmentId, d);
  }
  return next;
}

/** The job that cleaned each cleaned environment: its last finished, done delete job (if any). */
async function cleaningJobs(
  reads: DashboardCleanupRepository,
  environmentIds: string[],
): Promise<Map<string, { id: string; finishedAt: string }>> {
  const byEnvironment = new Map<string, { id: string; finishedAt: string }>();
  // Oldest first: the last one written for an environment is its latest.
  for (const row of await reads.doneDeleteJobs(environmentIds)) {
    if (row.finished_at)
      byEnvironment.set(row.environment_id, { id: row.id, finishedAt: String(row.finished_at) });
  }
  return byEnvironment;
}

/** The "Next" cell of each listed environment, by id. */
async function nextCells(
  reads: DashboardCleanupRepository,
  items: EnvironmentView[],
  now: Date,
): Promise<Map<string, Html>> {
  const [decisions, cleanedBy] = await Promise.all([
    nextDecisions(
      reads,
      items.map((e) => e.id),
    ),
    cleaningJobs(
      reads,
      items.filter((e) => e.state === 'cleaned').map((e) => e.id),
    ),
  ]);
  return new Map(
    items.map((e) => [
      e.id,
      nextCell(
        decisions.get(e.id),
        {
          hasPolicy: e.policy !== null,
          cleanedAt: e.state === 'cleaned' ? (e.cleanedAt ?? e.lastActivity.at) : null,
          lastActivityAt: e.lastActivity.at,
          cleanedBy: cleanedBy.get(e.id),
        },
        now,
      ),
    ]),
  );
}

/** What the chart is of: "all projects", "project shop", "projects shop, web". */
function chartScope(projects: VisibleProjects): string {
  if (projects === 'all') return 'all projects';
  const names = [...projects].sort();
  return names.length === 1 ? `project ${names[0]}` : `projects ${names.join(', ') || '(none)'}`;
}

/** `GET /`. */
export function register(app: App, services: ServerServices): void {
  const { requireSession } = sessionGuards(services);
  const reads = new DashboardCleanupRepository(services.database.reader);
  app.get(
    '/',
    { schema: { ...hidden, querystring: ListQuery }, preValidation: dropEmptyQueryFields },
    async (request, reply) => {
      const session = await requireSession(request, reply);
      if (!session) return reply;
      const q = request.query;
      const now = services.now();
      let filter;
      try {
        filter = listFilter(q, session.principal, now);
      } catch (error) {
        return send(reply, messagePage('Bad filter', (error as Error).message, session), 400);
      }
      const cursor = q.cursor ? decodeCursor(q.cursor) : undefined;
      // The chart covers the project of the filter (else every project the principal sees), every state.
      const chartProjects = narrowTo(visibleProjects(session.principal), q.project);
      const [page, counts, history, today] = await Promise.all([
        services.environments.list(filter, q.limit ?? 50, cursor),
        services.environments.countByState({ ...filter, state: undefined }),
        services.environments.stateHistory(firstDay(now), chartProjects),
        services.environments.countByState({ visible: chartProjects }),
      ]);
      const items = page.items.map(environmentView);
      const input: ListPageInput = {
        items,
        next: await nextCells(reads, items, now),
        nextCursor: page.nextCursor,
        filter: { search: q.search, project: q.project, state: q.state, environment: q.environment },
        counts,
        chart: statesChart(stateDays(history, today, now), chartScope(chartProjects)),
        now,
      };
      return send(reply, environmentsPage(input, session));
    },
  );
}
