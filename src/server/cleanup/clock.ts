/**
 * The planner's clock. The wall clock can step — NTP correcting a drifted host, a VM resumed
 * after hours, an operator — and a step forward would age every environment's activity at once.
 * The monotonic clock cannot step. Each planning pass compares how far both moved since the last
 * pass: a wall clock that moved more than a minute (and 1 %) apart from the monotonic one is a
 * step. The pass that sees it plans nothing; and from then on planning time is the wall time
 * less every forward step seen, so activity recorded before a step is never aged by it (a step
 * backward only delays decisions: it is reported, never compensated).
 */

/** How far the two clocks may drift apart between passes before it is called a step. */
const toleranceMs = 60_000;
const toleranceShare = 0.01;

export interface ClockStep {
  /** Positive: the wall clock jumped forward; negative: back. */
  ms: number;
  /** Wall time it was seen at. */
  at: string;
}

export class PlanningClock {
  private last: { wall: number; monotonic: number } | undefined;
  /** The forward steps seen so far: subtracted from the wall time for planning. */
  private forwardMs = 0;
  /** The last step seen, for status. */
  lastStep: ClockStep | undefined;

  constructor(
    /** The wall clock (the receive times of events are on it). */
    private readonly wall: () => Date,
    /** Milliseconds on a clock that never steps (`performance.now()`). */
    private readonly monotonic: () => number,
  ) {}

  /** Planning time: the wall time less the forward steps seen. */
  now(): Date {
    return new Date(this.wall().getTime() - this.forwardMs);
  }

  /**
   * Called once per planning pass, before it plans: the step since the last call, if any (the
   * pass then plans nothing). The first call only takes the readings.
   */
  check(): ClockStep | undefined {
    const wall = this.wall().getTime();
    const monotonic = this.monotonic();
    const last = this.last;
    this.last = { wall, monotonic };
    if (!last) return undefined;
    const elapsed = monotonic - last.monotonic;
    const drift = wall - last.wall - elapsed;
    if (Math.abs(drift) <= toleranceMs + toleranceShare * Math.max(0, elapsed)) return undefined;
    if (drift > 0) this.forwardMs += drift;
    this.lastStep = { ms: drift, at: new Date(wall).toISOString() };
    return this.lastStep;
  }
}
