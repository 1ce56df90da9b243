/**
 * Which recorded resources are on an executor's target, for the queries of inventories: a
 * Kubernetes target's key is the resource's; a local target holds every path of its host. And
 * the resources with their environment those queries read.
 */
import type { ExpressionBuilder } from 'kysely';
import type { Database, DatabaseOrTransaction } from '../schema.js';

/** Resources with their environment's project and name, as the inventory's checks compare them. */
export function resourcesWithEnvironment(db: DatabaseOrTransaction) {
  return db
    .selectFrom('resources')
    .innerJoin('environments', 'environments.id', 'resources.environment_id')
    .select([
      'resources.id',
      'resources.environment_id',
      'resources.namespace_name',
      'resources.namespace_uid',
      'environments.project',
      'environments.name',
    ]);
}

/** A resource on this target (a local target: any path of the host, `local/<hostId>/<path>`). */
export function onTarget(eb: ExpressionBuilder<Database, 'resources'>, targetKey: string) {
  return eb.or([
    eb('resources.target_key', '=', targetKey),
    // No LIKE: host ids may hold `_`.
    eb(
      eb.fn('substr', ['resources.target_key', eb.lit(1), eb.lit(targetKey.length + 1)]),
      '=',
      `${targetKey}/`,
    ),
  ]);
}
