/**
 * What the JSON API and the dashboard ask of environments alike: the list filters (`staleSince`
 * as a time or a duration), which environments a principal may see (its `visibleProjects`), and
 * how long a keep-alive may last. One module, so both surfaces answer the same.
 */
import { Type } from 'typebox';
import { TendError } from '../errors.js';
import { visibleProjects, type Principal } from './auth.js';
import { canSee } from './db/visible-projects.js';
import type { EnvironmentFilter } from './db/repositories/environments.js';
import type { Environment } from './db/schema.js';
import { EnvironmentStateSchema } from '../api/views.js';
import type { ServerServices } from './services.js';
import { parseDuration } from '../cleanup/policy.js';

/** The longest search text accepted (a longer one is a 400). */
export const maxSearchLength = 200;

export const ListQuery = Type.Object({
  search: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: maxSearchLength,
      description:
        'Case-insensitive substring of the project, environment name, namespace or owner (at most 200 characters).',
    }),
  ),
  project: Type.Optional(Type.String({ minLength: 1 })),
  environment: Type.Optional(Type.String({ minLength: 1, description: 'Environment name, e.g. dev.' })),
  state: Type.Optional(EnvironmentStateSchema),
  staleSince: Type.Optional(
    Type.String({
      description:
        'Only environments with no activity since this time: an RFC 3339 time, or a duration back from now ("8h", "3d").',
    }),
  ),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 50 })),
  cursor: Type.Optional(Type.String({ description: 'nextCursor of the previous page.' })),
});

export const maxKeepAliveMs = 30 * 86_400_000;

/** Resolves `staleSince` (time or duration) to an ISO time. */
export function staleBefore(value: string, now: Date): string {
  const ms = parseDuration(value);
  // A duration reaching before the first representable time (999999999d) is bad input too.
  const t = ms !== undefined ? now.getTime() - ms : Date.parse(value);
  const time = new Date(t);
  if (Number.isNaN(time.getTime())) {
    throw new TendError(
      'TEND_SERVER_BAD_REQUEST',
      ms !== undefined
        ? `staleSince reaches too far back: "${value.slice(0, 64)}"`
        : `staleSince must be an RFC 3339 time or a duration like "8h", got "${value.slice(0, 64)}"`,
    );
  }
  return time.toISOString();
}

export function listFilter(
  query: {
    search?: string;
    project?: string;
    environment?: string;
    state?: EnvironmentFilter['state'];
    staleSince?: string;
  },
  principal: Principal | null,
  now: Date,
): EnvironmentFilter {
  return {
    search: query.search,
    project: query.project,
    environment: query.environment,
    state: query.state,
    staleSince: query.staleSince ? staleBefore(query.staleSince, now) : undefined,
    visible: visibleProjects(principal),
  };
}

/**
 * The environment, if it exists and the principal may see its project: another project's is not
 * found (404), so an id does not tell that it exists.
 */
export async function visibleEnvironment(
  services: ServerServices,
  id: string,
  principal: Principal | null,
): Promise<Environment> {
  const env = await services.environments.get(id);
  if (!env || !canSee(visibleProjects(principal), env.project)) {
    throw new TendError('TEND_ENVIRONMENT_NOT_FOUND', `no environment with id "${id.slice(0, 64)}"`);
  }
  return env;
}

export function keepAliveUntil(duration: string | undefined, now: Date): Date {
  const ms = parseDuration(duration ?? '24h');
  if (ms === undefined || ms <= 0 || ms > maxKeepAliveMs) {
    throw new TendError('TEND_SERVER_BAD_REQUEST', 'keep-alive takes a duration from 1m to 30d, e.g. "8h"');
  }
  return new Date(now.getTime() + ms);
}
