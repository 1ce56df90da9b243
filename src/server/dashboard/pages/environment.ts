/**
 * An environment's page (`/environments/:id`): its facts, its cleanup plan and jobs, resources,
 * sessions and activity, with the buttons that change it — protect, unprotect, keep alive, and
 * the ones that plan a job (clean up now, resume, restore). Every name is escaped by `html`.
 */
import { Type } from 'typebox';
import type { FastifyReply } from 'fastify';
import type { ArchiveSummary } from '../../../cleanup/archive.js';
import {
  targetLabel,
  type EnvironmentView,
  type ResourceView,
  type SessionView,
  type TimelineView,
} from '../../../api/views.js';
import { TendError } from '../../../errors.js';
import { actorOf, allows } from '../../auth.js';
import { DashboardCleanupRepository } from '../../db/repositories/dashboard-cleanup.js';
import type { Environment } from '../../db/schema.js';
import { keepAliveUntil, visibleEnvironment } from '../../environment-queries.js';
import type { App, ServerServices } from '../../services.js';
import { environmentView, resourceView, sessionView, timelineView } from '../../views.js';
import { activitySource, type PageSession } from '../common/elements.js';
import { html, relativeTime, type Html } from '../common/html.js';
import { layout, messagePage } from '../common/layout.js';
import { hidden } from '../common/route-options.js';
import { needs, send, sessionGuards, type DashboardSession } from '../common/session.js';
import { environmentCleanup, environmentCleanupSection } from './environment-cleanup.js';

function badges(e: EnvironmentView, now: Date): Html {
  return html`<span class="badge ${e.state}">${e.state}</span>
    ${e.protected ? html` <span class="badge protected">protected</span>` : ''}
    ${e.keepAliveUntil && Date.parse(e.keepAliveUntil) > now.getTime() ? html` <span class="badge">kept alive until ${e.keepAliveUntil}</span>` : ''}`;
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
  /** The environment's cleanup plan and jobs (environment-cleanup.ts). */
  cleanup?: Html;
  /** The archive taken before its last deletion, while `tend restore` can bring it back. */
  archive?: ArchiveSummary;
  /** A Restore button (the `restore` permission: admin). */
  canRestore: boolean;
  message?: string;
}

/** A POST form of this environment's (`/environments/<id>/<path>`) with the session's CSRF token. */
type EnvironmentForm = (path: string, label: string, extra?: Html | string) => Html;

/** Owner, activity, policy, protection, keep-alive, first seen and the archive (with Restore). */
function factsTable(input: DetailPageInput, action: EnvironmentForm): Html {
  const { environment: e, now } = input;
  return html`<table class="facts">
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
      <td>${e.policy ? `${e.policy.action} after ${e.policy.afterInactivity} without activity` : 'none'}</td>
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
  </table>`;
}

/** Protect or Unprotect, and Keep alive, as the session may. */
function actionButtons(input: DetailPageInput, action: EnvironmentForm): Html {
  const { environment: e } = input;
  return html`<div class="actions">
    ${
      e.state === 'cleaned'
        ? html`<span class="muted" id="cleaned-note"
              >Cleaned${e.cleanedAt ? ` at ${e.cleanedAt}` : ''}: nothing is left to protect or keep alive;
              the next tend command in it makes it active again.</span
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
  </div>`;
}

/** The namespaces recorded for the environment. */
function resourcesTable(input: DetailPageInput): Html {
  const { now } = input;
  return html`<h2>Resources</h2>
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
    </table>`;
}

/** The latest sessions of tend commands in the environment. */
function sessionsTable(input: DetailPageInput): Html {
  const { now } = input;
  return html`<h2>Recent sessions</h2>
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
    </table>`;
}

/** The environment's events, newest first. */
function activityTable(input: DetailPageInput): Html {
  return html`<h2>Activity</h2>
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
    </table>`;
}

export function environmentPage(input: DetailPageInput, session: PageSession): Html {
  const { environment: e, now } = input;
  const action: EnvironmentForm = (path, label, extra = '') =>
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
      ${factsTable(input, action)} ${actionButtons(input, action)} ${input.cleanup ?? ''}
      ${resourcesTable(input)} ${sessionsTable(input)} ${activityTable(input)}`,
    session,
  );
}

const IdParams = Type.Object({ id: Type.String() });
const FormBody = Type.Object({ _csrf: Type.Optional(Type.String()), for: Type.Optional(Type.String()) });

/**
 * The buttons that plan a job through the API's path and checks: clean up now
 * (switches.cleanNow, only the wait skipped), resume (the same, action resume) and restore
 * (a restore job, run by the executor of the archive's cluster).
 */
function jobButtons(services: ServerServices) {
  return [
    {
      path: 'cleanup',
      permission: 'clean-now',
      doing: 'Cleaning up now',
      plan: (env: Environment, actor: string) => services.cleanup.switches.cleanNow(env.id, actor),
    },
    {
      path: 'resume',
      permission: 'resume',
      doing: 'Resuming',
      plan: (env: Environment, actor: string) =>
        services.cleanup.switches.cleanNow(env.id, actor, { action: 'resume' }),
    },
    {
      path: 'restore',
      permission: 'restore',
      doing: 'Restoring',
      plan: (env: Environment, actor: string) => services.cleanup.restores.request(env, actor),
    },
  ] as const;
}

type RenderEnvironment = (
  reply: FastifyReply,
  session: DashboardSession,
  id: string,
  status?: number,
  message?: string,
) => Promise<FastifyReply>;

/** The page of environment `id` as the session sees it, or "Not found". */
function environmentRenderer(services: ServerServices): RenderEnvironment {
  const reads = new DashboardCleanupRepository(services.database.reader);
  return async (reply, session, id, status = 200, message) => {
    let env;
    try {
      env = await visibleEnvironment(services, id, session.principal);
    } catch (error) {
      if (error instanceof TendError)
        return send(reply, messagePage('Not found', error.message, session), 404);
      throw error;
    }
    const [resources, sessions, timeline, cleanup, archive] = await Promise.all([
      services.environments.resources(env.id),
      services.environments.recentSessions(env.id),
      services.environments.timeline(env.id),
      environmentCleanup(services, reads, env.id),
      services.cleanup.archives.summary(env.id, services.now()),
    ]);
    const now = services.now();
    const view = environmentView(env);
    const resourceViews = resources.map(resourceView);
    return send(
      reply,
      environmentPage(
        {
          environment: view,
          resources: resourceViews,
          sessions: sessions.map(sessionView),
          timeline: timeline.map(timelineView),
          now,
          canProtect: allows(session.principal, 'protect', env.project),
          canKeepAlive: allows(session.principal, 'keep-alive', env.project),
          protectNeeds: needs(session.principal, 'protect'),
          ...(archive ? { archive } : {}),
          canRestore: allows(session.principal, 'restore', env.project),
          cleanup: environmentCleanupSection(
            {
              environmentId: view.id,
              ...cleanup,
              canClean: allows(session.principal, 'clean-now', env.project),
              cleanNeeds: needs(session.principal, 'clean-now'),
              canResume: allows(session.principal, 'resume', env.project),
              active: view.state === 'active',
              paused: view.state === 'paused',
              targets: new Map(resourceViews.map((r) => [r.targetKey, targetLabel(r)])),
            },
            session,
            now,
          ),
          message,
        },
        session,
      ),
      status,
    );
  };
}

/** `POST /environments/:id/protect`, `…/unprotect` and `…/keep-alive`. */
function registerChanges(app: App, services: ServerServices, renderEnvironment: RenderEnvironment): void {
  const { requireForm } = sessionGuards(services);
  for (const action of ['protect', 'unprotect', 'keep-alive'] as const) {
    app.post(
      `/environments/:id/${action}`,
      { schema: { ...hidden, params: IdParams, body: FormBody } },
      async (request, reply) => {
        const session = await requireForm(request, reply);
        if (!session) return reply;
        const id = request.params.id;
        const permission = action === 'keep-alive' ? 'keep-alive' : 'protect';
        const env = await visibleEnvironment(services, id, session.principal).catch(() => undefined);
        if (!env) return send(reply, messagePage('Not found', 'No such environment.', session), 404);
        if (!allows(session.principal, permission, env.project)) {
          return renderEnvironment(
            reply,
            session,
            id,
            403,
            `${action} ${needs(session.principal, permission)}.`,
          );
        }
        // A cleaned environment has nothing left to protect or keep alive (the page offers neither).
        if (env.state === 'cleaned' && action !== 'unprotect') {
          return renderEnvironment(
            reply,
            session,
            id,
            409,
            `${env.project} / ${env.name} is cleaned: nothing is left to ${action === 'protect' ? 'protect' : 'keep alive'}.`,
          );
        }
        const actor = actorOf(session.principal);
        const now = services.now();
        if (action === 'keep-alive') {
          let until: Date;
          try {
            until = keepAliveUntil(request.body.for, now);
          } catch (error) {
            return renderEnvironment(reply, session, id, 400, (error as Error).message);
          }
          await services.environments.keepAlive(env.id, until, actor, now);
        } else {
          await services.environments.setProtected(env.id, action === 'protect', actor, now);
        }
        return reply.redirect(`/environments/${encodeURIComponent(env.id)}`, 303);
      },
    );
  }
}

/** `POST /environments/:id/cleanup`, `…/resume` and `…/restore`: each plans a job. */
function registerJobButtons(app: App, services: ServerServices, renderEnvironment: RenderEnvironment): void {
  const { requireForm } = sessionGuards(services);
  for (const button of jobButtons(services)) {
    app.post(
      `/environments/:id/${button.path}`,
      { schema: { ...hidden, params: IdParams, body: FormBody } },
      async (request, reply) => {
        const session = await requireForm(request, reply);
        if (!session) return reply;
        const env = await visibleEnvironment(services, request.params.id, session.principal).catch(
          () => undefined,
        );
        if (!env) return send(reply, messagePage('Not found', 'No such environment.', session), 404);
        if (!allows(session.principal, button.permission, env.project)) {
          const message = `${button.doing} ${needs(session.principal, button.permission)}.`;
          return renderEnvironment(reply, session, env.id, 403, message);
        }
        try {
          await button.plan(env, actorOf(session.principal));
        } catch (error) {
          if (error instanceof TendError)
            return renderEnvironment(reply, session, env.id, 409, error.message);
          throw error;
        }
        return reply.redirect(`/environments/${encodeURIComponent(env.id)}`, 303);
      },
    );
  }
}

/** `GET /environments/:id` and the buttons of the page. */
export function register(app: App, services: ServerServices): void {
  const { requireSession } = sessionGuards(services);
  const renderEnvironment = environmentRenderer(services);
  app.get('/environments/:id', { schema: { ...hidden, params: IdParams } }, async (request, reply) => {
    const session = await requireSession(request, reply);
    if (!session) return reply;
    return renderEnvironment(reply, session, request.params.id);
  });
  registerChanges(app, services, renderEnvironment);
  registerJobButtons(app, services, renderEnvironment);
}
