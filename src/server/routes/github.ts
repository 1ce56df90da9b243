/**
 * `POST /api/v1/integrations/github`: GitHub's `pull_request` webhooks. Authenticated by the
 * delivery's `X-Hub-Signature-256` (HMAC-SHA256 of the raw body with the secret of
 * `--github-webhook-secret-file`), verified with @octokit/webhooks-methods — not by a bearer
 * token. A delivery id or signature seen before is a replay: 401, nothing changed. A pull request
 * closed or merged makes the active environments recorded for it (`environments[].pullRequest`)
 * due after their policy's `afterClose`, through the planner and every check of it; reopened
 * makes them not due again.
 */
import { Type, type Static } from 'typebox';
import { verify } from '@octokit/webhooks-methods';
import { sha256Hex } from '../../hash.js';
import { schemaCheck, schemaProblems } from '../../schema-check.js';
import { TendError } from '../../errors.js';
import { ErrorResponse } from '../../api/views.js';
import { storableProblem } from '../../storable.js';
import type { App, ServerServices } from '../services.js';

/** GitHub caps payloads at 25 MB; a pull_request delivery is tens of KiB. */
export const githubBodyLimit = 1024 * 1024;

/** The part of a `pull_request` payload tend reads (the rest is GitHub's and ignored). */
const PullRequestPayload = Type.Object({
  action: Type.String({ maxLength: 64 }),
  number: Type.Integer({ minimum: 1, maximum: 2_147_483_647 }),
  pull_request: Type.Object({ merged: Type.Optional(Type.Union([Type.Boolean(), Type.Null()])) }),
  repository: Type.Object({ full_name: Type.String({ minLength: 3, maxLength: 201 }) }),
});
const checkPayload = schemaCheck(PullRequestPayload);

const Answer = Type.Object({
  event: Type.String(),
  action: Type.Union([Type.String(), Type.Null()]),
  repository: Type.Union([Type.String(), Type.Null()]),
  number: Type.Union([Type.Integer(), Type.Null()]),
  state: Type.Union([Type.String(), Type.Null()]),
  environments: Type.Integer({ description: 'Environments whose pull-request state changed.' }),
  ignored: Type.Optional(Type.String()),
});

/** The state a pull_request action leaves the pull request in; undefined: unchanged. */
function stateOf(p: Static<typeof PullRequestPayload>): 'open' | 'closed' | 'merged' | undefined {
  if (p.action === 'closed') return p.pull_request.merged ? 'merged' : 'closed';
  if (p.action === 'reopened' || p.action === 'opened') return 'open';
  return undefined;
}

export function registerGithubRoutes(app: App, services: ServerServices): void {
  const repo = services.notifications.repository;
  void app.register(async (scope) => {
    // The signature covers the body's bytes: keep them as they came, whatever the content type
    // (the handler refuses anything but JSON once the signature is checked).
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'string' }, (_request, body, done) => {
      done(null, body);
    });
    scope.post(
      '/api/v1/integrations/github',
      { bodyLimit: githubBodyLimit, schema: routeSchema },
      async (request, reply) => {
        const header = (name: string): string | undefined => {
          const value = request.headers[name];
          return typeof value === 'string' ? value : undefined;
        };
        const body = typeof request.body === 'string' ? request.body : '';
        const { signatureKey, deliveryId } = await authenticate(services, header, body);
        const event = header('x-github-event') ?? '';
        const base = { event, action: null, repository: null, number: null, state: null, environments: 0 };
        // Every authenticated delivery is remembered, the ignored ones too: a replay does nothing.
        const ignore = async (
          status: 200 | 202,
          answer: Static<typeof Answer>,
          seen: { action?: string; repository?: string; number?: number } = {},
        ) => {
          const fresh = await repo.rememberIgnoredDelivery(
            { signature: signatureKey, deliveryId, event, ...seen },
            services.now(),
          );
          if (!fresh) throw replayOf(deliveryId);
          return reply.status(status).send(answer);
        };
        if (event !== 'pull_request') {
          return ignore(
            event === 'ping' ? 200 : 202,
            event === 'ping'
              ? base
              : { ...base, ignored: `tend reads pull_request events, not "${event.slice(0, 64)}"` },
          );
        }
        const payload = pullRequestPayload(header, body);
        const repository = payload.repository.full_name;
        const state = stateOf(payload);
        const answer = {
          ...base,
          action: payload.action,
          repository,
          number: payload.number,
          state: state ?? null,
        };
        if (!(await repo.knowsRepository(repository))) {
          return ignore(
            202,
            { ...answer, ignored: `no environment of repository ${repository} is recorded` },
            { action: payload.action, repository, number: payload.number },
          );
        }
        const now = services.now();
        const applied = await repo.applyPullRequest(
          {
            signature: signatureKey,
            deliveryId,
            action: payload.action,
            repository,
            number: payload.number,
            ...(state ? { state } : {}),
          },
          now,
        );
        if (!applied) throw replayOf(deliveryId);
        if (state && applied.environments > 0) {
          await services.audit.record({
            actor: `github:${deliveryId}`,
            action: state === 'open' ? 'pull-request-reopened' : 'pull-request-closed',
            detail: { repository, number: payload.number, state, environments: applied.environments },
            now,
          });
        }
        return reply.status(200).send({ ...answer, environments: applied.environments });
      },
    );
  });
}

const routeSchema = {
  operationId: 'receiveGithubWebhook',
  summary:
    "GitHub pull_request webhooks (authenticated by X-Hub-Signature-256, not a bearer token): closed or merged makes the pull request's environments due after afterClose; reopened, not due",
  tags: ['integrations'],
  security: [],
  headers: Type.Object({
    'x-hub-signature-256': Type.Optional(Type.String({ maxLength: 200 })),
    'x-github-event': Type.Optional(Type.String({ maxLength: 100 })),
    'x-github-delivery': Type.Optional(Type.String({ maxLength: 100 })),
  }),
  response: {
    200: Answer,
    202: Answer,
    400: ErrorResponse,
    401: { ...ErrorResponse, description: 'No signature, a wrong one, or a replayed delivery.' },
    404: { ...ErrorResponse, description: 'The GitHub integration is not configured.' },
    413: ErrorResponse,
  },
};

function replayOf(deliveryId: string): TendError {
  return new TendError(
    'TEND_AUTH',
    `delivery ${deliveryId} (or its signature) was accepted before: a replay`,
  );
}

/**
 * The delivery, if it is GitHub's: the integration configured, the body signed with its secret,
 * a delivery id, and neither the id nor the signature accepted before (a replay).
 */
async function authenticate(
  services: ServerServices,
  header: (name: string) => string | undefined,
  body: string,
): Promise<{ signatureKey: string; deliveryId: string }> {
  const secret = services.githubSecret;
  if (!secret) {
    throw new TendError('TEND_SERVER_NOT_FOUND', 'the GitHub integration is not configured on this server', {
      detail: {
        hint: 'start tend server with --github-webhook-secret-file or TEND_GITHUB_WEBHOOK_SECRET',
      },
    });
  }
  const signature = header('x-hub-signature-256');
  if (!signature) {
    throw new TendError('TEND_AUTH', 'the delivery has no X-Hub-Signature-256 header');
  }
  // The verifier refuses an empty payload by throwing: nothing to verify is a bad request.
  if (body === '') throw new TendError('TEND_SERVER_BAD_REQUEST', 'the delivery body is empty');
  if (!/^sha256=[0-9a-f]{64}$/.test(signature) || !(await verify(secret, body, signature))) {
    throw new TendError('TEND_AUTH', 'X-Hub-Signature-256 does not match the body and the configured secret');
  }
  const deliveryId = header('x-github-delivery');
  if (!deliveryId || !/^[A-Za-z0-9-]{1,100}$/.test(deliveryId)) {
    throw new TendError('TEND_SERVER_BAD_REQUEST', 'the delivery has no valid X-GitHub-Delivery header');
  }
  const signatureKey = sha256Hex(signature);
  if (await services.notifications.repository.seenGithubDelivery(signatureKey, deliveryId)) {
    throw replayOf(deliveryId);
  }
  return { signatureKey, deliveryId };
}

/** The pull_request payload of a JSON body, with only text the databases can store. */
function pullRequestPayload(
  header: (name: string) => string | undefined,
  body: string,
): Static<typeof PullRequestPayload> {
  const contentType = (header('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
  if (contentType !== 'application/json') {
    throw new TendError(
      'TEND_SERVER_BAD_REQUEST',
      `the delivery's content type is ${contentType ? `"${contentType.slice(0, 100)}"` : 'missing'}; set the webhook's content type to application/json in GitHub`,
    );
  }
  let payload: unknown;
  try {
    payload = JSON.parse(body);
  } catch {
    throw new TendError(
      'TEND_SERVER_BAD_REQUEST',
      body === '' ? 'the body is empty' : 'the body is not JSON',
    );
  }
  if (!checkPayload.Check(payload)) {
    const [first] = schemaProblems(checkPayload.Errors(payload), 1);
    throw new TendError(
      'TEND_SERVER_BAD_REQUEST',
      `not a pull_request payload: ${first ? `${first.path} ${first.message}` : 'unexpected shape'}`,
    );
  }
  // What is stored (the delivery's action and repository) must be text the databases take:
  // a NUL is refused by PostgreSQL, a lone surrogate by both.
  const unstorable = storableProblem({ action: payload.action, repository: payload.repository.full_name }, 2);
  if (unstorable) {
    throw new TendError(
      'TEND_SERVER_BAD_REQUEST',
      `not a pull_request payload: ${unstorable.path.slice(1)} ${unstorable.message}`,
    );
  }
  return payload;
}
