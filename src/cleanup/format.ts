/**
 * How cleanup times and waits read in sentences, the CLI and notifications. A module of its own
 * so that every CLI command (its cleanup warning line) can use it without loading the planner
 * and the time-zone library behind schedules.
 */
import type { CleanupAction } from './protocol.js';

/** `10:02 UTC` on the day of `now`, else `2025-03-30 10:02 UTC`. Always UTC: no DST surprises. */
export function formatTime(ms: number, now: number | string): string {
  const iso = new Date(ms).toISOString();
  const today = typeof now === 'string' ? now : new Date(now).toISOString().slice(0, 10);
  return `${iso.startsWith(today) ? '' : iso.slice(0, 10) + ' '}${iso.slice(11, 16)} UTC`;
}

/** `3h 12m`, `2d 4h`, `45s`. */
export function formatDuration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  const d = Math.floor(s / 86_400);
  const h = Math.floor((s % 86_400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  if (d > 0) return h > 0 ? `${d}d ${h}h` : `${d}d`;
  if (h > 0) return m > 0 ? `${h}h ${m}m` : `${h}h`;
  if (m > 0) return `${m}m`;
  return `${s}s`;
}

/** Each action as a sentence says it was or will be done: "deleted at 18:02 UTC". */
export const pastTense: Record<CleanupAction, string> = {
  delete: 'deleted',
  pause: 'paused',
  resume: 'resumed',
  restore: 'restored',
};

/**
 * The one place that says whether cleanup will act: "will be deleted" only for a decision that
 * will be carried out when due (an enforced policy, nothing in the way); "would be deleted …
 * once enforced (`tend cleanup enforce --project shop`)" for one whose policy is not enforced.
 * The plan's sentences, `tend status`, every command's warning line and webhooks all say it
 * through this.
 */
export function outlook(
  action: CleanupAction,
  enforcedIn: { enforced: true } | { project: string },
): {
  verb: string;
  condition: string;
} {
  if ('enforced' in enforcedIn) return { verb: `will be ${pastTense[action]}`, condition: '' };
  return {
    verb: `would be ${pastTense[action]}`,
    condition: ` once enforced (\`tend cleanup enforce --project ${enforcedIn.project}\`)`,
  };
}

/**
 * A figure of what cleanup saved (environment-, CPU- and GiB-hours), for people: whole from 100,
 * one decimal from 1, and two significant digits below 1 — a deletion undone after a minute freed
 * 0.017 environment-hours, which one decimal would show as nothing (0.0). 0 is `0`.
 */
export function formatFigure(n: number): string {
  const size = Math.abs(n);
  if (size === 0 || !Number.isFinite(n)) return String(n);
  if (size >= 100) return n.toFixed(0);
  if (size >= 1) return n.toFixed(1);
  // Two significant digits, in positional notation however small (toPrecision turns to 1e-7).
  return n.toFixed(Math.min(20, 1 - Math.floor(Math.log10(size))));
}

/** An amount of money saved: two decimals, and two significant digits below one cent. */
export function formatMoney(n: number): string {
  return Math.abs(n) >= 0.01 || n === 0 ? n.toFixed(2) : formatFigure(n);
}
