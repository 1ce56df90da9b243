/**
 * The login page (`/login`): log in with a read, developer or admin token, which becomes a session
 * cookie (HttpOnly, SameSite=Lax; the token itself never goes into the cookie), or sign in through
 * the OpenID provider (sign-in.ts); and `POST /logout`.
 */
import { randomBytes } from 'node:crypto';
import { Type } from 'typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { actorOf, constantTimeEqual, scopeAllows } from '../../auth.js';
import type { App, ServerServices } from '../../services.js';
import { html, type Html } from '../common/html.js';
import { layout } from '../common/layout.js';
import { hidden } from '../common/route-options.js';
import {
  personSessionCookie,
  safeNext,
  send,
  sessionCookie,
  sessionGuards,
  sessionTtlMs,
} from '../common/session.js';

/**
 * The login form's CSRF token, double-submitted: a cookie only this site can set, and the same
 * value in the form. A form posted from another site (logging a person in with someone else's
 * token) carries no matching value.
 */
export const loginCsrfCookie = 'tend_login_csrf';

/** This server's URL as the request reached it (shown, HTML-escaped, in the token command). */
function origin(request: FastifyRequest): string {
  return `${request.protocol}://${request.host}`;
}

/** A new login CSRF value, set on the reply. */
function newLoginCsrf(request: FastifyRequest, reply: FastifyReply): string {
  const value = randomBytes(24).toString('base64url');
  void reply.setCookie(loginCsrfCookie, value, {
    path: '/login',
    httpOnly: true,
    sameSite: 'strict',
    secure: request.protocol === 'https',
    maxAge: 3600,
  });
  return value;
}

/** The login form's CSRF value: the request's own cookie, or a new one set on the reply. */
function loginCsrf(request: FastifyRequest, reply: FastifyReply): string {
  const existing = request.cookies[loginCsrfCookie];
  if (existing && /^[A-Za-z0-9_-]{32}$/.test(existing)) return existing;
  return newLoginCsrf(request, reply);
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

const LoginBody = Type.Object({
  token: Type.Optional(Type.String()),
  next: Type.Optional(Type.String()),
  _csrf: Type.Optional(Type.String()),
});

/** `GET /login`, `POST /login` and `POST /logout`. */
export function register(app: App, services: ServerServices): void {
  const { requireForm } = sessionGuards(services);
  const signInWith = services.oidc?.settings.issuer;

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
          signInWith,
        }),
      ),
  );

  app.post('/login', { schema: { ...hidden, body: LoginBody } }, async (request, reply) => {
    const next = safeNext(request.body.next);
    const cookie = request.cookies[loginCsrfCookie];
    const posted = request.body._csrf;
    if (!cookie || typeof posted !== 'string' || !constantTimeEqual(posted, cookie)) {
      void reply.clearCookie(loginCsrfCookie, { path: '/login' });
      const fresh = newLoginCsrf(request, reply);
      return send(
        reply,
        loginPage({
          message: 'The login form expired or was sent from another site; log in again from this page.',
          next,
          csrf: fresh,
          publicUrl: origin(request),
          signInWith,
        }),
        403,
      );
    }
    const page = (message: string) =>
      loginPage({ message, next, csrf: cookie, publicUrl: origin(request), signInWith });
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
  });

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
}
