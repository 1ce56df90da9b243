/**
 * The savings report's bad input on the command line, through the real CLI: `tend server`'s
 * prices (finite, from 0 to 1,000,000) and `tend cleanup report --since` (1m to 365d) are usage
 * errors naming the flag (exit 2), before any server starts or any request is made.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { maxPrice, pricesOf } from '../../src/server/cli.js';
import { runTend } from '../helpers/project.js';

const dataDir = mkdtempSync(join(tmpdir(), 'tend-savings-flags-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

describe('tend server --price-cpu-hour / --price-gib-hour', () => {
  it('takes decimal prices from 0 to 1,000,000', () => {
    expect(pricesOf({ priceCpuHour: '0.035', priceGibHour: '0' })).toEqual({ cpuHour: 0.035, gibHour: 0 });
    expect(pricesOf({ priceGibHour: String(maxPrice) })).toEqual({ gibHour: maxPrice });
    expect(pricesOf({})).toEqual({});
  });

  it.each([
    ['--price-cpu-hour', 'Infinity'],
    ['--price-cpu-hour', '-1'],
    ['--price-gib-hour', '1e400'],
    ['--price-gib-hour', '1000000.5'],
    ['--price-cpu-hour', 'NaN'],
    ['--price-cpu-hour', '0x10'],
    ['--price-gib-hour', ''],
  ])('%s %s is a usage error, and no server starts', async (flag, value) => {
    const r = await runTend(['server', '--port', '0', '--data-dir', dataDir, flag, value]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`${flag} expects a price from 0 to 1000000 such as 0.035, got "${value}"`);
    expect(readdirSync(dataDir)).toEqual([]);
  });
});

describe('tend cleanup report --since', () => {
  it.each(['3x', '0m', '366d', 'Infinity', '-1d'])(
    '%s is a usage error, with no request made',
    async (since) => {
      // A server URL nothing listens on: the flag is refused before any request would fail.
      const r = await runTend(['cleanup', 'report', '--since', since], {
        env: { TEND_SERVER_URL: 'http://127.0.0.1:9', TEND_TOKEN: 'tend_x' },
      });
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(`--since expects a duration from 1m to 365d`);
      expect(r.stderr).toContain(`got "${since}"`);
    },
  );
});
