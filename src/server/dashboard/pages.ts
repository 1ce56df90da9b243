/** The dashboard's pages: server-rendered, usable without JavaScript. */
import type { ArchiveSummary } from '../../cleanup/archive.js';
import type { EnvironmentView, ResourceView, SessionView, TimelineView } from '../../api/views.js';
import { maxSearchLength } from '../environment-queries.js';
import { targetLabel } from '../../api/views.js';
import { html, raw, relativeTime, type Html } from './html.js';

const style = raw(`
  :root { font-family: system-ui, sans-serif; color: #1b1f24; }
  body { margin: 0; }
  header { background: #1f3a5f; color: #fff; padding: .6rem 1.2rem; display: flex; gap: 1rem; align-items: center; }
  header a { color: #fff; text-decoration: none; font-weight: 600; }
  header form { margin-left: auto; }
  main { padding: 1rem 1.2rem; }
  table { border-collapse: collapse; width: 100%; margin: .5rem 0 1.2rem; }
  th, td { text-align: left; padding: .35rem .6rem; border-bottom: 1px solid #d8dee4; vertical-align: top; }
  th { background: #f3f5f7; font-weight: 600; }
  .muted { color: #57606a; font-size: .9em; }
  .badge { display: inline-block; padding: 0 .45rem; border-radius: .6rem; font-size: .85em; background: #eaeef2; }
  .badge.active { background: #dafbe1; } .badge.cleaned { background: #eaeef2; } .badge.protected { background: #fff1c2; }
  .actions { display: flex; gap: .6rem; margin: .6rem 0 1rem; flex-wrap: wrap; }
  .actions form { display: inline; }
  button, a.button { padding: .3rem .8rem; cursor: pointer; }
  a.button { display: inline-block; border: 1px solid #8c959f; border-radius: .3rem; background: #f6f8fa; color: inherit; text-decoration: none; }
  .error { color: #b3261e; }
  form.filters { display: flex; gap: .6rem; align-items: end; margin-bottom: .6rem; }
  label { display: flex; flex-direction: column; font-size: .85em; gap: .15rem; }
  header nav { display: flex; gap: 1rem; } header nav a { font-weight: 400; }
  .badge.kind-due { background: #ffd8d3; } .badge.kind-scheduled { background: #ddf4ff; }
  .badge.kind-dry-run { background: #fbefff; } .badge.kind-blocked { background: #fff1c2; }
  .badge.delivery-delivered { background: #dafbe1; } .badge.delivery-pending { background: #fff1c2; }
  .badge.delivery-failed { background: #ffd8d3; }
  .badge.mode-enforced, .badge.job-done { background: #dafbe1; } .badge.mode-dry-run { background: #fbefff; }
  .badge.job-failed { background: #ffd8d3; } .badge.job-planned, .badge.job-executing { background: #ddf4ff; }
  .sentence { max-width: 32rem; }
  section.halted { border-left: 4px solid #b3261e; padding-left: .8rem; }
  section.running { border-left: 4px solid #1a7f37; padding-left: .8rem; }
  td form { display: inline; }
  td time, .next { white-space: nowrap; }
  form.filters { flex-wrap: wrap; }
  nav.counts { display: flex; gap: .4rem; flex-wrap: wrap; margin: .2rem 0 .6rem; }
  nav.counts a { text-decoration: none; color: inherit; padding: .15rem .6rem; border: 1px solid #d8dee4; border-radius: 1rem; }
  nav.counts a[aria-current="page"] { background: #1f3a5f; color: #fff; border-color: #1f3a5f; }
  figure.chart { margin: .4rem 0 1rem; max-width: 40rem; }
  figure.chart figcaption { font-size: .9em; color: #57606a; }
  figure.chart svg { width: 100%; height: auto; display: block; }
  .legend { display: flex; gap: 1rem; flex-wrap: wrap; font-size: .85em; margin: .2rem 0; }
  .legend i { display: inline-block; width: .8em; height: .8em; margin-right: .3em; border-radius: 2px; }
  .scroll { overflow-x: auto; }
  @media (max-width: 640px) {
    header { flex-wrap: wrap; padding: .5rem .8rem; }
    main { padding: .6rem .8rem; }
    form.filters label, form.filters input, form.filters select { width: 100%; box-sizing: border-box; }
    main table:not(.cards) { display: block; overflow-x: auto; }
    table.cards thead { display: none; }
    table.cards, table.cards tbody, table.cards tr, table.cards td { display: block; width: 100%; box-sizing: border-box; }
    table.cards tr { border: 1px solid #d8dee4; border-radius: .4rem; margin-bottom: .6rem; padding: .3rem 0; }
    table.cards td { border: none; padding: .15rem .6rem .15rem 7.4rem; position: relative; overflow-wrap: anywhere; min-height: 1.2em; }
    table.cards td[data-label]::before { content: attr(data-label); position: absolute; left: .6rem; width: 6.4rem; font-size: .8em; line-height: 1.6; color: #57606a; }
  }
`);

export function layout(title: string, body: Html, options: { csrf?: string; user?: string } = {}): Html {
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>${title} · tend</title>
        <style>
          ${style}
        </style>
      </head>
      <body>
        <header>
          <a href="/">tend</a>
          <nav><a href="/">Environments</a><a href="/cleanup">Cleanup</a><a href="/savings">Savings</a></nav>
          ${
            options.csrf
              ? html`<form method="post" action="/logout">
                  <input type="hidden" name="_csrf" value="${options.csrf}" /><span
                    class="muted"
                    style="color:#cfd8e3"
                    >${options.user ?? ''}</span
                  >
                  <button type="submit">Log out</button>
                </form>`
              : ''
          }
        </header>
        <main>${body}</main>
      </body>
    </html>`;
}

export function loginPage({
  message,
  next = '/',
  csrf,
  publicUrl,
  signInWith,
}: {
  message?: string;
  next?: string;
  csrf: string;
  /** The server's URL as this request reached it, for the token command. */
  publicUrl: string;
  /** The OpenID provider's issuer, when people sign in through it. */
  signInWith?: string;
}): Html {
  return layout(
    'Log in',
    html`<h1>Log in</h1>
      ${message ? html`<p class="error" role="alert">${message}</p>` : ''}
      ${
        signInWith
          ? // A link, not a form: the page's CSP (form-action 'self') would stop a form's redirect to the provider.
            html`<p id="sign-in">
                <a class="button" href="/auth/login?next=${encodeURIComponent(next)}"
                  >Sign in with your company account</a
                >
                <span class="muted">through ${signInWith}</span>
              </p>
              <h2>Or with a token</h2>`
          : ''
      }
      <p>
        Paste a tend token with the <code>read</code>, <code>developer</code> or <code>admin</code> scope.
        Your platform team gives you one; whoever runs this server makes it with
        <code>tend server token create --name you --scope read</code> on its host, or from anywhere with an
        admin token: <code>tend server token create --server ${publicUrl} --name you --scope read</code>.
      </p>
      <form method="post" action="/login">
        <input type="hidden" name="next" value="${next}" />
        <input type="hidden" name="_csrf" value="${csrf}" />
        <label>Token <input type="password" name="token" autocomplete="off" required size="60" /></label>
        <p><button type="submit">Log in</button></p>
      </form>`,
  );
}

/** A person signed in whom the roles file gives no role. */
export function noRolePage(session: { csrf: string; user: string }): Html {
  return layout(
    'No access yet',
    html`<h1>No access yet</h1>
      <p class="error" role="alert" id="no-role">
        You are signed in as ${session.user.replace(/ \(no role\)$/, '')}, but none of your groups or your
        e-mail address has a role on this tend server. Ask your platform team to give you one (they map groups
        and e-mail addresses to roles in the server's roles file).
      </p>`,
    session,
  );
}

/** A sign-in through the OpenID provider that did not succeed: why, and the way back. */
export function signInFailedPage(message: string): Html {
  return layout(
    'Sign-in failed',
    html`<h1>Sign-in failed</h1>
      <p class="error" role="alert" id="sign-in-failed">${message}</p>
      <p><a href="/login">Sign in again</a></p>`,
  );
}

function activitySource(a: EnvironmentView['lastActivity']): string {
  const parts: string[] = [];
  if (a.command) parts.push(`tend ${a.command}`);
  else if (a.type) parts.push(a.type);
  if (a.user) parts.push(`by ${a.user}`);
  return parts.join(' ');
}

function badges(e: EnvironmentView, now: Date): Html {
  return html`<span class="badge ${e.state}">${e.state}</span>
    ${e.protected ? html` <span class="badge protected">protected</span>` : ''}
    ${e.keepAliveUntil && Date.parse(e.keepAliveUntil) > now.getTime() ? html` <span class="badge">kept alive until ${e.keepAliveUntil}</span>` : ''}`;
}

export interface ListPageInput {
  items: EnvironmentView[];
  /** The "Next" cell of each environment (its next cleanup decision), by id. */
  next: Map<string, Html>;
  nextCursor: string | null;
  filter: { search?: string; project?: string; state?: string; environment?: string };
  /** Environments per state under the filter, the state itself left out. */
  counts: Record<string, number>;
  /** Environments by state over time (chart.ts). */
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

export function environmentsPage(input: ListPageInput, session: { csrf: string; user: string }): Html {
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

export interface DetailPageInput {
  environment: EnvironmentView;
  resources: ResourceView[];
  sessions: SessionView[];
  timeline: TimelineView[];
  now: Date;
  canProtect: boolean;
  canKeepAlive: boolean;
  /** Why the Protect button is missing ("Protecting needs …"). */
  protectNeeds: string;
  /** The environment's cleanup plan and jobs (see cleanup-pages.ts). */
  cleanup?: Html;
  /** The archive taken before its last deletion, while `tend restore` can bring it back. */
  archive?: ArchiveSummary;
  /** A Restore button (the `restore` permission: admin). */
  canRestore: boolean;
  message?: string;
}

export function environmentPage(input: DetailPageInput, session: { csrf: string; user: string }): Html {
  const { environment: e, now } = input;
  const action = (path: string, label: string, extra: Html | string = '') =>
    html`<form method="post" action="/environments/${encodeURIComponent(e.id)}/${path}">
      <input type="hidden" name="_csrf" value="${session.csrf}" />${extra}<button type="submit">
        ${label}
      </button>
    </form>`;
  return layout(
    `${e.project} / ${e.name}`,
    html`<p><a href="/">← All environments</a></p>
      <h1>${e.project} / ${e.name} <span class="muted">${e.namespace}</span></h1>
      ${input.message ? html`<p class="error" role="alert">${input.message}</p>` : ''}
      <p id="status">${badges(e, now)}</p>
      <table class="facts">
        <tr>
          <th>Owner</th>
          <td>${e.owner ?? '—'}</td>
        </tr>
        <tr>
          <th>Last activity</th>
          <td>
            <time datetime="${e.lastActivity.at}">${relativeTime(e.lastActivity.at, now)}</time>
            (${e.lastActivity.at})
            <span class="muted"
              >${activitySource(e.lastActivity)}${e.lastActivity.sessionId ? ` · session ${e.lastActivity.sessionId}` : ''}</span
            >
          </td>
        </tr>
        <tr>
          <th>Cleanup policy</th>
          <td>
            ${e.policy ? `${e.policy.action} after ${e.policy.afterInactivity} without activity` : 'none'}
          </td>
        </tr>
        <tr>
          <th>Protected</th>
          <td>${e.protected ? `yes, by ${e.protectedBy ?? '?'} at ${e.protectedAt ?? '?'}` : 'no'}</td>
        </tr>
        <tr>
          <th>Kept alive until</th>
          <td>${e.keepAliveUntil ? `${e.keepAliveUntil} (by ${e.keepAliveBy ?? '?'})` : '—'}</td>
        </tr>
        <tr>
          <th>First seen</th>
          <td>${e.createdAt}</td>
        </tr>
        ${
          input.archive
            ? html`<tr id="archive">
                <th>Restorable until</th>
                <td>
                  ${input.archive.restorableUntil}: the archive of namespace ${input.archive.namespaceName}
                  (${String(input.archive.objects)} objects,
                  ${
                    input.archive.secretsNotKept > 0
                      ? `${String(input.archive.secretsNotKept)} secrets by name only`
                      : `${String(input.archive.secrets)} secrets`
                  })${input.archive.restoredAt ? `, restored at ${input.archive.restoredAt}` : ''}
                  ${
                    input.canRestore && !input.archive.restoredAt && e.state === 'cleaned'
                      ? action('restore', 'Restore')
                      : ''
                  }
                  <span class="muted"
                    >— or <code>tend restore ${e.id}</code> (admin, in the project's directory)</span
                  >
                </td>
              </tr>`
            : ''
        }
      </table>
      <div class="actions">
        ${
          e.state === 'cleaned'
            ? html`<span class="muted" id="cleaned-note"
                  >Cleaned${e.cleanedAt ? ` at ${e.cleanedAt}` : ''}: nothing is left to protect or keep
                  alive; the next tend command in it makes it active again.</span
                >
                ${e.protected && input.canProtect ? action('unprotect', 'Unprotect') : ''}`
            : html`${
                input.canProtect
                  ? e.protected
                    ? action('unprotect', 'Unprotect')
                    : action('protect', 'Protect')
                  : html`<span class="muted">Protecting ${input.protectNeeds}.</span>`
              }
              ${
                input.canKeepAlive
                  ? action(
                      'keep-alive',
                      'Keep alive',
                      html`<select name="for" aria-label="Keep alive for">
                        <option value="8h">8 hours</option>
                        <option value="24h" selected>1 day</option>
                        <option value="3d">3 days</option>
                        <option value="7d">7 days</option>
                      </select> `,
                    )
                  : ''
              }`
        }
      </div>
      ${input.cleanup ?? ''}
      <h2>Resources</h2>
      <table id="resources" class="cards">
        <thead>
          <tr>
            <th>Namespace</th>
            <th>Generation</th>
            <th>UID</th>
            <th>Role</th>
            <th>Ownership</th>
            <th>State</th>
            <th>Plugin / cluster</th>
            <th>First seen</th>
            <th>Last seen</th>
          </tr>
        </thead>
        <tbody>
          ${
            input.resources.length === 0
              ? html`<tr>
                  <td colspan="9" class="muted">No resources recorded.</td>
                </tr>`
              : input.resources.map(
                  (r) =>
                    html`<tr>
                      <td data-label="Namespace">${r.namespace}</td>
                      <td data-label="Generation">${r.generation}</td>
                      <td data-label="UID">${r.namespaceUid ?? '—'}</td>
                      <td data-label="Role">${r.role}</td>
                      <td data-label="Ownership">${r.ownership}</td>
                      <td data-label="State">${r.state}</td>
                      <td data-label="Plugin / cluster" class="target">${r.plugin} · ${targetLabel(r)}</td>
                      <td data-label="First seen">${r.firstSeenAt}</td>
                      <td data-label="Last seen">${relativeTime(r.lastSeenAt, now)}</td>
                    </tr>`,
                )
          }
        </tbody>
      </table>
      <h2>Recent sessions</h2>
      <table id="sessions" class="cards">
        <thead>
          <tr>
            <th>Session</th>
            <th>Command</th>
            <th>User</th>
            <th>Status</th>
            <th>Started</th>
            <th>Last event</th>
          </tr>
        </thead>
        <tbody>
          ${input.sessions.map(
            (s) =>
              html`<tr>
                <td data-label="Session">${s.id}</td>
                <td data-label="Command">
                  ${s.command ? `tend ${s.command}${s.args?.length ? ' ' + s.args.join(' ') : ''}` : '—'}
                </td>
                <td data-label="User">${s.user ?? '—'}</td>
                <td data-label="Status">${s.status}</td>
                <td data-label="Started">${s.startedAt ?? '—'}</td>
                <td data-label="Last event">${relativeTime(s.lastEventAt, now)}</td>
              </tr>`,
          )}
        </tbody>
      </table>
      <h2>Activity</h2>
      <table id="timeline" class="cards">
        <thead>
          <tr>
            <th>Received</th>
            <th>Event</th>
            <th>What</th>
          </tr>
        </thead>
        <tbody>
          ${input.timeline.map(
            (t) =>
              html`<tr>
                <td data-label="Received"><time datetime="${t.receivedAt}">${t.receivedAt}</time></td>
                <td data-label="Event">${t.type}</td>
                <td data-label="What">${t.summary}</td>
              </tr>`,
          )}
        </tbody>
      </table>`,
    session,
  );
}

export function messagePage(title: string, message: string, session?: { csrf: string; user: string }): Html {
  return layout(
    title,
    html`<h1>${title}</h1>
      <p class="error" role="alert">${message}</p>
      <p><a href="/">Back</a></p>`,
    session,
  );
}
