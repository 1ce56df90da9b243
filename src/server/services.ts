/**
 * What every route module and the dashboard receive: the Fastify instance type (with the
 * request's principal) and the services (database, repositories, clock, limits). Its own module so
 * that app.ts can import the routes without the routes importing app.ts back.
 */
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type {
  FastifyBaseLogger,
  FastifyInstance,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
} from 'fastify';
import type { Permission, Principal } from './auth.js';
import type { ServerDatabase } from './db/database.js';
import type { AuditRepository } from './db/repositories/audit.js';
import type { DashboardSessionRepository } from './db/repositories/dashboard-sessions.js';
import type { PersonSessionRepository } from './db/repositories/person-sessions.js';
import type { EnvironmentRepository } from './db/repositories/environments.js';
import type { TokenRepository } from './db/repositories/tokens.js';
import type { ServerCleanup } from './cleanup/compose.js';
import type { CleanupSavings } from './cleanup/savings-service.js';
import type { Metrics } from './metrics.js';
import type { NotificationService } from './notifications/service.js';
import type { OidcSignIn } from './oidc/sign-in.js';
import type { ProjectSecrets } from './secrets.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The token behind the request, once authenticated (null on public routes). */
    principal: Principal | null;
  }
  interface FastifyInstance {
    /** The server's cleanup: the planning loop and the embedded executor use it in process. */
    cleanup: ServerCleanup;
    /** Webhook notifications: the server's loop runs their passes. */
    notifications: NotificationService;
    /** Sign-in through the OpenID provider: told where the server listens once it does. */
    oidc: OidcSignIn | undefined;
  }
  interface FastifyContextConfig {
    /** What the route needs; routes without it are public (health) or handle auth themselves (dashboard). */
    permission?: Permission;
    /** The route checks each item of its body alone (ingest): no whole-body storable check. */
    checksItemsAlone?: boolean;
  }
}

export type App = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;

export interface ServerServices {
  database: ServerDatabase;
  tokens: TokenRepository;
  environments: EnvironmentRepository;
  audit: AuditRepository;
  dashboardSessions: DashboardSessionRepository;
  /** Dashboard sessions of people signed in through the OpenID provider. */
  personSessions: PersonSessionRepository;
  /** Sign-in through the OpenID provider (`--oidc-issuer`); undefined: token login only. */
  oidc: OidcSignIn | undefined;
  metrics: Metrics;
  /** The cleanup repositories, job queue, planning pass and switches. */
  cleanup: ServerCleanup;
  notifications: NotificationService;
  /** What cleanup saved: the report route, the dashboard's Savings page and /metrics. */
  savings: CleanupSavings;
  /** The GitHub webhook secret (`--github-webhook-secret-file`); undefined: the route answers 404. */
  githubSecret: string | undefined;
  /** The project secrets of `${secrets.*}` (sealed with `--secrets-key-file`). */
  secrets: ProjectSecrets;
  now: () => Date;
  limits: { bodyLimit: number; maxEventsPerBatch: number };
}
