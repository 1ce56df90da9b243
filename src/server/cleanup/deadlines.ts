/**
 * The planner's time rules besides inactivity: when an environment whose pull request was
 * closed or merged becomes due (`cleanup.afterClose` after the close, default at once), and when
 * people are warned before its action (`cleanup.warnBefore` before the due time, default 1 h).
 * Pure functions of the snapshot's environment: `plan()` calls them; every safety check still
 * applies to what they make due.
 */
import type { SnapshotEnvironment } from './planner/types.js';

/** `cleanup.warnBefore` when the policy does not set it. */
export const defaultWarnBeforeMs = 3_600_000;
/** `cleanup.afterClose` when the policy does not set it. */
export const defaultAfterCloseMs = 0;

/** The pull request's close, as it bears on the due time; undefined while it is open. */
export interface ClosedPullRequest {
  repository: string;
  number: number;
  state: 'closed' | 'merged';
  closedAt: number;
  /** closedAt + afterClose. */
  dueAt: number;
}

/** The closed or merged pull request of the environment and when that makes it due. */
export function closedPullRequest(env: SnapshotEnvironment): ClosedPullRequest | undefined {
  const pr = env.pullRequest;
  if (!pr || pr.closedAt === null || (pr.state !== 'closed' && pr.state !== 'merged')) return undefined;
  const afterClose = env.policy?.afterCloseMs ?? defaultAfterCloseMs;
  return {
    repository: pr.repository,
    number: pr.number,
    state: pr.state,
    closedAt: pr.closedAt,
    dueAt: pr.closedAt + afterClose,
  };
}

/**
 * The due time by policy: the inactivity wait, or the pull request's close plus afterClose when
 * that comes first (`pullRequest` set then).
 */
export function policyDueAt(
  env: SnapshotEnvironment,
  lastActivityAt: number,
): { dueAt: number; pullRequest?: ClosedPullRequest } {
  const byInactivity = lastActivityAt + (env.policy?.afterMs ?? 0);
  const closed = closedPullRequest(env);
  if (closed && closed.dueAt <= byInactivity) return { dueAt: closed.dueAt, pullRequest: closed };
  return { dueAt: byInactivity };
}

/** When the warning period of an action due at `dueAt` starts. */
export function warnAtOf(env: SnapshotEnvironment, dueAt: number): number {
  return dueAt - (env.policy?.warnBeforeMs ?? defaultWarnBeforeMs);
}
