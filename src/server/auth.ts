/**
 * API tokens and what they may do.
 *
 * A token is `tend_` followed by 32 random bytes in base64url. The server stores only its
 * sha256; the token is shown once, when it is created. Scopes are ordered, each including the
 * ones below it:
 *
 * - `ingest`: send events (`POST /api/v1/events`) — for CI and the CLI's event stream.
 * - `agent`: ingest, plus the cleanup executor routes (heartbeat, inventory, claim, start,
 *   complete) — for `tend agent`. Nothing else: it cannot read the registry. A token created
 *   with `--cluster` only acts on those clusters' targets.
 * - `read`: ingest, plus read the API, `/metrics` and the dashboard, and keep an environment
 *   alive (a bounded postponement of cleanup) — for developers.
 * - `admin`: everything, including protect/unprotect (an unbounded exemption from cleanup) and
 *   the cleanup switches (enforce, halt, resume, breaker reset, clean up now).
 *
 * A token created with `--project` only sees and writes that project.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { sha256Hex } from '../hash.js';
import type { TokenScope } from './db/schema.js';

export const tokenScopes: readonly TokenScope[] = ['ingest', 'agent', 'read', 'admin'];

/** What a route needs. */
export type Permission = 'ingest' | 'agent' | 'read' | 'keep-alive' | 'protect' | 'admin';

const allowed: Record<TokenScope, ReadonlySet<Permission>> = {
  ingest: new Set(['ingest']),
  agent: new Set(['ingest', 'agent']),
  read: new Set(['ingest', 'read', 'keep-alive']),
  admin: new Set(['ingest', 'agent', 'read', 'keep-alive', 'protect', 'admin']),
};

const minimumScope: Record<Permission, TokenScope> = {
  ingest: 'ingest',
  agent: 'agent',
  read: 'read',
  'keep-alive': 'read',
  protect: 'admin',
  admin: 'admin',
};

export function isTokenScope(value: string): value is TokenScope {
  return (tokenScopes as readonly string[]).includes(value);
}

export function scopeAllows(scope: TokenScope, permission: Permission): boolean {
  return allowed[scope].has(permission);
}

export function requiredScope(permission: Permission): TokenScope {
  return minimumScope[permission];
}

export const tokenPrefix = 'tend_';

/** A token's name: 1-63 letters, digits, ".", "_" or "-", starting with a letter or digit. */
export const tokenNamePattern = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;

/** The project a token or webhook is bound to: lower-case letters, digits and "-" (at most 253). */
export const projectBindingPattern = /^[a-z0-9]([-a-z0-9]{0,251}[a-z0-9])?$/;

export function generateToken(): string {
  return tokenPrefix + randomBytes(32).toString('base64url');
}

/** Random opaque value for cookies and CSRF tokens. */
export function generateSecret(): string {
  return randomBytes(32).toString('base64url');
}

export function hashToken(token: string): string {
  return sha256Hex(token);
}

/** The visible start of a token, for lists: `tend_AbCd`. */
export function displayPrefix(token: string): string {
  return token.slice(0, tokenPrefix.length + 4);
}

export function constantTimeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** The token behind a request, as routes see it (never the secret itself). */
export interface Principal {
  tokenId: string;
  tokenName: string;
  scope: TokenScope;
  project: string | null;
  /** For `agent` tokens created with `--cluster`: the cluster ids it may act on (null: any). */
  clusters: string[] | null;
  /** How the request authenticated: bearer token (API) or dashboard session cookie. */
  via: 'bearer' | 'dashboard';
}

export function actorOf(principal: Principal): string {
  return `${principal.via === 'dashboard' ? 'dashboard' : 'token'}:${principal.tokenName}`;
}

/** The token from an `Authorization: Bearer …` header, or undefined. */
export function bearerToken(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match?.[1];
}
