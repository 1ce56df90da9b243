/**
 * The dashboard at `/`: log in with a read, developer or admin token, which becomes a session
 * cookie (HttpOnly, SameSite=Lax; the token itself never goes into the cookie), or sign in through
 * the OpenID provider (sign-in-routes.ts). Changes are POST forms carrying the session's CSRF
 * token, answered with a 303 redirect (works without JavaScript); each is allowed by the role
 * (or token scope) in the environment's project.
 */
import { randomBytes } from 'node:crypto';
import { Type, type Static } from 'typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { TendError } from '../../errors.js';
import type { App, ServerServices } from '../services.js';
import { actorOf, allows, constantTimeEqual, scopeAllows } from '../auth.js';
import { decodeCursor } from '../db/repositories/environments.js';
import type { Environment } from '../db/schema.js';
import { keepAliveUntil, listFilter, ListQuery, visibleEnvironment } from '../environment-queries.js';
import { environmentView, resourceView, sessionView, timelineView } from '../views.js';
import { targetLabel } from '../../api/views.js';
import { environmentPage, environmentsPage, loginPage, messagePage } from './pages.js';
import { cleaningJobs, cleanupOverview, environmentCleanup, nextDecisions } from './cleanup-data.js';
import { cleanupPage, environmentCleanupSection, nextCell } from './cleanup-pages.js';
import { firstDay, stateDays, statesChart } from './chart.js';
import { registerSavingsPage } from './savings-page.js';
import {
  needs,
  personSessionCookie,
  send,
  sessionCookie,
  sessionGuards,
  sessionTtlMs,
  type DashboardSession,
} from './session.js';
import { registerSignInRoutes } from './sign-in-routes.js';

export { sessionCookie };
/**
 * The login form's CSRF token, double-submitted: a cookie only this site can set, and the same
 * value in the form. A form posted from another site (logging a person in with someone else's
 * token) carries no matching value.
 */
export const loginCsrfCookie = 'tend_login_csrf';

const hidden = { hide: true } as const;

/**
 * Only paths of this site: `next` must never send the browser elsewhere. Browsers drop tabs and
 * line breaks from URLs (`/\t/evil.example` becomes `//evil.example`) and read `\` as `/`, so
 * only printable ASCII is kept (what `encodeURIComponent` writes); anything else falls back to `/`.
 */
export function safeNext(next: unknown): string {
  return typeof next === 'string' && /^\/(?![/\\])[\x21-\x7e]*$/.test(next) && !next.includes('\\')
    ? next
    : '/';
}

/** This server's URL as the request reached it (shown, HTML-escaped, in the token command). */
function origin(request: FastifyRequest): string {
  return `${request.protocol}://${request.host}`;
}

export function registerDashboard(app: App, services: ServerServices): void {
  const { requireSession, requireForm } = sessionGuards(services);
  registerSignInRoutes(app, services, safeNext);

  /** The login form's CSRF value: the request's own cookie, or a new one set on the reply. */
  const loginCsrf = (request: FastifyRequest, reply: FastifyReply): string => {
    const existing = request.cookies[loginCsrfCookie];
    if (existing && /^[A-Za-z0-9_-]{32}$/.test(existing)) return existing;
    const value = randomBytes(24).toString('base64url');
    void reply.setCookie(loginCsrfCookie, value, {
      path: '/login',
      httpOnly: true,
      sameSite: 'strict',
      secure: request.protocol === 'https',
      maxAge: 3600,
    });
    return value;
  };

  app.get(
    '/login',
    { schema: { ...hidden, querystring: Type.Object({ next: Type.Optional(Type.String()) }) } },
    async (request, reply) =>
      send(
        reply,
        loginPage({
          next: safeNext(request.query.next),
          csrf: loginCsrf(request, reply),
          publicUrl: origin(request),
          signInWith: services.oidc?.settings.issuer,
        }),
      ),
  );

  app.post(
    '/login',
    {
      schema: {
        ...hidden,
        body: Type.Object({
          token: Type.Optional(Type.String()),
          next: Type.Optional(Type.String()),
          _csrf: Type.Optional(Type.String()),
        }),
      },
    },
    async (request, reply) => {
      const next = safeNext(request.body.next);
      const cookie = request.cookies[loginCsrfCookie];
      const posted = request.body._csrf;
      if (!cookie || typeof posted !== 'string' || !constantTimeEqual(posted, cookie)) {
        void reply.clearCookie(loginCsrfCookie, { path: '/login' });
        const fresh = randomBytes(24).toString('base64url');
        void reply.setCookie(loginCsrfCookie, fresh, {
          path: '/login',
          httpOnly: true,
          sameSite: 'strict',
          secure: request.protocol === 'https',
          maxAge: 3600,
        });
        return send(
          reply,
          loginPage({
            message: 'The login form expired or was sent from another site; log in again from this page.',
            next,
            csrf: fresh,
            publicUrl: origin(request),
            signInWith: services.oidc?.settings.issuer,
          }),
          403,
        );
      }
      const page = (message: string) =>
        loginPage({
          message,
          next,
          csrf: cookie,
          publicUrl: origin(request),
          signInWith: services.oidc?.settings.issuer,
        });
      const token = (request.body.token ?? '').trim();
      const row = token ? await services.tokens.findLive(token) : undefined;
      if (!row) return send(reply, page('That token is unknown or has been revoked.'), 401);
      if (!scopeAllows(row.scope, 'read')) {
        return send(
          reply,
          page(
            `Token "${row.name}" has scope "${row.scope}"; the dashboard needs "read", "developer" or "admin".`,
          ),
          403,
        );
      }
      const { cookie: sessionValue } = await services.dashboardSessions.create(
        row.id,
        sessionTtlMs,
        services.now(),
      );
      void reply.setCookie(sessionCookie, sessionValue, {
        path: '/',
        httpOnly: true,
        sameSite: 'lax',
        secure: request.protocol === 'https',
        maxAge: sessionTtlMs / 1000,
      });
      void reply.clearCookie(loginCsrfCookie, { path: '/login' });
      await services.audit.record({ actor: `dashboard:${row.name}`, action: 'login', now: services.now() });
      return reply.redirect(next, 303);
    },
  );

  app.post(
    '/logout',
    { schema: { ...hidden, body: Type.Object({ _csrf: Type.Optional(Type.String()) }) } },
    async (request, reply) => {
      const session = await requireForm(request, reply, { anyRole: true });
      if (!session) return reply;
      if (session.principal.person) {
        const signed = request.cookies[personSessionCookie];
        const id = signed ? services.oidc?.unsign(signed) : undefined;
        if (id) await services.personSessions.delete(id);
        void reply.clearCookie(personSessionCookie, { path: '/' });
        await services.audit.record({
          actor: actorOf(session.principal),
          action: 'logout',
          now: services.now(),
        });
      } else {
        const cookie = request.cookies[sessionCookie];
        if (cookie) await services.dashboardSessions.delete(cookie);
        void reply.clearCookie(sessionCookie, { path: '/' });
      }
      return reply.redirect('/login', 303);
    },
  );

  app.get(
    '/',
    {
      schema: { ...hidden, querystring: ListQuery },
      // The filter form sends empty fields for "any": drop them before validation.
      preValidation: async (request) => {
        const query = request.query as Record<string, unknown>;
        for (const key of Object.keys(query)) if (query[key] === '') delete query[key];
      },
    },
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
      // The chart covers the project of the filter (or of the token), every state.
      const chartProject = session.principal.project ?? q.project ?? null;
      const [page, counts, history, today] = await Promise.all([
        services.environments.list(filter, q.limit ?? 50, cursor),
        services.environments.countByState({ ...filter, state: undefined }),
        services.environments.stateHistory(firstDay(now), chartProject),
        services.environments.countByState({ onlyProject: chartProject }),
      ]);
      const items = page.items.map(environmentView);
      const ids = items.map((e) => e.id);
      const [decisions, cleanedBy] = await Promise.all([
        nextDecisions(services, ids),
        cleaningJobs(
          services,
          items.filter((e) => e.state === 'cleaned').map((e) => e.id),
        ),
      ]);
      return send(
        reply,
        environmentsPage(
          {
            items,
            next: new Map(
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
            ),
            nextCursor: page.nextCursor,
            filter: { search: q.search, project: q.project, state: q.state, environment: q.environment },
            counts,
            chart: statesChart(
              stateDays(history, today, now),
              chartProject ? `project ${chartProject}` : 'all projects',
            ),
            now,
          },
          session,
        ),
      );
    },
  );

  const IdParams = Type.Object({ id: Type.String() });

  const renderEnvironment = async (
    reply: FastifyReply,
    session: DashboardSession,
    id: string,
    status = 200,
    message?: string,
  ) => {
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
      environmentCleanup(services, env.id),
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

  app.get('/environments/:id', { schema: { ...hidden, params: IdParams } }, async (request, reply) => {
    const session = await requireSession(request, reply);
    if (!session) return reply;
    return renderEnvironment(reply, session, request.params.id);
  });

  const FormBody = Type.Object({ _csrf: Type.Optional(Type.String()), for: Type.Optional(Type.String()) });
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

  // The buttons that plan a job through the API's path and checks: clean up now
  // (switches.cleanNow, only the wait skipped), resume (the same, action resume) and restore
  // (a restore job, run by the executor of the archive's cluster).
  const jobButtons = [
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
  for (const button of jobButtons) {
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

  const renderCleanup = async (
    reply: FastifyReply,
    session: DashboardSession,
    status = 200,
    message?: string,
  ) => {
    const now = services.now();
    const overview = await cleanupOverview(services, session.principal.project, now);
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

  registerSavingsPage(app, services, requireSession, send);

  app.get('/cleanup', { schema: hidden }, async (request, reply) => {
    const session = await requireSession(request, reply);
    if (!session) return reply;
    return renderCleanup(reply, session);
  });

  /**
   * The Cleanup page's admin switches, each the same service call as its API route; a
   * project-bound token acts only on its project and never on the global halt switch.
   */
  const CleanupForm = Type.Object({
    _csrf: Type.Optional(Type.String()),
    project: Type.Optional(Type.String({ maxLength: 253 })),
    environment: Type.Optional(Type.String({ maxLength: 253 })),
  });
  const switches = {
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
  for (const [path, run] of Object.entries(switches)) {
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
