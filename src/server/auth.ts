/**
 * API tokens and what they may do.
 *
 * A token is `tend_` followed by 32 random bytes in base64url. The server stores only its
 * sha256 (db/credentials.ts); the token is shown once, when it is created. Scopes are ordered, each including the
 * ones below it (`agent` aside):
 *
 * - `ingest`: send events (`POST /api/v1/events`) — for CI and the CLI's event stream.
 * - `agent`: ingest, plus the cleanup executor routes (heartbeat, inventory, claim, start,
 *   complete) — for `tend agent`. Nothing else: it cannot read the registry. A token created
 *   with `--cluster` or `--target` only acts on those clusters and targets.
 * - `read`: ingest, plus read the API, `/metrics` and the dashboard — the `viewer` role. It
 *   changes nothing: keeping alive and resuming are writes (a keep-alive postpones cleanup).
 * - `developer`: ingest and the `developer` role: keep alive, resume, protect/unprotect and clean
 *   up now, and read the project's secret values (`${secrets.*}` for the commands that deploy).
 * - `admin`: everything, including the cleanup switches (enforce, halt, resume, breaker reset),
 *   tokens, webhooks and restore — the `admin` role.
 *
 * A token created with `--project` only sees and writes that project; a person signed in sees
 * only the projects they hold a role in (`visibleProjects`).
 */
import { timingSafeEqual } from 'node:crypto';
import { TendError } from '../errors.js';
import type { TokenScope } from './db/schema.js';
import type { VisibleProjects } from './db/visible-projects.js';

export const tokenScopes: readonly TokenScope[] = ['ingest', 'agent', 'read', 'developer', 'admin'];

/** What a route or a dashboard form needs. */
export type Permission =
  | 'ingest'
  | 'agent'
  | 'read'
  | 'keep-alive'
  | 'resume'
  | 'protect'
  | 'clean-now'
  | 'secrets'
  | 'restore'
  | 'admin';

/**
 * What people may do in a project, whether they sign in through the OpenID provider (the roles
 * file) or use a token (its scope, below). Restoring an archived environment is admin-only.
 */
export type Role = 'viewer' | 'developer' | 'admin';
export const roles: readonly Role[] = ['viewer', 'developer', 'admin'];

const rolePermissions: Record<Role, ReadonlySet<Permission>> = {
  viewer: new Set(['read']),
  developer: new Set(['read', 'keep-alive', 'resume', 'protect', 'clean-now', 'secrets']),
  admin: new Set(['read', 'keep-alive', 'resume', 'protect', 'clean-now', 'secrets', 'restore', 'admin']),
};

/**
 * Token scopes as roles: `read` is the viewer, `developer` and `admin` are the roles of the same
 * names; every scope but `agent` may send events, and `agent` and `admin` may run the executor
 * routes. Only roles that may write to a project change its cleanup: a read token once moved a
 * keep-alive of a day to a minute, and the namespace was deleted.
 */
const scopePermissions: Record<TokenScope, ReadonlySet<Permission>> = {
  ingest: new Set(['ingest']),
  agent: new Set(['ingest', 'agent']),
  read: new Set(['ingest', ...rolePermissions.viewer]),
  developer: new Set(['ingest', ...rolePermissions.developer]),
  admin: new Set(['ingest', 'agent', ...rolePermissions.admin]),
};

export function isTokenScope(value: string): value is TokenScope {
  return (tokenScopes as readonly string[]).includes(value);
}

export function isRole(value: string): value is Role {
  return (roles as readonly string[]).includes(value);
}

export function scopeAllows(scope: TokenScope, permission: Permission): boolean {
  return scopePermissions[scope].has(permission);
}

export function roleAllows(role: Role, permission: Permission): boolean {
  return rolePermissions[role].has(permission);
}

/** The smallest scope with a permission, for the message of a 403 (every permission has one: admin's). */
export function requiredScope(permission: Permission): TokenScope {
  return tokenScopes.find((scope) => scopeAllows(scope, permission))!;
}

/** The smallest role with a permission, for the dashboard's messages. */
export function requiredRole(permission: Permission): Role {
  return roles.find((role) => roleAllows(role, permission)) ?? 'admin';
}

/** The key of the grant that holds in every project. */
export const everyProject = '*';

/** What a principal may do, by project (`*`: in every project). */
export type Grants = ReadonlyMap<string, ReadonlySet<Permission>>;

export function tokenGrants(scope: TokenScope, project: string | null): Grants {
  return new Map([[project ?? everyProject, scopePermissions[scope]]]);
}

export function roleGrants(byProject: ReadonlyMap<string, Role>): Grants {
  return new Map([...byProject].map(([project, role]) => [project, rolePermissions[role]]));
}

/** A token's name: 1-63 letters, digits, ".", "_" or "-", starting with a letter or digit. */
export const tokenNamePattern = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;

/** The project a token or webhook is bound to: lower-case letters, digits and "-" (at most 253). */
export const projectBindingPattern = /^[a-z0-9]([-a-z0-9]{0,251}[a-z0-9])?$/;

export function constantTimeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** Who is behind a request, as routes see it (never a secret): a token, or a signed-in person. */
export type Principal = TokenPrincipal | PersonPrincipal;

interface PrincipalCommon {
  /** The token's name, or the person's e-mail address (else their subject). */
  tokenName: string;
  /** What the principal may do, by project. */
  grants: Grants;
}

/** A token: sent as a bearer token (API), or behind a dashboard session it logged in. */
export interface TokenPrincipal extends PrincipalCommon {
  tokenId: string;
  scope: TokenScope;
  /** A token bound to one project; null for an unbound token. */
  project: string | null;
  /** For `agent` tokens created with `--cluster`: the cluster ids it may act on (null: any). */
  clusters: string[] | null;
  /**
   * For `agent` tokens created with `--target`: the executor targets (`<kind>/<id>`, any plugin's)
   * it may act on, beside its clusters. Null or absent: bound to none but its clusters (if any).
   */
  targets?: string[] | null;
  /** How the request authenticated: bearer token (API) or dashboard session of a token. */
  via: 'bearer' | 'dashboard';
  person: null;
}

/** A person signed in through the OpenID provider: their roles are in `grants`. */
export interface PersonPrincipal extends PrincipalCommon {
  tokenId: null;
  scope: null;
  project: null;
  clusters: null;
  via: 'oidc';
  person: { subject: string; email: string | null };
}

/**
 * The principal of an API route (`config.permission`): the onRequest hook lets only bearer
 * tokens in, so anything else is a mistake in the server, not the caller's.
 */
export function bearerPrincipal(principal: Principal | null): TokenPrincipal {
  if (principal?.via !== 'bearer') {
    throw new TendError(
      'TEND_INTERNAL',
      `an API route was reached without a bearer token (${principal ? `via ${principal.via}` : 'no principal'})`,
    );
  }
  return principal;
}

/**
 * Whether the principal may do this in the project (null: something that concerns every project,
 * such as the halt switch, which only a grant for every project allows).
 */
export function allows(principal: Principal, permission: Permission, project: string | null): boolean {
  if (principal.grants.get(everyProject)?.has(permission)) return true;
  return project !== null && (principal.grants.get(project)?.has(permission) ?? false);
}

export type { VisibleProjects };

/** (No principal: a route that needs no token, which reads no project's data.) */
export function visibleProjects(principal: Principal | null): VisibleProjects {
  if (!principal || principal.grants.has(everyProject)) return 'all';
  return new Set(principal.grants.keys());
}

/** A person as the audit log names them: `oidc:<e-mail> (subject <sub>)`. */
export function personActor(person: { subject: string; email: string | null }): string {
  return `oidc:${person.email ?? '(no e-mail)'} (subject ${person.subject})`;
}

/** The audit log's name of who did something: a token, or a person with their e-mail and subject. */
export function actorOf(principal: Principal): string {
  if (principal.person) return personActor(principal.person);
  return `${principal.via === 'dashboard' ? 'dashboard' : 'token'}:${principal.tokenName}`;
}

/** The token from an `Authorization: Bearer …` header, or undefined. */
export function bearerToken(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match?.[1];
}
