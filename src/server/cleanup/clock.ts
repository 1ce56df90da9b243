/**
 * The planner's clock. The wall clock can step — NTP correcting a drifted host, a VM resumed
 * after hours, an operator — and a step forward would age every environment's activity at once.
 * The monotonic clock cannot step. Each planning pass compares how far both moved since the last
 * pass: a wall clock that moved more than a minute (and 1 %) apart from the monotonic one is a
 * step. The pass that sees it plans nothing; and from then on planning time is the wall time
 * less every forward step seen, so activity recorded before a step is never aged by it (a step
 * backward takes back what forward steps added, and otherwise only delays decisions). The
 * readings outlive a restart on the same host (`ClockReading`). Beyond its own two clocks the
 * server checks the wall clock against what others attest: the database's clock (PostgreSQL),
 * what it already recorded (the last pass, the newest event), and each target's clock, which
 * the inventories carry (a target whose clock disagrees is planned on no more).
 */
import { readFileSync } from 'node:fs';
import type { ClockAnchors, ClockReading } from '../db/repositories/cleanup-control.js';

/**
 * How far the two clocks may drift apart between passes before it is called a step; also how
 * far the server's clock may be from what a target or the database says of it (the skew the
 * server tolerates).
 */
export const toleranceMs = 60_000;
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
    /** Milliseconds on a clock that never steps (the system's monotonic clock). */
    private readonly monotonic: () => number,
    readonly host: {
      /**
       * The boot the monotonic clock counts from (Linux: /proc/sys/kernel/random/boot_id); a
       * reading persisted under another boot (another host, a reboot) says nothing of this one.
       * Left out: readings are not kept (a clock of the tests').
       */
      bootId?: string;
      /**
       * Compare the wall clock with the database's own (PostgreSQL) each pass. Off for a clock
       * of the tests', which the database's real clock would always contradict.
       */
      checkDatabase?: boolean;
    } = {},
  ) {}

  /** Planning time: the wall time less the forward steps seen. */
  now(): Date {
    return new Date(this.wall().getTime() - this.forwardMs);
  }

  /** The wall clock as it reads, without compensation: what receive times are stamped with. */
  wallNow(): number {
    return this.wall().getTime();
  }

  /** Whether this process has read the clocks yet (before that, a persisted reading is the last one). */
  get started(): boolean {
    return this.last !== undefined;
  }

  /** The last reading, to persist. */
  reading(): ClockReading | undefined {
    return this.last && { ...this.last, forwardMs: this.forwardMs };
  }

  /**
   * Called once per planning pass, before it plans: the step since the last call, if any (the
   * pass then plans nothing). The first call of a process compares with `persisted` (the last
   * reading of the same boot, by this or an earlier process), else only takes the readings.
   * A forward step is compensated; a step back takes back compensation (never below none).
   */
  check(persisted?: ClockReading): ClockStep | undefined {
    const wall = this.wall().getTime();
    const monotonic = this.monotonic();
    let last = this.last;
    if (!last && persisted) {
      last = persisted;
      this.forwardMs = persisted.forwardMs;
    }
    this.last = { wall, monotonic };
    if (!last) return undefined;
    const elapsed = monotonic - last.monotonic;
    const drift = wall - last.wall - elapsed;
    if (Math.abs(drift) <= toleranceMs + toleranceShare * Math.max(0, elapsed)) return undefined;
    this.forwardMs = Math.max(0, this.forwardMs + drift);
    this.lastStep = { ms: drift, at: new Date(wall).toISOString() };
    return this.lastStep;
  }
}

/**
 * The server's clock less a target's, from an inventory's `observedAt` (the target's clock as
 * the report was sent) and the server's receipt time; null when the report attested no time.
 */
export function clockOffsetOf(observedAt: string | undefined, receivedAt: Date): number | null {
  if (observedAt === undefined) return null;
  const observed = Date.parse(observedAt);
  return Number.isFinite(observed) ? receivedAt.getTime() - observed : null;
}

/** Whether an offset is outside what the server tolerates (a null offset attests nothing). */
export function disagrees(offsetMs: number | null | undefined): offsetMs is number {
  return offsetMs != null && Math.abs(offsetMs) > toleranceMs;
}

/** `9 h 0 min ahead of`, for people. */
export function describeOffset(offsetMs: number): string {
  const minutes = Math.round(Math.abs(offsetMs) / 60_000);
  const span = minutes >= 60 ? `${Math.floor(minutes / 60)} h ${minutes % 60} min` : `${minutes} min`;
  return `${span} ${offsetMs > 0 ? 'ahead of' : 'behind'}`;
}

/** The wall clock and what others attest of it, as the pass and the queue's re-check ask them. */
export interface WallClock {
  /** The wall clock as it reads (planning time is it less the steps compensated). */
  wall(): Date;
  /** Why nothing may be planned or done on it now (clockDisagreement over fresh anchors), or undefined. */
  disagreement(): Promise<string | undefined>;
}

/**
 * Why the wall clock must not be planned on now, or undefined: it is behind what this server
 * already recorded (the last pass, the newest event), or it disagrees with the database's clock.
 * A restart forgets the monotonic reading (PlanningClock), not these.
 */
export function clockDisagreement(wall: number, anchors: ClockAnchors): string | undefined {
  if (anchors.database) {
    const offset = wall - anchors.database.now;
    if (Math.abs(offset) > toleranceMs + anchors.database.roundTripMs) {
      return `the wall clock is ${describeOffset(offset)} the database's`;
    }
  }
  const recorded = Math.max(anchors.lastPassAt ?? -Infinity, anchors.newestReceivedAt ?? -Infinity);
  if (wall < recorded - toleranceMs) {
    return `the wall clock is ${describeOffset(wall - recorded)} what this server already recorded (the last pass, the newest event)`;
  }
  return undefined;
}

/**
 * The planning clock on the host's clocks: the wall clock, and the system's monotonic clock
 * (counted from boot, so it is the same clock across a restart of the server) with the boot's
 * id where the system tells it (Linux), so its readings are kept across restarts.
 */
export function hostPlanningClock(): PlanningClock {
  let bootId: string | undefined;
  try {
    bootId = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim() || undefined;
  } catch {
    bootId = undefined;
  }
  return new PlanningClock(
    () => new Date(),
    () => Number(process.hrtime.bigint() / 1000n) / 1000,
    { ...(bootId ? { bootId } : {}), checkDatabase: true },
  );
}
