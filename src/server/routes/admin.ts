/**
 * Server administration over the API (admin scope, a token bound to no project): API tokens
 * (`GET|POST /api/v1/tokens`, `POST /api/v1/tokens/:token/revoke`) and webhooks
 * (`GET|POST /api/v1/webhooks`, `DELETE /api/v1/webhooks/:id`) — what `tend server token …` and
 * `tend server webhook …` do with `--server`, so that an admin need not be on the server's host.
 * A new token's secret and a new webhook's signing secret are in the creation answer only; the
 * response schemas keep them out of every other answer. Each change is audited.
 */
import { Type } from 'typebox';
import { TendError } from '../../errors.js';
import { TargetKey } from '../../cleanup/targets.js';
import { actorOf, projectBindingPattern, tokenNamePattern, tokenScopes, type Principal } from '../auth.js';
import { webhookEvents, webhookFormats, maxUrlLength } from '../notifications/webhooks.js';
import type { App, ServerServices } from '../services.js';
import { ErrorResponse } from '../../api/views.js';

const Nullable = <T extends ReturnType<typeof Type.String>>(t: T) => Type.Union([t, Type.Null()]);
const ProjectName = Type.String({ pattern: projectBindingPattern.source });

export const TokenView = Type.Object({
  id: Type.String(),
  name: Type.String(),
  prefix: Type.String({ description: 'The visible start of the token, for lists.' }),
  scope: Type.Enum(tokenScopes),
  project: Nullable(Type.String()),
  clusters: Type.Union([Type.Array(Type.String()), Type.Null()]),
  targets: Type.Union([Type.Array(Type.String()), Type.Null()]),
  createdAt: Type.String({ format: 'date-time' }),
  lastUsedAt: Nullable(Type.String({ format: 'date-time' })),
  revokedAt: Nullable(Type.String({ format: 'date-time' })),
});

const TokenCreateBody = Type.Object(
  {
    name: Type.String({ pattern: tokenNamePattern.source, description: 'e.g. "ci", "agent-prod-eu"' }),
    scope: Type.Optional(Type.Enum(tokenScopes, { default: 'ingest' })),
    project: Type.Optional(ProjectName),
    clusters: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 253 }), {
        minItems: 1,
        maxItems: 100,
        description: 'agent scope only: the cluster ids (uid of kube-system) the token may act on',
      }),
    ),
    targets: Type.Optional(
      Type.Array(TargetKey, {
        minItems: 1,
        maxItems: 100,
        description:
          'agent scope only: the executor targets (`<kind>/<id>`, of any plugin: `dirs/<rootId>`, `local/<hostId>`) the token may act on, beside its clusters',
      }),
    ),
  },
  { additionalProperties: false },
);

const WebhookView = Type.Object({
  id: Type.String(),
  url: Type.String({ description: 'Without user info.' }),
  events: Type.Array(Type.String()),
  format: Type.String(),
  project: Nullable(Type.String()),
  createdAt: Type.String({ format: 'date-time' }),
  createdBy: Type.String(),
});

const WebhookListing = Type.Evaluate(
  Type.Intersect([
    WebhookView,
    Type.Object({
      deliveries: Type.Object({
        pending: Type.Integer(),
        delivered: Type.Integer(),
        failed: Type.Integer(),
        lastError: Nullable(Type.String()),
      }),
    }),
  ]),
);

const WebhookCreateBody = Type.Object(
  {
    url: Type.String({ minLength: 1, maxLength: maxUrlLength, description: 'http:// or https://' }),
    events: Type.Array(Type.Enum(webhookEvents), { minItems: 1, maxItems: 10 }),
    format: Type.Optional(Type.Enum(webhookFormats, { default: 'json' })),
    project: Type.Optional(ProjectName),
  },
  { additionalProperties: false },
);

const errors = { 400: ErrorResponse, 401: ErrorResponse, 403: ErrorResponse, 404: ErrorResponse };

/** Tokens and webhooks span every project: a token bound to one may not manage them. */
function checkServerAdmin(principal: Principal | null): void {
  if (principal?.project) {
    throw new TendError(
      'TEND_AUTH_FORBIDDEN',
      `token "${principal.tokenName}" is bound to project ${principal.project}; tokens and webhooks are managed with an admin token bound to no project`,
    );
  }
}

/** Tokens and webhooks span every project: only an admin token bound to none manages them. */
export function registerAdminRoutes(app: App, services: ServerServices): void {
  registerTokenRoutes(app, services);
  registerWebhookRoutes(app, services);
}

const admin = { config: { permission: 'admin' as const } };

function registerTokenRoutes(app: App, services: ServerServices): void {
  app.get(
    '/api/v1/tokens',
    {
      ...admin,
      schema: {
        operationId: 'listTokens',
        summary: 'List API tokens, never their secrets (admin)',
        tags: ['admin'],
        response: { 200: Type.Object({ items: Type.Array(TokenView) }), ...errors },
      },
    },
    async (request) => {
      checkServerAdmin(request.principal);
      return { items: await services.tokens.list() };
    },
  );

  app.post(
    '/api/v1/tokens',
    {
      ...admin,
      schema: {
        operationId: 'createToken',
        summary: 'Create an API token; its secret is in this answer only (admin)',
        tags: ['admin'],
        body: TokenCreateBody,
        response: {
          201: Type.Evaluate(Type.Intersect([TokenView, Type.Object({ token: Type.String() })])),
          409: ErrorResponse,
          ...errors,
        },
      },
    },
    async (request, reply) => {
      checkServerAdmin(request.principal);
      const { name, scope = 'ingest', project, clusters, targets } = request.body;
      if ((clusters || targets) && scope !== 'agent') {
        throw new TendError(
          'TEND_SERVER_BAD_REQUEST',
          `${clusters ? 'clusters' : 'targets'} bind an agent token to ${clusters ? 'clusters' : 'targets'}: use them with scope "agent"`,
        );
      }
      const { token, info } = await services.tokens.create({
        name,
        scope,
        project: project ?? null,
        clusters: clusters ?? null,
        targets: targets ?? null,
        now: services.now(),
      });
      await services.audit.record({
        actor: actorOf(request.principal!),
        action: 'token-create',
        detail: {
          id: info.id,
          name: info.name,
          scope: info.scope,
          project: info.project,
          clusters: info.clusters,
          targets: info.targets,
        },
        now: services.now(),
      });
      return reply.status(201).send({ ...info, token });
    },
  );

  app.post(
    '/api/v1/tokens/:token/revoke',
    {
      ...admin,
      schema: {
        operationId: 'revokeToken',
        summary: 'Revoke a token by id or name (admin)',
        tags: ['admin'],
        params: Type.Object({ token: Type.String({ minLength: 1, maxLength: 64 }) }),
        response: { 200: TokenView, ...errors },
      },
    },
    async (request) => {
      checkServerAdmin(request.principal);
      const info = await services.tokens.revoke(request.params.token, services.now());
      await services.audit.record({
        actor: actorOf(request.principal!),
        action: 'token-revoke',
        detail: { id: info.id, name: info.name },
        now: services.now(),
      });
      return info;
    },
  );
}

function registerWebhookRoutes(app: App, services: ServerServices): void {
  app.get(
    '/api/v1/webhooks',
    {
      ...admin,
      schema: {
        operationId: 'listWebhooks',
        summary: 'List webhooks, never their secrets, with their deliveries (admin)',
        tags: ['admin'],
        response: { 200: Type.Object({ items: Type.Array(WebhookListing) }), ...errors },
      },
    },
    async (request) => {
      checkServerAdmin(request.principal);
      return { items: await services.notifications.listWebhooksWithDeliveries() };
    },
  );

  app.post(
    '/api/v1/webhooks',
    {
      ...admin,
      schema: {
        operationId: 'addWebhook',
        summary: 'Add a webhook; its signing secret is in this answer only (admin)',
        tags: ['admin'],
        body: WebhookCreateBody,
        response: {
          201: Type.Evaluate(Type.Intersect([WebhookView, Type.Object({ secret: Type.String() })])),
          ...errors,
        },
      },
    },
    async (request, reply) => {
      checkServerAdmin(request.principal);
      const actor = actorOf(request.principal!);
      let added;
      try {
        added = await services.notifications.addWebhook(request.body, actor);
      } catch (error) {
        // The checks speak of the CLI's flags (--url); here they are body fields.
        if (error instanceof TendError && error.code === 'TEND_USAGE') {
          throw new TendError('TEND_SERVER_BAD_REQUEST', error.message.replace(/--(?=[a-z])/g, ''));
        }
        throw error;
      }
      const { webhook, secret } = added;
      await services.audit.record({
        actor,
        action: 'webhook-add',
        detail: {
          id: webhook.id,
          url: webhook.url,
          events: webhook.events,
          format: webhook.format,
          project: webhook.project,
        },
        now: services.now(),
      });
      return reply.status(201).send({ ...webhook, secret });
    },
  );

  app.delete(
    '/api/v1/webhooks/:id',
    {
      ...admin,
      schema: {
        operationId: 'removeWebhook',
        summary: 'Remove a webhook and its deliveries not sent yet (admin)',
        tags: ['admin'],
        params: Type.Object({ id: Type.String({ minLength: 1, maxLength: 64 }) }),
        response: { 200: WebhookView, ...errors },
      },
    },
    async (request) => {
      checkServerAdmin(request.principal);
      const info = await services.notifications.removeWebhook(request.params.id);
      await services.audit.record({
        actor: actorOf(request.principal!),
        action: 'webhook-remove',
        detail: { id: info.id, url: info.url },
        now: services.now(),
      });
      return info;
    },
  );
}
