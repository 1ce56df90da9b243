/**
 * Signing in through the OpenID provider: `GET /auth/login` sends the browser to the provider
 * (state, nonce and the PKCE verifier kept in a signed, HttpOnly cookie for ten minutes),
 * `GET /auth/callback` takes it back, checks everything (sign-in.ts) and starts a person's
 * session. Only when the server runs with `--oidc-issuer`; otherwise both answer 404.
 */
import { Type } from 'typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { personActor } from '../../auth.js';
import type { App, ServerServices } from '../../services.js';
import { callbackPath, SignInFailed, signInTtlMs, type PendingSignIn } from '../../oidc/sign-in.js';
import { html, type Html } from '../common/html.js';
import { layout } from '../common/layout.js';
import { hidden } from '../common/route-options.js';
import { personSessionCookie, safeNext, send, sessionTtlMs } from '../common/session.js';

/** The sign-in in progress (signed; path-scoped to the callback). */
export const signInCookie = 'tend_sign_in';
/** The callback's whole query string at most (a code and a state are far shorter). */
export const maxCallbackQueryLength = 8192;

const CallbackQuery = Type.Object(
  {
    code: Type.Optional(Type.String({ minLength: 1, maxLength: 2048 })),
    state: Type.Optional(Type.String({ minLength: 1, maxLength: 512 })),
    iss: Type.Optional(Type.String({ maxLength: 2048 })),
    session_state: Type.Optional(Type.String({ maxLength: 512 })),
    scope: Type.Optional(Type.String({ maxLength: 2048 })),
    error: Type.Optional(Type.String({ maxLength: 256 })),
    error_description: Type.Optional(Type.String({ maxLength: 1024 })),
    error_uri: Type.Optional(Type.String({ maxLength: 2048 })),
  },
  { additionalProperties: false },
);

/** A sign-in through the OpenID provider that did not succeed: why, and the way back. */
export function signInFailedPage(message: string): Html {
  return layout(
    'Sign-in failed',
    html`<h1>Sign-in failed</h1>
      <p class="error" role="alert" id="sign-in-failed">${message}</p>
      <p><a href="/login">Sign in again</a></p>`,
  );
}

/** `GET /auth/login` and the callback, when the server signs people in through a provider. */
export function register(app: App, services: ServerServices): void {
  const signIn = services.oidc;
  if (!signIn) return;

  const failed = (
    reply: FastifyReply,
    request: FastifyRequest,
    status: number,
    message: string,
    cause?: unknown,
  ) => {
    // The reason and the error's kind only: the error's causes may hold the callback's code or claims.
    const { name, code } = (cause ?? {}) as { name?: unknown; code?: unknown };
    request.log.warn(
      { reason: message, error: { name: String(name ?? ''), code: String(code ?? '') } },
      'sign-in through the OpenID provider failed',
    );
    void reply.clearCookie(signInCookie, { path: callbackPath });
    return send(reply, signInFailedPage(message), status);
  };

  app.get(
    '/auth/login',
    {
      schema: {
        ...hidden,
        querystring: Type.Object({ next: Type.Optional(Type.String({ maxLength: 2048 })) }),
      },
    },
    async (request, reply) => {
      let started: { url: string; pending: PendingSignIn };
      try {
        started = await signIn.start(safeNext(request.query.next), services.now());
      } catch (error) {
        if (error instanceof SignInFailed) return failed(reply, request, 502, error.message, error.cause);
        throw error;
      }
      void reply.setCookie(signInCookie, signIn.encodePending(started.pending), {
        path: callbackPath,
        httpOnly: true,
        // Lax: the provider sends the browser back with a top-level GET from its own site.
        sameSite: 'lax',
        secure: signIn.secureCookies,
        maxAge: signInTtlMs / 1000,
      });
      return reply.redirect(started.url, 303);
    },
  );

  app.get(
    callbackPath,
    {
      schema: { ...hidden, querystring: CallbackQuery },
      // Before the schema: a query too long to be a provider's answer is refused unread.
      onRequest: async (request, reply) => {
        const query = request.url.indexOf('?');
        if (query >= 0 && request.url.length - query - 1 > maxCallbackQueryLength) {
          return failed(
            reply,
            request,
            400,
            `the answer's query is over ${maxCallbackQueryLength} characters`,
          );
        }
      },
      // A query that does not fit the schema is a sign-in that failed, not a JSON error.
      errorHandler: (error, request, reply) => {
        if (error.validation) {
          return failed(
            reply,
            request,
            400,
            `the answer did not come from the identity provider: ${error.message}`,
          );
        }
        throw error;
      },
    },
    async (request, reply) => {
      const now = services.now();
      const pending = signIn.decodePending(request.cookies[signInCookie], now);
      if (!pending) {
        return failed(
          reply,
          request,
          400,
          'this sign-in expired or was started in another browser (or already finished); sign in again',
        );
      }
      // One answer per sign-in: the cookie is gone whatever happens next.
      void reply.clearCookie(signInCookie, { path: callbackPath });
      const callbackUrl = new URL(request.url, signIn.publicUrl);
      let person;
      try {
        person = await signIn.finish(callbackUrl, pending);
      } catch (error) {
        if (error instanceof SignInFailed) return failed(reply, request, 401, error.message, error.cause);
        throw error;
      }
      const { id } = await services.personSessions.create(person, sessionTtlMs, now);
      void reply.setCookie(personSessionCookie, signIn.sign(id), {
        path: '/',
        httpOnly: true,
        sameSite: 'lax',
        secure: signIn.secureCookies,
        maxAge: sessionTtlMs / 1000,
      });
      await services.audit.record({
        actor: personActor(person),
        action: 'login',
        detail: { issuer: person.issuer, groups: person.groups.slice(0, 50) },
        now,
      });
      return reply.redirect(pending.next, 303);
    },
  );
}
