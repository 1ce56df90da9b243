/**
 * The savings arithmetic (`savingsReport`): hours split at UTC midnights, the window, requests
 * against weight, prices, and what must not count twice — a namespace held by two records, a
 * pause followed by a deletion of the same namespace.
 */
import { describe, expect, it } from 'vitest';
import type { SpellInput } from '../../../src/server/db/repositories/cleanup-savings.js';
import { savingsReport } from '../../../src/server/cleanup/savings.js';

const hour = 3_600_000;
const t0 = Date.parse('2026-03-02T20:00:00.000Z');
const gib = 2 ** 30;

function spell(extra: Partial<SpellInput> = {}): SpellInput {
  return {
    action: 'delete',
    environmentId: 'env-1',
    resourceId: 'res-1',
    project: 'shop',
    environment: 'dev',
    targetKey: 'kubernetes/c1',
    namespace: 'shop-dev',
    uid: 'uid-1',
    start: t0,
    end: undefined,
    requests: { cpuMillicores: 2000, memoryBytes: 4 * gib },
    ...extra,
  };
}

const window = (hours: number, sinceHours = 24 * 30) => ({
  since: new Date(t0 + hours * hour - sinceHours * hour),
  now: new Date(t0 + hours * hour),
});

describe('savingsReport', () => {
  it('frees requests × hours until now, split at UTC midnights, priced', () => {
    const r = savingsReport([spell()], window(10), { cpuHour: 0.5, gibHour: 0.25 });
    expect(r.total).toEqual({ environmentHours: 10, cpuHours: 20, gibHours: 40, cost: 20 });
    expect(r.days.map((d) => [d.day, d.environmentHours, d.cpuHours])).toEqual([
      ['2026-03-02', 4, 8],
      ['2026-03-03', 6, 12],
    ]);
    expect(r.environments[0]).toMatchObject({ basis: 'requests', ongoing: true, cpuMillicores: 2000 });
  });

  it('stops at the end and counts only what falls in the window', () => {
    const r = savingsReport([spell({ end: t0 + 6 * hour })], window(10, 7), {});
    // The window starts 3 hours after the deletion; 3 of its 6 hours fall in it.
    expect(r.total).toEqual({ environmentHours: 3, cpuHours: 6, gibHours: 12, cost: null });
    expect(r.environments[0]!.ongoing).toBe(false);
    expect(savingsReport([spell({ end: t0 + 6 * hour })], window(10, 2), {}).environments).toEqual([]);
  });

  it('counts a namespace with no known requests by weight: environment-hours only', () => {
    const r = savingsReport([spell({ requests: undefined })], window(5), { cpuHour: 1, gibHour: 1 });
    expect(r.total).toEqual({ environmentHours: 5, cpuHours: 0, gibHours: 0, cost: 0 });
    expect(r.environments[0]!.basis).toBe('weight');
  });

  it('counts a namespace held by two records once', () => {
    const shared = [
      spell({ environmentId: 'env-a', resourceId: 'res-a', environment: 'a' }),
      spell({ environmentId: 'env-b', resourceId: 'res-b', environment: 'b', start: t0 + hour }),
    ];
    const r = savingsReport(shared, window(4), {});
    expect(r.total).toEqual({ environmentHours: 4, cpuHours: 8, gibHours: 16, cost: null });
    expect(r.environments.map((e) => e.environment)).toEqual(['a']);
  });

  it('counts a pause and the deletion that followed it one after the other, never both', () => {
    const pause = spell({ action: 'pause', end: t0 + 3 * hour });
    const deletion = spell({ action: 'delete', start: t0 + 3 * hour });
    const r = savingsReport([deletion, pause], window(5), {});
    expect(r.byAction.pause.environmentHours).toBe(3);
    expect(r.byAction.delete.environmentHours).toBe(2);
    expect(r.total.environmentHours).toBe(5);
    // A pause whose end was never recorded still stops where the deletion starts.
    const unended = savingsReport([spell({ action: 'pause' }), deletion], window(5), {});
    expect(unended.total.environmentHours).toBe(5);
  });

  it('counts nothing for a spell that ended as it started (a namespace that was never gone)', () => {
    expect(savingsReport([spell({ end: t0 })], window(5), {}).total.environmentHours).toBe(0);
  });

  it('keeps projects apart and sorted', () => {
    const r = savingsReport(
      [spell({ project: 'web', namespace: 'web-dev', uid: 'u2' }), spell()],
      window(1),
      {},
    );
    expect(r.projects.map((p) => [p.project, p.total.cpuHours])).toEqual([
      ['shop', 2],
      ['web', 2],
    ]);
  });
});
