/**
 * Attack: many environments of a project fall due at once (a script gone wrong, a clock, a bad
 * policy), the server's circuit breaker opens and holds every deletion of the project — and then
 * `tend cleanup env` is run in each of them. The breaker holds that command too: refused before
 * any session or deletion, until an admin resets the breaker.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dialects } from '../server/helpers.js';
import { removeProjects } from '../helpers/project.js';
import { stage, type Stage } from './harness.js';

const hour = 3_600_000;
const people = ['ann', 'ben', 'cat', 'dan'];

describe.each(dialects)('tend cleanup env behind an open breaker, on %s', (dialect) => {
  let s: Stage;
  let root: string;
  beforeAll(async () => {
    s = await stage(dialect);
    root = s.project({ name: 'fleet', namespace: 'fleet-${var.who}' });
  });
  afterAll(async () => {
    await s.stop();
    removeProjects();
  });

  it('is refused while the breaker is open, and works once an admin reset it', async () => {
    for (const who of people) {
      const run = await s.tend(root, '--var', `who=${who}`, 'deploy');
      expect(run.code, run.stderr).toBe(0);
    }
    await s.enforce('fleet');
    s.advance(2 * hour);
    await s.cleanupRound();
    const status = await s.server.app.inject({
      method: 'GET',
      url: '/api/v1/cleanup/status',
      headers: s.server.auth(s.server.tokens.admin),
    });
    expect(status.body).toContain('fleet');
    const breakers = await s.server.database.db.selectFrom('cleanup_breakers').select('project').execute();
    expect(breakers.map((b) => b.project)).toEqual(['fleet']);
    for (const who of people) expect(s.namespaceExists(`fleet-${who}`)).toBe(true);

    for (const who of people.slice(0, 2)) {
      const refused = await s.tend(root, '--var', `who=${who}`, '--json', 'cleanup', 'env');
      expect(refused.code, refused.stderr).toBe(1);
      const error = JSON.parse(refused.stdout) as { error: { code: string; message: string } };
      expect(error.error.code).toBe('TEND_CLEANUP_BREAKER_OPEN');
      expect(error.error.message).toContain('"fleet"');
      expect(s.namespaceExists(`fleet-${who}`)).toBe(true);
    }
    // Refused before any session: nothing of it reached the server.
    const sessions = await s.server.database.db
      .selectFrom('sessions')
      .select('command')
      .where('command', '=', 'cleanup env')
      .execute();
    expect(sessions).toEqual([]);

    await s.server.app.cleanup.switches.resetBreaker('fleet', 'test');
    const allowed = await s.tend(root, '--var', 'who=ann', 'cleanup', 'env');
    expect(allowed.code, allowed.stderr).toBe(0);
    expect(s.namespaceExists('fleet-ann')).toBe(false);
  });
});
