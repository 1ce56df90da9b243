/**
 * Which recorded resources are on an executor's target, for the queries of inventories: a
 * Kubernetes target's key is the resource's; a local target holds every path of its host.
 */
import type { ExpressionBuilder } from 'kysely';
import type { Database } from '../schema.js';

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
