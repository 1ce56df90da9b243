/**
 * `tend cleanup plan --within 7d` against a listening server: the next sleeps and wakes of the
 * schedules, each with its local time in the schedule's zone and its UTC time — across the
 * Berlin spring-forward night (2026-03-29) and the New York clocks already on summer time.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanupPlanCommand } from '../../../src/commands/cleanup-server.js';
import { postEvents, session } from '../helpers.js';
import { cleanupFixture, type CleanupFixture } from './fixture.js';

describe('tend cleanup plan shows the schedules', () => {
  let f: CleanupFixture;
  let configDir: string;
  const saved = { ...process.env };
  beforeAll(async () => {
    f = await cleanupFixture('sqlite');
    const url = await f.server.app.listen({ port: 0, host: '127.0.0.1' });
    configDir = mkdtempSync(join(tmpdir(), 'tend-config-'));
    process.env.TEND_CONFIG_DIR = configDir;
    process.env.TEND_SERVER_URL = url;
    process.env.TEND_TOKEN = f.server.tokens.read;
  });
  afterAll(async () => {
    process.env = { ...saved };
    rmSync(configDir, { recursive: true, force: true });
    await f.close();
  });

  it('lists the transitions within the window with local and UTC times', async () => {
    for (const [user, timeZone] of [
      ['berlin', 'Europe/Berlin'],
      ['newyork', 'America/New_York'],
    ] as const) {
      const s = session({ user, command: 'deploy' });
      await postEvents(f.server, [
        s.started({
          afterInactivity: '3d',
          action: 'pause',
          schedule: { sleepAt: '20:00', wakeAt: '08:00', weekdays: ['mon'], timeZone },
        }),
        s.completed(),
      ]);
    }
    // 2026-03-29T00:00Z (the fixture's clock): the next Monday is 2026-03-30.
    const result = await cleanupPlanCommand({ within: '7d' });
    expect(result.data.transitions.map((t) => `${t.environment}:${t.kind} ${t.local} = ${t.utc}`)).toEqual([
      'dev:wake 2026-03-30 08:00 +02:00 Europe/Berlin = 2026-03-30 06:00 UTC',
      'dev:wake 2026-03-30 08:00 -04:00 America/New_York = 2026-03-30 12:00 UTC',
      'dev:sleep 2026-03-30 20:00 +02:00 Europe/Berlin = 2026-03-30 18:00 UTC',
      'dev:sleep 2026-03-30 20:00 -04:00 America/New_York = 2026-03-31 00:00 UTC',
    ]);
    expect(result.human).toMatch(/Schedules within 7d:/);
    expect(result.human).toMatch(
      /wake \(resume\)\s+2026-03-30 08:00 \+02:00 Europe\/Berlin\s+2026-03-30 06:00 UTC/,
    );

    expect(result.data.transitionsComplete).toBe(true);
    expect(result.human).not.toContain('only the soonest');

    // Within a day only the first wake and sleep of each (none yet: Monday starts in 30 hours).
    const today = await cleanupPlanCommand({ within: '24h' });
    expect(today.data.transitions).toEqual([]);

    // A year holds 104 of each: the soonest 14 are listed, and the list says so.
    const year = await cleanupPlanCommand({ within: '365d' });
    expect(year.data.transitionsComplete).toBe(false);
    expect(year.data.transitions).toHaveLength(28);
    expect(year.data.transitions.slice(0, 4)).toEqual(result.data.transitions);
    expect(year.human).toContain('(only the soonest of each environment: more fall within 365d)');
  });
});
