/**
 * The times an inventory attests, as a hostile or broken agent sends them: the target's clock
 * (`observedAt`) and an item's creation time (`createdAt`). Anything that is not a date-time is
 * a clear 400 and changes nothing; an absurd but well-formed one only blocks its own target.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { dialects } from '../helpers.js';
import { cleanupFixture, target, type CleanupFixture } from './fixture.js';

describe.each(dialects)('times an inventory attests, on %s', (dialect) => {
  let f: CleanupFixture;
  beforeEach(async () => {
    f = await cleanupFixture(dialect);
    await f.report('e1', []);
  });
  afterEach(() => f.close());

  const inventory = (extra: Record<string, unknown>, item: Record<string, unknown> = {}) =>
    f.call(
      'POST',
      '/api/v1/agents/inventory',
      {
        executorId: 'e1',
        targetKey: target,
        pluginName: 'kubernetes',
        complete: true,
        items: [{ ...f.item('shop-a', 'uid-a'), ...item }],
        ...extra,
      },
      f.server.tokens.agent,
    );

  it.each([
    ['a NUL', '2026-03-29T00:00:00\u0000Z'],
    ['a lone surrogate', '2026-03-29T00:00:00\ud800Z'],
    ['Infinity', 'Infinity'],
    ['a number', 1e308],
    ['deep JSON', JSON.parse('['.repeat(2000) + ']'.repeat(2000))],
  ])('refuses %s as observedAt or createdAt with a 400', async (_what, value) => {
    for (const res of [await inventory({ observedAt: value }), await inventory({}, { createdAt: value })]) {
      expect(res.status).toBe(400);
    }
    const stored = await f.server.database.db.selectFrom('cleanup_inventory_items').selectAll().execute();
    expect(stored).toEqual([]);
  });

  it('takes a well-formed but absurd clock, and only its own target is held back', async () => {
    const res = await inventory({ observedAt: '9999-12-31T23:59:59Z' });
    expect(res.status).toBe(200);
    const row = await f.server.database.db
      .selectFrom('cleanup_inventories')
      .select('clock_offset_ms')
      .where('target_key', '=', target)
      .executeTakeFirstOrThrow();
    expect(Number(row.clock_offset_ms)).toBeLessThan(-60_000);
  });
});
