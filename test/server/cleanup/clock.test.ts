/**
 * The planning clock: a wall clock that moves with the monotonic one is time passing; one that
 * jumps apart from it is a step, reported once, and forward steps never age activity.
 */
import { describe, expect, it } from 'vitest';
import {
  clockDisagreement,
  clockOffsetOf,
  disagrees,
  PlanningClock,
} from '../../../src/server/cleanup/clock.js';

const hour = 3_600_000;

function clocks() {
  let wall = Date.parse('2026-03-29T01:30:00Z');
  let monotonic = 1000;
  const clock = new PlanningClock(
    () => new Date(wall),
    () => monotonic,
  );
  return {
    clock,
    pass: (ms: number) => ((wall += ms), (monotonic += ms)),
    step: (ms: number) => (wall += ms),
    wall: () => wall,
  };
}

describe('the planning clock', () => {
  it('calls time passing (and drift within a minute and 1 %) no step', () => {
    const c = clocks();
    expect(c.clock.check()).toBeUndefined();
    c.pass(10 * hour);
    expect(c.clock.check()).toBeUndefined();
    c.pass(30_000);
    c.step(59_000);
    expect(c.clock.check()).toBeUndefined();
    // 1 % of ten hours is six minutes.
    c.pass(10 * hour);
    c.step(5 * 60_000);
    expect(c.clock.check()).toBeUndefined();
    expect(c.clock.now().getTime()).toBe(c.wall());
  });

  it('sees a step just above 60 s plus 1 % of the time elapsed, in either direction, and none just below', () => {
    for (const elapsed of [0, 10 * hour]) {
      const tolerance = 60_000 + elapsed / 100;
      for (const sign of [1, -1]) {
        const c = clocks();
        c.clock.check();
        c.pass(elapsed);
        c.step(sign * tolerance);
        expect(c.clock.check(), `${sign * tolerance} ms after ${elapsed} ms`).toBeUndefined();
        c.pass(elapsed);
        c.step(sign * (tolerance + 1));
        expect(c.clock.check(), `${sign * (tolerance + 1)} ms after ${elapsed} ms`).toMatchObject({
          ms: sign * (tolerance + 1),
        });
      }
    }
  });

  it('reports a forward step once and plans on the wall clock less it from then on', () => {
    const c = clocks();
    c.clock.check();
    c.pass(10_000);
    c.step(9 * hour);
    expect(c.clock.check()).toMatchObject({ ms: 9 * hour });
    expect(c.clock.now().getTime()).toBe(c.wall() - 9 * hour);
    c.pass(30_000);
    expect(c.clock.check()).toBeUndefined();
    expect(c.clock.now().getTime()).toBe(c.wall() - 9 * hour);
  });

  it('reports a backward step: it takes back forward compensation, never below none', () => {
    const c = clocks();
    c.clock.check();
    c.step(-2 * hour);
    expect(c.clock.check()).toMatchObject({ ms: -2 * hour });
    expect(c.clock.now().getTime()).toBe(c.wall());
    // A clock set 9 h ahead, then set right: planning time follows the clock without the step.
    c.step(9 * hour);
    c.clock.check();
    expect(c.clock.now().getTime()).toBe(c.wall() - 9 * hour);
    c.step(-9 * hour);
    expect(c.clock.check()).toMatchObject({ ms: -9 * hour });
    expect(c.clock.now().getTime()).toBe(c.wall());
  });

  it('sees a step taken while the server was down, from the reading the last process kept', () => {
    const before = clocks();
    before.clock.check();
    before.pass(30_000);
    before.clock.check();
    const kept = before.clock.reading()!;
    // The server stops; 13 s later (on the monotonic clock) it starts with the wall clock 9 h ahead.
    const wall = kept.wall + 13_000 + 9 * hour;
    const monotonic = kept.monotonic + 13_000;
    const after = new PlanningClock(
      () => new Date(wall),
      () => monotonic,
      { bootId: 'boot-1' },
    );
    expect(after.started).toBe(false);
    expect(after.check(kept)).toMatchObject({ ms: 9 * hour });
    expect(after.now().getTime()).toBe(wall - 9 * hour);
    // And the compensation it kept survives the next restart too.
    const again = new PlanningClock(
      () => new Date(wall),
      () => monotonic,
      { bootId: 'boot-1' },
    );
    expect(again.check(after.reading())).toBeUndefined();
    expect(again.now().getTime()).toBe(wall - 9 * hour);
  });

  it('takes only the readings on the first call when nothing was kept', () => {
    const c = clocks();
    expect(c.clock.started).toBe(false);
    expect(c.clock.check(undefined)).toBeUndefined();
    expect(c.clock.started).toBe(true);
    expect(c.clock.reading()).toEqual({ wall: c.wall(), monotonic: 1000, forwardMs: 0 });
  });
});

describe('what others attest of the wall clock', () => {
  const minute = 60_000;

  it('a target clock more than 60 s away, either way, disagrees; one within, or none, does not', () => {
    const at = new Date('2026-03-29T01:30:00.000Z');
    expect(clockOffsetOf('2026-03-29T01:29:00.000Z', at)).toBe(minute);
    expect(clockOffsetOf(undefined, at)).toBeNull();
    expect(clockOffsetOf('not a time', at)).toBeNull();
    for (const offset of [minute + 1, -minute - 1, 9 * hour, -9 * hour]) expect(disagrees(offset)).toBe(true);
    for (const offset of [minute, -minute, 0, null, undefined]) expect(disagrees(offset)).toBe(false);
  });

  it('a wall clock behind what the server recorded, or away from the database clock, is not planned on', () => {
    const wall = Date.parse('2026-03-29T01:30:00.000Z');
    const none = { lastPassAt: null, newestReceivedAt: null };
    expect(clockDisagreement(wall, none)).toBeUndefined();
    // Behind the last pass or the newest event by more than the tolerance.
    for (const recorded of [
      { ...none, lastPassAt: wall + minute + 1 },
      { ...none, newestReceivedAt: wall + minute + 1 },
    ]) {
      expect(clockDisagreement(wall, recorded)).toMatch(/behind what this server already recorded/);
    }
    expect(
      clockDisagreement(wall, { lastPassAt: wall + minute, newestReceivedAt: wall - hour }),
    ).toBeUndefined();
    // Away from the database's clock, either way, by more than the tolerance and the round trip.
    const database = (offset: number) => ({ ...none, database: { now: wall - offset, roundTripMs: 500 } });
    expect(clockDisagreement(wall, database(9 * hour))).toBe(
      "the wall clock is 9 h 0 min ahead of the database's",
    );
    expect(clockDisagreement(wall, database(-minute - 501))).toMatch(/behind the database's/);
    expect(clockDisagreement(wall, database(minute + 500))).toBeUndefined();
    expect(clockDisagreement(wall, database(-minute - 500))).toBeUndefined();
  });
});
