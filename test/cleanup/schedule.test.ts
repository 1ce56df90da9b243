/**
 * Working-hours schedules across both daylight-saving changes of Europe/Berlin and
 * America/New_York: each sleep and wake fires exactly once, at the documented instant — a wall
 * time inside the spring-forward gap at that time shifted by the gap, a wall time inside the
 * autumn overlap at its first occurrence.
 */
import { describe, expect, it } from 'vitest';
import { checkTimeZone } from '../../src/cleanup/time-zone.js';
import {
  isAwake,
  lastTransition,
  nextTransition,
  transitions,
  type Schedule,
} from '../../src/cleanup/schedule.js';

const at = (iso: string) => Date.parse(iso);
const utc = (ms: number) => new Date(ms).toISOString();
const week: Schedule['weekdays'] = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'];

/** The transitions of a schedule in [from, to], as `kind@UTC` strings. */
function fired(schedule: Schedule, from: string, to: string): string[] {
  return transitions(schedule, at(from) - 1, at(to)).map((t) => `${t.kind}@${utc(t.at)}`);
}

describe('schedules across daylight-saving changes', () => {
  it('an ordinary working week in Berlin: awake 08:00–20:00 local, Monday to Friday', () => {
    const s: Schedule = {
      sleepAt: '20:00',
      wakeAt: '08:00',
      weekdays: ['mon', 'tue', 'wed', 'thu', 'fri'],
      timeZone: 'Europe/Berlin',
    };
    // 2026-01-12 is a Monday (CET, UTC+1).
    expect(fired(s, '2026-01-10T00:00:00Z', '2026-01-13T00:00:00Z')).toEqual([
      'wake@2026-01-12T07:00:00.000Z',
      'sleep@2026-01-12T19:00:00.000Z',
    ]);
    expect(isAwake(s, at('2026-01-12T07:00:00Z'))).toBe(true);
    expect(isAwake(s, at('2026-01-12T06:59:59Z'))).toBe(false);
    expect(isAwake(s, at('2026-01-12T19:00:00Z'))).toBe(false);
    expect(isAwake(s, at('2026-01-10T12:00:00Z'))).toBe(false); // Saturday
  });

  it('Berlin spring forward (2026-03-29, 02:00 → 03:00): a wake at 02:30 fires once, at 03:30 CEST', () => {
    const s: Schedule = { sleepAt: '20:00', wakeAt: '02:30', weekdays: week, timeZone: 'Europe/Berlin' };
    expect(fired(s, '2026-03-28T12:00:00Z', '2026-03-30T12:00:00Z')).toEqual([
      'sleep@2026-03-28T19:00:00.000Z', // 20:00 CET
      'wake@2026-03-29T01:30:00.000Z', // 02:30 does not exist: 03:30 CEST
      'sleep@2026-03-29T18:00:00.000Z', // 20:00 CEST
      'wake@2026-03-30T00:30:00.000Z', // 02:30 CEST
    ]);
    const wake = nextTransition(s, at('2026-03-28T20:00:00Z'))!;
    expect(wake.local).toBe('2026-03-29 03:30 +02:00 Europe/Berlin');
    expect(wake.utc).toBe('2026-03-29 01:30 UTC');
    expect(isAwake(s, at('2026-03-29T01:29:59Z'))).toBe(false);
    expect(isAwake(s, at('2026-03-29T01:30:00Z'))).toBe(true);
  });

  it('Berlin fall back (2026-10-25, 03:00 → 02:00): a sleep at 02:30 fires once, at its first occurrence (02:30 CEST)', () => {
    const s: Schedule = {
      sleepAt: '02:30',
      wakeAt: '08:00',
      weekdays: ['sat', 'sun'],
      timeZone: 'Europe/Berlin',
    };
    expect(fired(s, '2026-10-24T00:00:00Z', '2026-10-26T12:00:00Z')).toEqual([
      'wake@2026-10-24T06:00:00.000Z', // Saturday 08:00 CEST
      'sleep@2026-10-25T00:30:00.000Z', // Sunday 02:30 CEST, the first of the two
      'wake@2026-10-25T07:00:00.000Z', // Sunday 08:00 CET
      'sleep@2026-10-26T01:30:00.000Z', // Monday 02:30 CET
    ]);
    // The second 02:30 (01:30 UTC) is no transition: asleep through it.
    expect(isAwake(s, at('2026-10-25T00:29:59Z'))).toBe(true);
    expect(isAwake(s, at('2026-10-25T01:30:00Z'))).toBe(false);
    expect(lastTransition(s, at('2026-10-25T02:00:00Z'))).toMatchObject({
      kind: 'sleep',
      local: '2026-10-25 02:30 +02:00 Europe/Berlin',
      utc: '2026-10-25 00:30 UTC',
    });
  });

  it('New York spring forward (2026-03-08, 02:00 → 03:00): a wake at 02:15 fires once, at 03:15 EDT', () => {
    const s: Schedule = {
      sleepAt: '18:00',
      wakeAt: '02:15',
      weekdays: ['sun', 'mon'],
      timeZone: 'America/New_York',
    };
    expect(fired(s, '2026-03-07T00:00:00Z', '2026-03-09T23:59:00Z')).toEqual([
      'wake@2026-03-08T07:15:00.000Z', // 03:15 EDT (02:15 does not exist)
      'sleep@2026-03-08T22:00:00.000Z', // 18:00 EDT
      'wake@2026-03-09T06:15:00.000Z', // 02:15 EDT
      'sleep@2026-03-09T22:00:00.000Z',
    ]);
  });

  it('New York fall back (2026-11-01, 02:00 → 01:00): a sleep at 01:30 fires once, at 01:30 EDT', () => {
    const s: Schedule = {
      sleepAt: '01:30',
      wakeAt: '09:00',
      weekdays: ['sat'],
      timeZone: 'America/New_York',
    };
    // Saturday 09:00 EDT → the night shift ends Sunday 01:30, the first of the two 01:30s.
    expect(fired(s, '2026-10-31T00:00:00Z', '2026-11-02T00:00:00Z')).toEqual([
      'wake@2026-10-31T13:00:00.000Z',
      'sleep@2026-11-01T05:30:00.000Z', // 01:30 EDT; 01:30 EST (06:30 UTC) does not fire
    ]);
    expect(isAwake(s, at('2026-11-01T06:30:00Z'))).toBe(false);
  });

  it('every wall-clock hour of both zones over a whole year: transitions alternate and match isAwake', () => {
    for (const timeZone of ['Europe/Berlin', 'America/New_York']) {
      for (const [wakeAt, sleepAt] of [
        ['08:00', '20:00'],
        ['02:30', '20:00'],
        ['22:00', '02:30'],
        ['01:30', '02:30'],
      ] as const) {
        const s: Schedule = { sleepAt, wakeAt, weekdays: ['mon', 'wed', 'thu', 'sun'], timeZone };
        const from = at('2026-01-01T00:00:00Z');
        const to = at('2027-01-01T00:00:00Z');
        const list = transitions(s, from, to);
        for (let i = 1; i < list.length; i++) {
          expect(list[i]!.kind).not.toBe(list[i - 1]!.kind);
          expect(list[i]!.at).toBeGreaterThan(list[i - 1]!.at);
        }
        for (const t of list) {
          expect(isAwake(s, t.at)).toBe(t.kind === 'wake');
          expect(isAwake(s, t.at - 1)).toBe(t.kind !== 'wake');
        }
      }
    }
  });

  it('accepts only IANA zone names, as the database spells them', () => {
    expect(checkTimeZone('Europe/Berlin')).toEqual({ valid: true });
    expect(checkTimeZone('UTC')).toEqual({ valid: true });
    expect(checkTimeZone('Mars/Olympus')).toEqual({ valid: false });
    expect(checkTimeZone('+02:00')).toEqual({ valid: false });
    expect(checkTimeZone('america/new_york')).toEqual({ valid: false, suggestion: 'America/New_York' });
  });
});
