/**
 * The dashboard's cleanup parts: the "Next" cell of the environments list, the plan on an
 * environment's page (with "Clean up now"), and the Cleanup page (plan for the next 24 hours,
 * blocked decisions, jobs, policies with Enforce, breakers, the halt switch, executors and
 * suspect inventories, unrecorded namespaces). Every name is escaped by `html`.
 */
import { html, relativeTime, type Html } from './html.js';
import type { JobView } from '../../cleanup/protocol.js';
import type { CleanupOverview, DecisionItem } from './cleanup-data.js';
import { layout } from './pages.js';

interface Session {
  csrf: string;
  user: string;
}

/** A POST form carrying the session's CSRF token. */
export function postForm(
  session: Session,
  action: string,
  label: string,
  fields: Record<string, string> = {},
  extra: Html | string = '',
): Html {
  return html`<form method="post" action="${action}">
    <input type="hidden" name="_csrf" value="${session.csrf}" />${Object.entries(fields).map(
      ([name, value]) => html`<input type="hidden" name="${name}" value="${value}" />`,
    )}${extra}<button type="submit">${label}</button>
  </form>`;
}

/**
 * The attributes of a table of text only (no link or button to tab to): narrow screens scroll it
 * sideways (the layout's style), so it takes the keyboard focus itself — arrow keys then scroll
 * it — and is named by its heading for whoever lands on it.
 */
function scrollable(headingId: string): Html {
  return html`tabindex="0" aria-labelledby="${headingId}"`;
}

function when(iso: string, now: Date): Html {
  return html`<time datetime="${iso}" title="${iso}">${relativeTime(iso, now)}</time>`;
}

/**
 * Targets by the names people know (a cluster's kubeconfig context or API server), never the
 * kube-system uid of the target key; a target no name is known for shows as "unnamed target".
 */
export type TargetNames = ReadonlyMap<string, string>;

function targetName(key: string, names: TargetNames): string {
  return names.get(key) ?? (key.startsWith('local/') ? 'this host' : 'unnamed target');
}

/** A scheduled decision inside its warning period (warnBefore). */
function warned(d: { kind: string; warnAt?: string | null }, now: Date): boolean {
  return d.kind === 'scheduled' && d.warnAt != null && d.warnAt <= now.toISOString();
}

function kindBadge(d: { kind: string; reason: string | null; warnAt?: string | null }, now?: Date): Html {
  if (now && warned(d, now)) {
    return html`<span
      class="badge kind-due"
      title="inside its warning period: \`tend keep-alive\` to postpone"
      >warning</span
    >`;
  }
  return html`<span class="badge kind-${d.kind}"
    >${d.kind === 'blocked' ? `blocked: ${d.reason ?? '?'}` : d.kind}</span
  >`;
}

/**
 * The list's "Next" cell: action, due time and reason of the environment's next decision; for a
 * cleaned environment, when it was cleaned and by which job (or by hand, `tend cleanup env`).
 */
export function nextCell(
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

/** The plan of one environment, its recent jobs and (for admins) "Clean up now". */
export function environmentCleanupSection(
  input: {
    environmentId: string;
    decisions: DecisionItem[];
    jobs: JobView[];
    canClean: boolean;
    /** Why "Clean up now" is missing ("Cleaning up now needs …"). */
    cleanNeeds: string;
    canResume: boolean;
    active: boolean;
    /** Paused by a pause job: a Resume button (the developer role and scope, like keep-alive). */
    paused: boolean;
    /** The environment's targets by name (from its resources). */
    targets?: TargetNames;
  },
  session: Session,
  now: Date,
): Html {
  return html`<h2>Cleanup</h2>
    <table id="plan" class="cards">
      <thead>
        <tr>
          <th>Namespace</th>
          <th>Decision</th>
          <th>Action</th>
          <th>Due</th>
          <th>Why</th>
        </tr>
      </thead>
      <tbody>
        ${
          input.decisions.length === 0
            ? html`<tr>
                <td colspan="5" class="muted">
                  No decision: the environment has no cleanup policy, or no planning pass has seen it yet.
                </td>
              </tr>`
            : input.decisions.map(
                (d) =>
                  html`<tr>
                    <td data-label="Namespace">${d.namespace}</td>
                    <td data-label="Decision">${kindBadge(d, now)}</td>
                    <td data-label="Action">${d.action}</td>
                    <td data-label="Due">${d.kind === 'blocked' ? '—' : when(d.dueAt, now)}</td>
                    <td data-label="Why">
                      ${d.sentence}${d.jobId ? html` <span class="muted">(job ${d.jobId})</span>` : ''}
                    </td>
                  </tr>`,
              )
        }
      </tbody>
    </table>
    <div class="actions">
      ${
        input.paused && input.canResume
          ? postForm(session, `/environments/${encodeURIComponent(input.environmentId)}/resume`, 'Resume')
          : ''
      }
      ${
        !input.active
          ? ''
          : input.canClean
            ? postForm(
                session,
                `/environments/${encodeURIComponent(input.environmentId)}/cleanup`,
                'Clean up now',
              )
            : html`<span class="muted">Cleaning up now ${input.cleanNeeds}.</span>`
      }
    </div>
    ${input.jobs.length > 0 ? jobsTable(input.jobs, now, 'environment-jobs', input.targets) : ''}`;
}

function jobsTable(jobs: JobView[], now: Date, id: string, names: TargetNames = new Map()): Html {
  return html`<table id="${id}">
    <thead>
      <tr>
        <th>Planned</th>
        <th>Environment</th>
        <th>Namespace</th>
        <th>Action</th>
        <th>State</th>
        <th>Outcome</th>
        <th>By</th>
      </tr>
    </thead>
    <tbody>
      ${
        jobs.length === 0
          ? html`<tr>
              <td colspan="7" class="muted">No cleanup jobs yet.</td>
            </tr>`
          : jobs.map(
              (j) =>
                html`<tr data-job-id="${j.id}">
                  <td>${when(j.plannedAt, now)}</td>
                  <td>
                    <a href="/environments/${encodeURIComponent(j.environmentId)}"
                      >${j.project} / ${j.environment}</a
                    >
                  </td>
                  <td>${j.namespaceName} <span class="muted">${targetName(j.targetKey, names)}</span></td>
                  <td>${j.action}</td>
                  <td><span class="badge job-${j.state}">${j.state}</span></td>
                  <td>
                    ${j.message ?? j.reason}${j.attempts > 1 ? html` <span class="muted">(${j.attempts} attempts)</span>` : ''}
                  </td>
                  <td>
                    ${
                      j.action === 'restore'
                        ? `${j.actor ?? '?'} (restore)`
                        : j.trigger === 'now'
                          ? `${j.actor ?? '?'} (clean up now)`
                          : (j.actor ?? 'planner')
                    }
                  </td>
                </tr>`,
            )
      }
    </tbody>
  </table>`;
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

export function cleanupPage(
  o: CleanupOverview,
  session: Session,
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
      <section id="switch" class="${o.halted ? 'halted' : 'running'}">
        ${
          o.halted
            ? html`<p>
                <strong>Cleanup is halted</strong> since ${o.haltedAt ?? '?'} by ${o.haltedBy ?? '?'}: nothing
                is planned or started.
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
      </section>

      <h2>Plan for the next 24 hours</h2>
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
      </table>

      <h2>Policies</h2>
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
      </table>

      <h2>Circuit breakers</h2>
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
      </table>

      <h2>Recent jobs</h2>
      ${jobsTable(o.jobs, now, 'cleanup-jobs', names)}

      <h2 id="deliveries-heading">Webhook deliveries</h2>
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
      </table>

      <h2 id="suspect-heading">Suspect inventories</h2>
      <p class="muted">
        A list that would mark more than max(2, 20%) of a target's recorded resources missing at once (or
        every one, with an empty list) is held back: nothing of it is applied and nothing is cleaned on the
        target until a list agrees again.
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
      </table>

      <h2 id="executors-heading">Executors</h2>
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
      </table>

      <h2 id="unrecorded-heading">Unrecorded namespaces</h2>
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
      </table>`,
    session,
  );
}
