/**
 * The cleanup jobs an executor runs for a plugin, from the primitives its cleanup part has:
 * delete, pause and resume jobs always (the framework cancels a pause or resume, saying why, for a
 * plugin without those primitives), restore jobs only with `restore`. The executor says so in its
 * heartbeat and claims; the server hands a job only to an executor that runs its action for its
 * plugin, and takes a restore request only for a plugin an executor restores.
 */
import { plannedActions, type CleanupAction } from '../cleanup/protocol.js';
import type { CleanupPrimitives } from './cleanup-types.js';

export function cleanupActionsOf(cleanup: CleanupPrimitives<unknown>): CleanupAction[] {
  return [...plannedActions, ...(cleanup.restore ? (['restore'] as const) : [])];
}
