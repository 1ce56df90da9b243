/**
 * Milliseconds on a clock that never steps, from an arbitrary origin: for durations and for
 * "time since" readings. Not the global `performance`, whose first use loads node:perf_hooks and
 * its timing modules (about 1.5 ms of a command's start, measured on Node 24).
 */
export function monotonicMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}
