/**
 * The Cleanup page (`/cleanup`): plan for the next 24 hours, blocked decisions, jobs, policies
 * with Enforce, breakers, the halt switch, executors and suspect inventories, unrecorded
 * namespaces; and its admin switches, each the same service call as its API route. Every name is
 * escaped by `html`.
 */
import { Type, type Static } from 'typebox';
import type { FastifyReply } from 'fastify';
import { TendError } from '../../../errors.js';
import { actorOf, allows, visibleProjects } from '../../auth.js';
import { DashboardCleanupRepository } from '../../db/repositories/dashboard-cleanup.js';
import type { App, ServerServices } from '../../services.js';
import {
  jobsTable,
  kindBadge,
  targetName,
  type DecisionItem,
  type TargetNames,
} from '../common/cleanup-parts.js';
import { postForm, when, type PageSession } from '../common/elements.js';
import { html, type Html } from '../common/html.js';
import { layout } from '../common/layout.js';
import { hidden } from '../common/route-options.js';
import { needs, send, sessionGuards, type DashboardSession } from '../common/session.js';
import { cleanupOverview, type CleanupOverview } from './cleanup-data.js';

/**
 * The attributes of a table of text only (no link or button to tab to): narrow screens scroll it
 * sideways (the layout's style), so it takes the keyboard focus itself — arrow keys then scroll
 * it — and is named by its heading for whoever lands on it.
 */
function scrollable(headingId: string): Html {
  return html`tabindex="0" aria-labelledby="${headingId}"`;
}

function decisionRows(
  items: DecisionItem[],
  now: Date,
  empty: string,
  showDue: boolean,
  names: TargetNames,
): Html {
  if (items.length === 0) {
    return html`<tr>
      <td colspan="6" class="muted">${empty}</td>
    </tr>`;
  }
  return html`${items.map(
    (d) =>
      html`<tr>
        <td>${showDue ? when(d.dueAt, now) : kindBadge(d, now)}</td>
        <td>
          <a href="/environments/${encodeURIComponent(d.environmentId)}">${d.project} / ${d.environment}</a>
        </td>
        <td>${d.namespace} <span class="muted">${targetName(d.targetKey, names)}</span></td>
        <td>${showDue ? kindBadge(d, now) : ''} ${d.action}</td>
        <td>${d.sentence}</td>
      </tr>`,
  )}`;
}

/** The halt switch and the last planning pass. */
function switchSection(
  o: CleanupOverview,
  session: PageSession,
  now: Date,
  adminOnly: (content: Html) => Html,
): Html {
  return html`<section id="switch" class="${o.halted ? 'halted' : 'running'}">
    ${
      o.halted
        ? html`<p>
            <strong>Cleanup is halted</strong> since ${o.haltedAt ?? '?'} by ${o.haltedBy ?? '?'}: nothing is
            planned or started.
          </p>`
        : html`<p><strong>Cleanup is running.</strong></p>`
    }
    <p class="muted">
      Last planning pass:
      ${o.lastPassAt ? html`${when(o.lastPassAt, now)} (${o.lastPassMs ?? '?'} ms)` : 'none yet'}.
    </p>
    ${
      o.lastPassOutcome && o.lastPassOutcome !== 'ok'
        ? html`<p class="warning" id="last-pass">
            <strong
              >The last planning pass
              ${o.lastPassOutcome === 'skipped' ? 'planned nothing' : o.lastPassOutcome === 'partial' ? 'left environments out' : 'failed'}:</strong
            >
            ${o.lastPassNote ?? 'no reason recorded'}
          </p>`
        : ''
    }
    <div class="actions">
      ${adminOnly(
        o.halted
          ? postForm(session, '/cleanup/resume', 'Unhalt cleanup')
          : postForm(session, '/cleanup/halt', 'Halt all cleanup'),
      )}
    </div>
  </section>`;
}

/** The plan for the next 24 hours and the blocked decisions. */
function planTables(o: CleanupOverview, now: Date, names: TargetNames): Html {
  return html`<h2>Plan for the next 24 hours</h2>
    <table id="cleanup-plan">
      <thead>
        <tr>
          <th>Due</th>
          <th>Environment</th>
          <th>Namespace</th>
          <th>Decision</th>
          <th>Why</th>
        </tr>
      </thead>
      <tbody>
        ${decisionRows(o.plan, now, 'Nothing is due within 24 hours.', true, names)}
      </tbody>
    </table>
    ${o.planTruncated ? html`<p class="muted">Only the first entries are shown; <code>tend cleanup plan</code> lists all.</p>` : ''}

    <h2>Blocked</h2>
    <table id="cleanup-blocked">
      <thead>
        <tr>
          <th>Reason</th>
          <th>Environment</th>
          <th>Namespace</th>
          <th>Action</th>
          <th>Why</th>
        </tr>
      </thead>
      <tbody>
        ${decisionRows(o.blocked, now, 'Nothing is blocked.', false, names)}
      </tbody>
    </table>`;
}

/** The policies of active environments, with Enforce for the dry-run ones. */
function policiesTable(
  o: CleanupOverview,
  session: PageSession,
  now: Date,
  adminOnly: (content: Html) => Html,
): Html {
  return html`<h2>Policies</h2>
    <table id="cleanup-policies">
      <thead>
        <tr>
          <th>Project</th>
          <th>Environment</th>
          <th>Policy</th>
          <th>Mode</th>
          <th></th>
        </tr>
      </thead>
      <tbody>
        ${
          o.policies.length === 0
            ? html`<tr>
                <td colspan="5" class="muted">No active environment has a cleanup policy.</td>
              </tr>`
            : o.policies.map(
                (p) =>
                  html`<tr>
                    <td>${p.project}</td>
                    <td>${p.environment}</td>
                    <td>${p.action} after ${p.afterInactivity} without activity</td>
                    <td>
                      <span class="badge mode-${p.mode}">${p.mode}</span>
                      ${p.enforced ? html`<span class="muted">enforced by ${p.enforced.by} ${when(p.enforced.at, now)}</span>` : ''}
                    </td>
                    <td>
                      ${
                        p.mode === 'dry-run'
                          ? adminOnly(
                              postForm(session, '/cleanup/enforce', 'Enforce', {
                                project: p.project,
                                environment: p.environment,
                              }),
                            )
                          : ''
                      }
                    </td>
                  </tr>`,
              )
        }
      </tbody>
    </table>`;
}

/** The open circuit breakers, with Reset. */
function breakersTable(
  o: CleanupOverview,
  session: PageSession,
  now: Date,
  adminOnly: (content: Html) => Html,
): Html {
  return html`<h2>Circuit breakers</h2>
    <table id="cleanup-breakers">
      <thead>
        <tr>
          <th>Project</th>
          <th>Opened</th>
          <th>Why</th>
          <th></th>
        </tr>
      </thead>
      <tbody>
        ${
          o.breakers.length === 0
            ? html`<tr>
                <td colspan="4" class="muted">All closed.</td>
              </tr>`
            : o.breakers.map(
                (b) =>
                  html`<tr>
                    <td>${b.project}</td>
                    <td>${when(b.openedAt, now)}</td>
                    <td>
                      ${b.due} of ${b.active} environments under enforced policies were due at once; nothing
                      of ${b.project} is cleaned until it is reset.
                    </td>
                    <td>
                      ${adminOnly(postForm(session, '/cleanup/breakers/reset', 'Reset', { project: b.project }))}
                    </td>
                  </tr>`,
              )
        }
      </tbody>
    </table>`;
}

/** The recent webhook deliveries. */
function deliveriesTable(o: CleanupOverview, now: Date): Html {
  return html`<h2 id="deliveries-heading">Webhook deliveries</h2>
    <p class="muted">
      <code>cleanup.warning</code> and <code>cleanup.done</code> to the webhooks of
      <code>tend server webhook add</code>: signed, retried with backoff until delivered or out of attempts.
    </p>
    <table id="cleanup-deliveries" ${scrollable('deliveries-heading')}>
      <thead>
        <tr>
          <th>Created</th>
          <th>Event</th>
          <th>Environment</th>
          <th>Webhook</th>
          <th>Status</th>
          <th>Attempts</th>
          <th>Last answer</th>
        </tr>
      </thead>
      <tbody>
        ${
          o.deliveries.length === 0
            ? html`<tr>
                <td colspan="7" class="muted">No deliveries.</td>
              </tr>`
            : o.deliveries.map(
                (d) =>
                  html`<tr>
                    <td>${when(d.createdAt, now)}</td>
                    <td>${d.event}</td>
                    <td>
                      ${
                        d.environmentId
                          ? html`<a href="/environments/${encodeURIComponent(d.environmentId)}"
                              >${d.project ?? '?'}/${d.environment ?? '?'}</a
                            >`
                          : (d.project ?? '—')
                      }
                    </td>
                    <td>${d.url}</td>
                    <td>
                      <span class="badge delivery-${d.state}">${d.state}</span>
                      ${d.state === 'pending' && d.attempts > 0 ? html` <span class="muted">retry ${when(d.nextAttemptAt, now)}</span>` : ''}
                    </td>
                    <td>${String(d.attempts)}</td>
                    <td>
                      ${d.lastStatus === null ? '' : String(d.lastStatus)}
                      ${d.lastError ? html`<span class="muted">${d.lastError}</span>` : ''}
                    </td>
                  </tr>`,
              )
        }
      </tbody>
    </table>`;
}

/** The inventories held back as suspect. */
function suspectTable(o: CleanupOverview, now: Date, names: TargetNames): Html {
  return html`<h2 id="suspect-heading">Suspect inventories</h2>
    <p class="muted">
      A list that would mark more than max(2, 20%) of a target's recorded resources missing at once (or every
      one, with an empty list) is held back: nothing of it is applied and nothing is cleaned on the target
      until a list agrees again.
    </p>
    <table id="cleanup-suspect" ${scrollable('suspect-heading')}>
      <thead>
        <tr>
          <th>Target</th>
          <th>Why</th>
          <th>Since</th>
          <th>Last list</th>
        </tr>
      </thead>
      <tbody>
        ${
          o.suspectInventories.length === 0
            ? html`<tr>
                <td colspan="4" class="muted">None.</td>
              </tr>`
            : o.suspectInventories.map(
                (i) =>
                  html`<tr>
                    <td>${targetName(i.targetKey, names)}</td>
                    <td>${i.reason}</td>
                    <td>${when(i.since, now)}</td>
                    <td>${when(i.lastSeenAt, now)}</td>
                  </tr>`,
              )
        }
      </tbody>
    </table>`;
}

/** The executors that reported. */
function executorsTable(o: CleanupOverview, now: Date): Html {
  return html`<h2 id="executors-heading">Executors</h2>
    <table id="cleanup-executors" ${scrollable('executors-heading')}>
      <thead>
        <tr>
          <th>Target</th>
          <th>Executor</th>
          <th>Version</th>
          <th>Last seen</th>
        </tr>
      </thead>
      <tbody>
        ${
          o.executors.length === 0
            ? html`<tr>
                <td colspan="4" class="muted">
                  No executor has reported: nothing is cleaned (run <code>tend server --kubeconfig</code> or
                  <code>tend agent</code>).
                </td>
              </tr>`
            : o.executors.map(
                (e) =>
                  html`<tr>
                    <td>${e.description}</td>
                    <td>${e.name} <span class="muted">(${e.kind})</span></td>
                    <td>${e.version}</td>
                    <td>${when(e.lastSeenAt, now)}</td>
                  </tr>`,
              )
        }
      </tbody>
    </table>`;
}

/** Namespaces marked as tend's with no record here. */
function unrecordedTable(o: CleanupOverview, now: Date, names: TargetNames): Html {
  return html`<h2 id="unrecorded-heading">Unrecorded namespaces</h2>
    <p class="muted">
      Marked as tend's by their plugin (Kubernetes: labelled <code>app.kubernetes.io/managed-by=tend</code>)
      but with no record in this server: shown, never deleted.
    </p>
    <table id="cleanup-unrecorded" ${scrollable('unrecorded-heading')}>
      <thead>
        <tr>
          <th>Namespace</th>
          <th>Target</th>
          <th>Marked as</th>
          <th>Phase</th>
          <th>First seen</th>
        </tr>
      </thead>
      <tbody>
        ${
          o.unrecorded.length === 0
            ? html`<tr>
                <td colspan="5" class="muted">None.</td>
              </tr>`
            : o.unrecorded.map(
                (u) =>
                  html`<tr>
                    <td>
                      ${u.namespace}
                      ${Object.entries(u.detail).map(([k, v]) => html` <span class="muted">${k}: ${v}</span>`)}
                    </td>
                    <td>${targetName(u.targetKey, names)}</td>
                    <td>
                      ${
                        u.environmentId
                          ? html`<a href="/environments/${encodeURIComponent(u.environmentId)}"
                              >${u.project ?? '?'} / ${u.environment ?? '?'}</a
                            >`
                          : `${u.project ?? '?'} / ${u.environment ?? '?'}`
                      }
                    </td>
                    <td>${u.phase}</td>
                    <td>${when(u.firstSeenAt, now)}</td>
                  </tr>`,
              )
        }
      </tbody>
    </table>`;
}

export function cleanupPage(
  o: CleanupOverview,
  session: PageSession,
  options: { isAdmin: boolean; now: Date; message?: string },
): Html {
  const { now, isAdmin } = options;
  // Each target by what its executor calls it ("context dev (https://…)").
  const names: TargetNames = new Map(o.executors.map((e) => [e.targetKey, e.description]));
  const adminOnly = (content: Html) => (isAdmin ? content : html`<span class="muted">admin</span>`);
  return layout(
    'Cleanup',
    html`<h1>Cleanup</h1>
      ${options.message ? html`<p class="error" role="alert">${options.message}</p>` : ''}
      ${switchSection(o, session, now, adminOnly)} ${planTables(o, now, names)}
      ${policiesTable(o, session, now, adminOnly)} ${breakersTable(o, session, now, adminOnly)}

      <h2>Recent jobs</h2>
      ${jobsTable(o.jobs, now, 'cleanup-jobs', names)} ${deliveriesTable(o, now)}
      ${suspectTable(o, now, names)} ${executorsTable(o, now)} ${unrecordedTable(o, now, names)}`,
    session,
  );
}

/**
 * The Cleanup page's admin switches, each the same service call as its API route; a
 * project-bound token acts only on its project and never on the global halt switch.
 */
const CleanupForm = Type.Object({
  _csrf: Type.Optional(Type.String()),
  project: Type.Optional(Type.String({ maxLength: 253 })),
  environment: Type.Optional(Type.String({ maxLength: 253 })),
});

function cleanupSwitches(services: ServerServices) {
  return {
    enforce: async (body: Static<typeof CleanupForm>, actor: string) => {
      if (!body.project) throw new TendError('TEND_SERVER_BAD_REQUEST', 'enforce needs a project');
      await services.cleanup.switches.enforce(body.project, body.environment || undefined, actor);
    },
    halt: async (_body: Static<typeof CleanupForm>, actor: string) => {
      await services.cleanup.switches.setHalted(true, actor);
    },
    resume: async (_body: Static<typeof CleanupForm>, actor: string) => {
      await services.cleanup.switches.setHalted(false, actor);
    },
    'breakers/reset': async (body: Static<typeof CleanupForm>, actor: string) => {
      if (!body.project) throw new TendError('TEND_SERVER_BAD_REQUEST', 'a breaker reset needs a project');
      await services.cleanup.switches.resetBreaker(body.project, actor);
    },
  };
}

/** `GET /cleanup` and its switches (`POST /cleanup/…`). */
export function register(app: App, services: ServerServices): void {
  const { requireSession, requireForm } = sessionGuards(services);
  const reads = new DashboardCleanupRepository(services.database.reader);

  const renderCleanup = async (
    reply: FastifyReply,
    session: DashboardSession,
    status = 200,
    message?: string,
  ) => {
    const now = services.now();
    const overview = await cleanupOverview(services, reads, visibleProjects(session.principal), now);
    return send(
      reply,
      cleanupPage(overview, session, {
        // The switches of every project: an admin token of one project acts on its own.
        isAdmin: allows(session.principal, 'admin', session.principal.project),
        now,
        message,
      }),
      status,
    );
  };

  app.get('/cleanup', { schema: hidden }, async (request, reply) => {
    const session = await requireSession(request, reply);
    if (!session) return reply;
    return renderCleanup(reply, session);
  });

  for (const [path, run] of Object.entries(cleanupSwitches(services))) {
    app.post(`/cleanup/${path}`, { schema: { ...hidden, body: CleanupForm } }, async (request, reply) => {
      const session = await requireForm(request, reply);
      if (!session) return reply;
      const { principal } = session;
      const project = path === 'halt' || path === 'resume' ? null : (request.body.project ?? null);
      if (!allows(principal, 'admin', principal.project ?? project)) {
        return renderCleanup(reply, session, 403, `Changing cleanup ${needs(principal, 'admin')}.`);
      }
      if (principal.project && project !== principal.project) {
        return renderCleanup(reply, session, 403, `This token is bound to project ${principal.project}.`);
      }
      try {
        await run(request.body, actorOf(principal));
      } catch (error) {
        if (error instanceof TendError) {
          const status = error.code === 'TEND_SERVER_BAD_REQUEST' ? 400 : 409;
          return renderCleanup(reply, session, status, error.message);
        }
        throw error;
      }
      return reply.redirect('/cleanup', 303);
    });
  }
}
