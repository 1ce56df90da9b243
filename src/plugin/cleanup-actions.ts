/**
 * The cleanup jobs an executor runs for a plugin, from what the plugin's cleanup part has: every
 * one runs delete, pause and resume jobs through `verifyAndClean` (a plugin with nothing to pause
 * cancels them, saying why), and restore jobs only with a `restore` handler. The executor says so
 * in its heartbeat and claims; the server hands a job only to an executor that runs its action
 * for its plugin, and takes a restore request only for a plugin an executor restores.
 */
import { plannedActions, type CleanupAction } from '../cleanup/protocol.js';
import type { CleanupHandlers } from './types.js';

export function cleanupActionsOf(cleanup: CleanupHandlers): CleanupAction[] {
  return [...plannedActions, ...(cleanup.restore ? (['restore'] as const) : [])];
}
