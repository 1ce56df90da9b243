/**
 * The server's Fastify application: authentication, error format, OpenAPI, and the routes
 * (`routes/<resource>.ts`, `dashboard/`). `buildServer` returns the instance without listening,
 * so tests can `inject` requests; `start.ts` listens and handles signals.
 */
import { Format } from 'typebox/format';
import { policyDurationFormat, timeZoneFormat } from '../cleanup/policy.js';
import { hostPlanningClock, PlanningClock } from './cleanup/clock.js';
import cookie from '@fastify/cookie';
import formbody from '@fastify/formbody';
import swagger from '@fastify/swagger';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, {
  type FastifyBaseLogger,
  type FastifyError,
  type FastifyReply,
  type FastifyRequest,
} from 'fastify';
import type { LoggerOptions } from 'pino';
import { TendError, type ErrorCode } from '../errors.js';
import { bearerToken, requiredScope, scopeAllows, tokenGrants } from './auth.js';
import type { ServerDatabase } from './db/database.js';
import { AuditRepository } from './db/repositories/audit.js';
import { DashboardSessionRepository } from './db/repositories/dashboard-sessions.js';
import { PersonSessionRepository } from './db/repositories/person-sessions.js';
import { OidcSignIn, type OidcSettings } from './oidc/sign-in.js';
import { EnvironmentRepository } from './db/repositories/environments.js';
import { TokenRepository } from './db/repositories/tokens.js';
import { composeCleanup } from './cleanup/compose.js';
import { CleanupSavings } from './cleanup/savings-service.js';
import type { SavingsPrices } from './cleanup/savings.js';
import { defaultCleanupSettings, type CleanupSettings } from './cleanup/settings.js';
import { registerDashboard } from './dashboard/routes.js';
import {
  NotificationService,
  defaultNotificationSettings,
  type NotificationSettings,
} from './notifications/service.js';
import { registerGithubRoutes } from './routes/github.js';
import { Metrics } from './metrics.js';
import type { App, ServerServices } from './services.js';
import { registerAdminRoutes } from './routes/admin.js';
import { registerAuditRoutes } from './routes/audit.js';
import { registerAuthRoutes } from './routes/auth.js';
import { archiveRoute } from '../cleanup/protocol.js';
import { registerCleanupExecutorRoutes } from './routes/cleanup-executor.js';
import { registerArchiveRoutes } from './routes/archives.js';
import { registerCleanupRoutes } from './routes/cleanup.js';
import { registerCleanupReportRoutes } from './routes/cleanup-report.js';
import { registerEnvironmentRoutes } from './routes/environments.js';
import { registerEventRoutes } from './routes/events.js';
import { registerHealthRoutes } from './routes/health.js';
import { registerSecretRoutes } from './routes/secrets.js';
import { SecretRepository } from './db/repositories/secrets.js';
import { ProjectSecrets, type SecretsKey } from './secrets.js';
import { ErrorResponse } from '../api/views.js';
import { maxNestingDepth, storableProblem } from '../storable.js';

export interface BuildServerOptions {
  db: ServerDatabase;
  /** false (default) for silence, true for info level on stderr, pino options, or a pino logger. */
  logger?: boolean | LoggerOptions | FastifyBaseLogger;
  /** Largest accepted ingest body in bytes (default 16 MiB). */
  bodyLimit?: number;
  /** Most events in one ingest batch (default 10,000). */
  maxEventsPerBatch?: number;
  /** The clock (tests). */
  now?: () => Date;
  /**
   * A clock that never steps, in ms (tests; default the host's monotonic clock, or `now` itself
   * when only `now` is given, so a test that moves `now` moves time rather than stepping the clock).
   */
  monotonicNow?: () => number;
  /** Cleanup settings (`--cleanup-interval`, `--cleanup-max-per-pass`, `--protect-namespace`). */
  cleanup?: Partial<CleanupSettings>;
  /** Webhook delivery settings (tests shorten the backoff). */
  notifications?: Partial<NotificationSettings>;
  /** The GitHub webhook secret: enables POST /api/v1/integrations/github. */
  githubSecret?: string;
  /** `--secrets-key-file`: the key that seals project secrets; without it the server keeps none. */
  secretsKey?: SecretsKey;
  /** Prices of the savings report (`--price-cpu-hour`, `--price-gib-hour`). */
  prices?: SavingsPrices;
  /** Sign-in through an OpenID provider, with the roles file (`--oidc-issuer`, `--roles-file`). */
  oidc?: OidcSettings;
  /** Close the database when the server closes (default true). */
  ownsDatabase?: boolean;
}

export const defaultBodyLimit = 16 * 1024 * 1024;
export const defaultMaxEventsPerBatch = 10_000;

/** Never log secrets: the Authorization header and cookies are redacted wherever they appear. */
export const logRedaction = {
  paths: [
    'req.headers.authorization',
    'req.headers.cookie',
    'headers.authorization',
    'headers.cookie',
    'authorization',
    'token',
  ],
  censor: '[redacted]',
};

export function formatBytes(n: number): string {
  if (n >= 1024 * 1024 && n % (1024 * 1024) === 0) return `${n / (1024 * 1024)} MiB`;
  if (n >= 1024 && n % 1024 === 0) return `${n / 1024} KiB`;
  return `${n} bytes`;
}

export const httpStatusOf: Partial<Record<ErrorCode, number>> = {
  TEND_ARCHIVE: 422,
  TEND_ARCHIVE_NOT_FOUND: 404,
  TEND_AUTH: 401,
  TEND_AUTH_FORBIDDEN: 403,
  TEND_WEBHOOK_NOT_FOUND: 404,
  TEND_CLEANUP_CONFLICT: 409,
  TEND_CLEANUP_JOB_NOT_FOUND: 404,
  TEND_CLEANUP_LEASE_LOST: 409,
  TEND_ENVIRONMENT_NOT_FOUND: 404,
  TEND_SECRET_NOT_FOUND: 404,
  TEND_SECRETS_KEY: 503,
  TEND_EVENT_INVALID: 400,
  TEND_SERVER_BAD_REQUEST: 400,
  TEND_SERVER_NOT_FOUND: 404,
  TEND_SERVER_PAYLOAD_TOO_LARGE: 413,
  TEND_TOKEN_EXISTS: 409,
  TEND_TOKEN_NOT_FOUND: 404,
  TEND_DATABASE: 503,
};

export function errorBody(error: TendError) {
  const { code, message, detail } = error.toJSON();
  return { error: detail ? { code, message, detail } : { code, message } };
}

function isLogger(value: unknown): value is FastifyBaseLogger {
  return (
    typeof value === 'object' && value !== null && typeof (value as { child?: unknown }).child === 'function'
  );
}

/**
 * Every error a request meets, the router's too (a path that is not valid UTF-8 once decoded),
 * is answered in tend's error shape. `bodyLimit`: the server's, for routes that keep the default.
 */
function errorHandler(bodyLimit: number) {
  return (error: FastifyError | TendError, request: FastifyRequest, reply: FastifyReply): void => {
    let tendError: TendError;
    let status: number;
    if (error instanceof TendError) {
      tendError = error;
      status = httpStatusOf[error.code] ?? 500;
    } else if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
      const limit = request.routeOptions.bodyLimit ?? bodyLimit;
      const what =
        request.routeOptions.url === archiveRoute.path
          ? "the archive is refused and the namespace is not deleted: raise the server's --archive-max-size, or set archive: false in the policy of an environment holding nothing worth keeping"
          : 'send smaller batches';
      tendError = new TendError(
        'TEND_SERVER_PAYLOAD_TOO_LARGE',
        `request body exceeds the limit of ${formatBytes(limit)} (${limit} bytes); ${what}`,
        { detail: { limitBytes: limit } },
      );
      status = 413;
    } else if (error.validation || (error.statusCode !== undefined && error.statusCode < 500)) {
      status = error.statusCode ?? 400;
      tendError = new TendError(
        status === 404 ? 'TEND_SERVER_NOT_FOUND' : 'TEND_SERVER_BAD_REQUEST',
        error.message,
      );
    } else {
      request.log.error({ err: error }, 'request failed');
      tendError = new TendError('TEND_INTERNAL', 'internal server error');
      status = 500;
    }
    void reply.status(status).send(errorBody(tendError));
  };
}

export async function buildServer(options: BuildServerOptions): Promise<App> {
  const bodyLimit = options.bodyLimit ?? defaultBodyLimit;
  const logger = options.logger ?? false;
  const handleError = errorHandler(bodyLimit);
  // tend's own string formats, as TypeBox checks them everywhere else.
  const tendFormats = Object.fromEntries(
    [policyDurationFormat, timeZoneFormat].map((name) => [name, (value: string) => Format.Test(name, value)]),
  );
  const app: App = Fastify({
    ...(isLogger(logger)
      ? { loggerInstance: logger }
      : { logger: logger === true ? { level: 'info', redact: logRedaction } : logger }),
    bodyLimit: 1024 * 1024,
    // The ingest route validates events itself (with the catalogue's checkEvent), naming index and field.
    ajv: {
      customOptions: { allErrors: false, coerceTypes: true, removeAdditional: false, formats: tendFormats },
    },
    // Responses with `anyOf` are serialized through Ajv too: it must know the same formats.
    serializerOpts: { ajv: { formats: tendFormats } },
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    frameworkErrors: handleError,
  }).withTypeProvider<TypeBoxTypeProvider>();

  const database = options.db;
  const metrics = new Metrics();
  const now = options.now ?? (() => new Date());
  const planningClock =
    options.now || options.monotonicNow
      ? new PlanningClock(now, options.monotonicNow ?? (() => now().getTime()))
      : hostPlanningClock();
  const audit = new AuditRepository(database.db, database.reader);
  const services: ServerServices = {
    database,
    tokens: new TokenRepository(database.db, database.reader),
    environments: new EnvironmentRepository(database.db, database.reader),
    audit,
    dashboardSessions: new DashboardSessionRepository(database.db, database.reader),
    personSessions: new PersonSessionRepository(database.db, database.reader),
    oidc: options.oidc ? new OidcSignIn(options.oidc) : undefined,
    metrics,
    cleanup: composeCleanup(database.db, database.reader, metrics, planningClock, {
      ...defaultCleanupSettings,
      ...options.cleanup,
    }),
    notifications: new NotificationService(database.db, database.reader, now, {
      ...defaultNotificationSettings,
      ...options.notifications,
    }),
    savings: new CleanupSavings(database.reader, options.prices ?? {}, now),
    githubSecret: options.githubSecret,
    secrets: new ProjectSecrets(
      new SecretRepository(database.db, database.reader),
      audit,
      options.secretsKey,
      now,
    ),
    now,
    limits: { bodyLimit, maxEventsPerBatch: options.maxEventsPerBatch ?? defaultMaxEventsPerBatch },
  };

  app.decorateRequest('principal', null);
  app.decorate('cleanup', services.cleanup);
  app.decorate('notifications', services.notifications);
  app.decorate('oidc', services.oidc);

  addAuthentication(app, services);

  // Path parameters, query values and (schema-declared) JSON bodies the database could not store (NUL, a lone
  // surrogate, nesting too deep) or that are not numbers at all (`limit=Infinity` passes the
  // schema's coercion): 400, not 500. The ingest route checks each event alone instead (one bad
  // event must not refuse the others); raw bodies (a webhook's signed text) are not JSON yet.
  app.addHook('preHandler', async (request: FastifyRequest) => {
    const { schema, config } = request.routeOptions;
    // API routes only (they have a permission): the dashboard's forms handle their own fields.
    const api = config.permission !== undefined && !config.checksItemsAlone;
    const body = api && typeof request.body === 'object' ? request.body : undefined;
    for (const [part, values, declared, depth] of [
      ['path parameter', request.params, schema?.params, 2],
      ['query parameter', request.query, schema?.querystring, 2],
      ['body field', body, body !== undefined && schema?.body !== undefined, maxNestingDepth],
    ] as const) {
      if (!declared) continue;
      const problem = storableProblem(values, depth);
      if (problem) {
        throw new TendError(
          'TEND_SERVER_BAD_REQUEST',
          `${part} "${problem.path.slice(1)}" ${problem.message}`,
          { detail: { path: problem.path } },
        );
      }
    }
  });

  app.setErrorHandler(handleError);

  app.setNotFoundHandler((request, reply) => {
    void reply
      .status(404)
      .send(errorBody(new TendError('TEND_SERVER_NOT_FOUND', `no route ${request.method} ${request.url}`)));
  });

  await documentRoutes(app);
  await app.register(cookie);
  await app.register(formbody);

  registerHealthRoutes(app, services);
  registerAuthRoutes(app, services);
  registerEventRoutes(app, services);
  registerEnvironmentRoutes(app, services);
  registerAuditRoutes(app, services);
  registerCleanupExecutorRoutes(app, services);
  registerCleanupRoutes(app, services);
  registerCleanupReportRoutes(app, services);
  registerArchiveRoutes(app, services);
  registerSecretRoutes(app, services);
  registerAdminRoutes(app, services);
  registerGithubRoutes(app, services);
  registerDashboard(app, services);

  app.get('/api/v1/openapi.json', { schema: { hide: true } }, async () => app.swagger());

  if (options.ownsDatabase !== false) {
    app.addHook('onClose', async () => {
      await database.close();
    });
  }
  return app;
}

/** Bearer tokens on every route with a permission, checked before the body is read. */
function addAuthentication(app: App, services: ServerServices): void {
  // Authentication runs before the body is read: an unauthenticated client cannot make the
  // server parse a large body.
  const lastTouched = new Map<string, number>();
  app.addHook('onRequest', async (request: FastifyRequest) => {
    const permission = request.routeOptions.config.permission;
    if (!permission) return;
    const token = bearerToken(request.headers.authorization);
    if (!token) {
      throw new TendError('TEND_AUTH', 'this route needs a token: send "Authorization: Bearer <token>"', {
        detail: { hint: 'create one with `tend server token create --name <name> --scope <scope>`' },
      });
    }
    const row = await services.tokens.findLive(token);
    if (!row) throw new TendError('TEND_AUTH', 'the token is unknown or has been revoked');
    if (!scopeAllows(row.scope, permission)) {
      throw new TendError(
        'TEND_AUTH_FORBIDDEN',
        `token "${row.name}" has scope "${row.scope}"; this route needs "${requiredScope(permission)}"`,
      );
    }
    request.principal = {
      tokenId: row.id,
      tokenName: row.name,
      scope: row.scope,
      project: row.project,
      clusters: row.clusters ? (JSON.parse(row.clusters) as string[]) : null,
      targets: row.targets ? (JSON.parse(row.targets) as string[]) : null,
      via: 'bearer',
      person: null,
      grants: tokenGrants(row.scope, row.project),
    };
    // Record use at most once a minute per token: no write per request, and none waited for (the
    // SQLite writer may be busy with a backlog of batches).
    const now = services.now().getTime();
    if ((lastTouched.get(row.id) ?? 0) < now - 60_000) {
      lastTouched.set(row.id, now);
      services.tokens
        .touch(row.id, new Date(now).toISOString())
        .catch((error: unknown) => request.log.warn({ err: error }, 'could not record the token use'));
    }
  });
}

/** The OpenAPI document: the statuses every route of its kind answers, then @fastify/swagger. */
async function documentRoutes(app: App): Promise<void> {
  // The OpenAPI document lists every status a route answers: the ones every route of its kind
  // shares are added here (authentication, input checks, body parsing), the rest by the route.
  app.addHook('onRoute', (route) => {
    const schema = route.schema;
    if (!schema || schema.hide) return;
    const response = (schema.response ??= {}) as Record<number, unknown>;
    const answers = (status: number, description: string) => {
      response[status] ??= { ...ErrorResponse, description };
    };
    const methods = [route.method].flat();
    if (schema.querystring || schema.params || methods.includes('POST')) {
      answers(400, 'Invalid input: a parameter, query value or body the server cannot accept.');
    }
    const permission = route.config?.permission;
    // The permission and the smallest scope that has it, for clients and for the test that
    // walks every route against every scope (docs/server.md, "Scopes and roles").
    if (permission)
      Object.assign(schema, { 'x-permission': permission, 'x-scope': requiredScope(permission) });
    if (permission) answers(401, 'No token, or an unknown or revoked one.');
    if (permission && requiredScope(permission) !== 'ingest') {
      answers(403, `The token's scope is too small (this route needs "${requiredScope(permission)}").`);
    }
    if (methods.includes('POST')) {
      answers(413, 'The request body is over the limit.');
      answers(
        415,
        'The body is in a content type the server does not read (it reads JSON, forms and plain text).',
      );
    }
  });

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'tend server API',
        version: '1',
        description:
          'Event ingest and the registry of environments. Authenticate with `Authorization: Bearer <token>`.',
      },
      components: {
        securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
      },
      security: [{ bearer: [] }],
    },
    // A route whose body may be left out (keep-alive) says so with `x-optional-body`.
    transformObject: (documentObject) => {
      const document =
        'openapiObject' in documentObject ? documentObject.openapiObject : documentObject.swaggerObject;
      for (const operations of Object.values(document.paths ?? {})) {
        for (const operation of Object.values(operations as Record<string, Record<string, unknown>>)) {
          if (operation['x-optional-body'] === undefined) continue;
          delete operation['x-optional-body'];
          const body = operation.requestBody as { required?: boolean } | undefined;
          if (body) body.required = false;
        }
      }
      return document;
    },
  });
}
