/**
 * The CLI's view of the server's cleanup plan for the current environment: the line `tend
 * status` prints, and the warning every tend command run in an environment prints when its
 * cleanup is near ("will be deleted at 18:02 UTC unless used; `tend keep-alive` to postpone").
 * Asked with a short timeout and never an error: a server that is down or slow costs a command
 * at most that timeout, and the line is skipped.
 */
import { TendError } from '../errors.js';
import { apiRequest } from './client.js';
import { resolveServer } from './credentials.js';
import { formatDuration, formatTime, outlook, pastTense } from '../cleanup/format.js';
import type { CleanupAction } from '../cleanup/protocol.js';
import type { PlanItemView, TransitionView } from '../api/cleanup.js';

export interface PlanPage {
  /** Due times are shown relative to the server's clock, not this machine's. */
  serverTime: string;
  generatedAt: string | null;
  halted: boolean;
  /** The project's circuit breaker (the notice route only). */
  breakerOpen?: boolean;
  items: PlanItemView[];
  nextCursor: string | null;
  /** The schedules' next sleeps and wakes (first page of the plan route only). */
  transitions?: TransitionView[];
  /** False when the server left some transitions within the window out. */
  transitionsComplete?: boolean;
}

interface EnvironmentWhere {
  server?: string;
  project: string;
  environment: string;
  namespace: string;
  /** How long to wait for the server (default 3 s). */
  timeoutMs?: number;
}

async function notice(where: EnvironmentWhere): Promise<PlanPage | undefined> {
  const connection = resolveServer(where.server ? { server: where.server } : {});
  if (!connection?.token) return undefined;
  const query = new URLSearchParams({
    project: where.project,
    environment: where.environment,
    namespace: where.namespace,
  });
  return apiRequest<PlanPage>(connection, `/api/v1/cleanup/notice?${query.toString()}`, {
    timeoutMs: where.timeoutMs ?? 3000,
  });
}

/**
 * Refuses `tend cleanup env` while the server holds the project's deletions (its circuit breaker
 * is open: many environments fell due at once, and an admin looks first). Without a server, or
 * one that cannot be asked, there is nothing to obey: the command says so and goes on.
 */
export async function checkCleanupAllowed(where: EnvironmentWhere): Promise<{ warning?: string }> {
  let page: PlanPage | undefined;
  try {
    page = await notice(where);
  } catch (error) {
    return {
      warning: `tend: could not ask the server whether cleanup of project "${where.project}" is stopped (${(error as Error).message}); cleaning up anyway`,
    };
  }
  if (page?.breakerOpen) {
    throw new TendError(
      'TEND_CLEANUP_BREAKER_OPEN',
      `the server's circuit breaker for project "${where.project}" is open: many of its environments fell due at once, and no environment of it is cleaned up until an admin has looked`,
      {
        detail: {
          hint: `see \`tend cleanup status\`; an admin resets it with \`tend cleanup breaker reset --project ${where.project}\``,
        },
      },
    );
  }
  return {};
}

/**
 * The current environment's next cleanup decision, for `tend status`; undefined when no server
 * is configured or it cannot be asked (status never fails for it).
 */
export async function plannedCleanup(
  where: EnvironmentWhere,
): Promise<{ decision: PlanItemView | null; line: string; warning: string | undefined } | undefined> {
  try {
    const page = await notice(where);
    if (!page) return undefined;
    const now = new Date(page.serverTime);
    return {
      decision: page.items[0] ?? null,
      line: cleanupLine(page.items, page.halted, now),
      warning: cleanupWarning(page.items, now),
    };
  } catch {
    return undefined;
  }
}

/** One line about what cleanup will do with the environment. */
export function cleanupLine(items: PlanItemView[], halted: boolean, now: Date): string {
  const next = items.find((d) => d.kind === 'scheduled' || d.kind === 'due') ?? items[0];
  if (!next) return 'cleanup: no policy applies (or no planning pass yet)';
  const verb = pastTense[next.action as CleanupAction];
  const haltedNote = halted ? ' (cleanup is halted)' : '';
  switch (next.kind) {
    case 'scheduled': {
      if (next.warning) return `cleanup: ${warningText(next, now)}${haltedNote}`;
      const ms = Date.parse(next.dueAt) - now.getTime();
      return ms > 0
        ? `cleanup: ${verb} in ${formatDuration(ms)} unless used; \`tend keep-alive\` to postpone${haltedNote}`
        : `cleanup: ${verb} soon unless used; \`tend keep-alive\` to postpone${haltedNote}`;
    }
    case 'due':
      return `cleanup: ${verb} now (${next.sentence}); \`tend keep-alive\` to postpone${haltedNote}`;
    case 'dry-run':
      return `cleanup: dry-run: ${next.sentence}`;
    default:
      return `cleanup: not cleaned (${next.reason}): ${next.sentence}`;
  }
}

/** "will be deleted at 18:02 UTC (in 42m) unless used; `tend keep-alive` to postpone". */
function warningText(d: PlanItemView, now: Date): string {
  const { verb } = outlook(d.action as CleanupAction, { enforced: true });
  const ms = Date.parse(d.dueAt) - now.getTime();
  const utc = formatTime(Date.parse(d.dueAt), now.getTime());
  // A schedule's warning in the time zone the schedule is written in, UTC after it.
  const at = d.dueLocal ? `${d.dueLocal} (${utc})` : utc;
  const when = ms > 0 ? `at ${at} (in ${formatDuration(ms)})` : 'now';
  return `${verb} ${when}${d.dueLocal ? ' by the schedule' : ''} unless used; \`tend keep-alive\` to postpone`;
}

/**
 * The line every tend command prints when its environment's cleanup is near: a scheduled
 * decision past its warning time, or a due one; undefined otherwise.
 */
export function cleanupWarning(items: PlanItemView[], now: Date): string | undefined {
  const next = items.find((d) => d.kind === 'due') ?? items.find((d) => d.kind === 'scheduled' && d.warning);
  if (!next) return undefined;
  return `tend: this environment ${warningText(next, now)}`;
}
