/**
 * A plugin's cleanup primitives as tend runs them: with the framework's checks
 * (plugin/cleanup-checks.ts) as their `verifyAndClean`. The checks are loaded when a job runs, so
 * a plugin's entry point stays light for the commands that never clean.
 */
import type {
  CleanupCallContext,
  CleanupHandlers,
  CleanupPrimitives,
  CleanupTarget,
  QueuedCleanupJob,
} from './types.js';

/** The framework's `verifyAndClean` functions: a plugin may not bring its own. */
const checked = new WeakSet<object>();

/** The cleanup part of a loaded plugin: its primitives, with the framework's checks as `verifyAndClean`. */
export function withCleanupChecks<Settings>(
  primitives: CleanupPrimitives<Settings>,
): CleanupHandlers<Settings> {
  const verify = async (ctx: CleanupCallContext<Settings>, target: CleanupTarget, job: QueuedCleanupJob) =>
    (await import('./cleanup-checks.js')).verifyAndClean(primitives, ctx, target, job);
  checked.add(verify);
  return { ...primitives, verifyAndClean: verify };
}

/** True when `handler` is the framework's own `verifyAndClean` (made by withCleanupChecks). */
export function isFrameworkCheck(handler: unknown): boolean {
  return typeof handler === 'function' && checked.has(handler);
}
