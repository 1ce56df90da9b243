/**
 * Who is at the dashboard: a session cookie of a token login (`tend_session`, bound to a read,
 * developer or admin token) or of a person signed in through the OpenID provider
 * (`tend_person_session`, signed, bound to the person; their roles come from the roles file on
 * every request, so a role removed there is gone from the next request on). Every page and form
 * goes through `requireSession` / `requireForm` (which also checks the form's CSRF token).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import {
  constantTimeEqual,
  everyProject,
  requiredRole,
  requiredScope,
  roleGrants,
  scopeAllows,
  tokenGrants,
  type Permission,
  type Principal,
} from '../../auth.js';
import type { ServerServices } from '../../services.js';
import type { Html } from './html.js';
import { messagePage, noRolePage } from './layout.js';

export const sessionCookie = 'tend_session';
/** The session of a person signed in through the OpenID provider (signed: `<id>.<HMAC>`). */
export const personSessionCookie = 'tend_person_session';
/** How long a dashboard session lasts: a token login's and a signed-in person's alike. */
export const sessionTtlMs = 12 * 3600_000;

export interface DashboardSession {
  principal: Principal;
  csrf: string;
  /** Who is signed in, as the page header shows it. */
  user: string;
}

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

export function send(reply: FastifyReply, page: Html, status = 200) {
  return reply
    .status(status)
    .header('content-type', 'text/html; charset=utf-8')
    .header('cache-control', 'no-store')
    .header(
      'content-security-policy',
      "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    )
    .header('x-frame-options', 'DENY')
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'same-origin')
    .send(page.value);
}

/** "needs the developer role" for people, "needs a developer or admin token" for tokens. */
export function needs(principal: Principal, permission: Permission): string {
  if (principal.person) return `needs the ${requiredRole(permission)} role in this project`;
  const scope = requiredScope(permission);
  return scope === 'admin' ? 'needs an admin token' : `needs a ${scope} or admin token`;
}

/** Why a principal may not see a project's page: a bound token, or a person with no role there. */
export function notVisible(principal: Principal, project: string): string {
  return principal.person
    ? `You hold no role in project ${project}.`
    : `This token is bound to project ${principal.project ?? '(none)'}.`;
}

/** What the header says of a person: their e-mail and roles ("developer in shop, viewer everywhere"). */
function personLabel(name: string, byProject: ReadonlyMap<string, string>): string {
  const held = [...byProject].map(([project, role]) =>
    project === everyProject ? `${role} everywhere` : `${role} in ${project}`,
  );
  return `${name} (${held.length > 0 ? held.join(', ') : 'no role'})`;
}

export function sessionGuards(services: ServerServices) {
  const personSession = async (request: FastifyRequest): Promise<DashboardSession | undefined> => {
    const signIn = services.oidc;
    const cookie = request.cookies[personSessionCookie];
    if (!signIn || !cookie || cookie.length > 512) return undefined;
    const id = signIn.unsign(cookie);
    const found = id === undefined ? undefined : await services.personSessions.find(id, services.now());
    if (!found) return undefined;
    const byProject = signIn.settings.roles.current().rolesOf(found);
    const name = found.email ?? found.name ?? found.subject;
    return {
      principal: {
        tokenId: null,
        tokenName: name,
        scope: null,
        project: null,
        clusters: null,
        via: 'oidc',
        person: { subject: found.subject, email: found.email },
        grants: roleGrants(byProject),
      },
      csrf: found.csrf,
      user: personLabel(name, byProject),
    };
  };

  const current = async (request: FastifyRequest): Promise<DashboardSession | undefined> => {
    const person = await personSession(request);
    if (person) return person;
    const cookie = request.cookies[sessionCookie];
    if (!cookie) return undefined;
    const found = await services.dashboardSessions.find(cookie, services.now());
    if (!found || !scopeAllows(found.token.scope, 'read')) return undefined;
    const principal: Principal = {
      tokenId: found.token.id,
      tokenName: found.token.name,
      scope: found.token.scope,
      project: found.token.project,
      clusters: null,
      via: 'dashboard',
      person: null,
      grants: tokenGrants(found.token.scope, found.token.project),
    };
    return { principal, csrf: found.csrf, user: `${found.token.name} (${found.token.scope})` };
  };

  /**
   * A person signed in whom the roles file gives no role (none yet, or no longer) sees a page
   * saying whom to ask, not a 500 and not someone else's data.
   */
  const withRole = (session: DashboardSession, reply: FastifyReply): DashboardSession | undefined => {
    if ([...session.principal.grants.values()].some((granted) => granted.has('read'))) return session;
    void send(reply, noRolePage(session), 403);
    return undefined;
  };

  const requireSession = async (request: FastifyRequest, reply: FastifyReply) => {
    const session = await current(request);
    if (!session) {
      void reply.redirect(`/login?next=${encodeURIComponent(request.url)}`, 303);
      return undefined;
    }
    return withRole(session, reply);
  };

  /** For POST forms: a session and a matching CSRF token, or a 403 page. */
  const requireForm = async (
    request: FastifyRequest,
    reply: FastifyReply,
    options: { anyRole?: boolean } = {},
  ) => {
    const session = await current(request);
    if (!session) {
      void reply.redirect('/login', 303);
      return undefined;
    }
    const csrf = (request.body as { _csrf?: unknown } | undefined)?._csrf;
    if (typeof csrf !== 'string' || !constantTimeEqual(csrf, session.csrf)) {
      void send(
        reply,
        messagePage(
          'Forbidden',
          'The form has expired or did not come from this dashboard. Reload the page and try again.',
          session,
        ),
        403,
      );
      return undefined;
    }
    // Logging out needs no role.
    return options.anyRole ? session : withRole(session, reply);
  };

  return { current, requireSession, requireForm };
}
