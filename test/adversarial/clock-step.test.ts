/**
 * Attack: a step of the server's wall clock, 9 hours forward, 10 seconds after an environment
 * under a 1-hour delete policy was used.
 * - Time really passed that the server did not count (a VM resumed, a drifted clock corrected):
 *   the cluster's clock agrees with the server's new one. The pass that sees the step plans
 *   nothing and says so in status, metrics and audit; later passes age activity on the clock
 *   without the step, so the environment is cleaned only once it really has been idle an hour.
 * - The server's clock alone went wrong (an operator, a bad time source): the cluster's clock,
 *   which every inventory carries, disagrees with it, and nothing is planned on that cluster
 *   until they agree again — then cleanup goes on, on the right time.
 */
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { removeProjects, runTend } from '../helpers/project.js';
import { dialects } from '../server/helpers.js';
import { stage, type Stage } from './harness.js';

const hour = 3_600_000;

describe.each(dialects)('a step of the wall clock, on %s', (dialect) => {
  // A stage each: what one test's clock did (a compensated step) is not the next one's.
  let s: Stage;
  beforeEach(async () => {
    s = await stage(dialect);
  });
  afterEach(async () => {
    await s.stop();
  });
  afterAll(() => removeProjects());

  const api = async <T>(url: string) =>
    (
      await s.server.app.inject({ method: 'GET', url, headers: s.server.auth(s.server.tokens.admin) })
    ).json<T>();
  const decisionOf = async (namespace: string) =>
    (
      await api<{ items: { namespace: string; kind: string; reason: string | null; sentence: string }[] }>(
        '/api/v1/cleanup/plan?limit=50',
      )
    ).items.find((d) => d.namespace === namespace);

  it('time the server did not count: plans nothing the pass it is seen, never ages activity by it, and is reported', async () => {
    const root = s.project({ name: 'resumed', namespace: 'resumed-dev' });
    const run = await s.tend(root, 'deploy');
    expect(run.code, run.stderr).toBe(0);
    await s.enforce('resumed');
    await s.cleanupRound();
    s.advance(10_000);
    s.resume(9 * hour);
    await s.cleanupRound();
    expect(s.namespaceExists('resumed-dev')).toBe(true);
    const status = await api<{ lastPassOutcome: string; lastPassNote: string }>('/api/v1/cleanup/status');
    expect(status.lastPassOutcome).toBe('skipped');
    expect(status.lastPassNote).toMatch(/wall clock stepped forward by 540 min/);
    const cli = await runTend(['cleanup', 'status'], {
      cwd: root,
      env: { TEND_SERVER_URL: s.url, TEND_TOKEN: s.server.tokens.read },
    });
    expect(cli.stdout).toMatch(
      /Last planning pass .*: SKIPPED \(it planned nothing\) — the wall clock stepped forward/,
    );
    const audit = await api<{ items: { action: string }[] }>('/api/v1/audit?action=cleanup-clock-step');
    expect(audit.items).toHaveLength(1);
    const metrics = await s.server.app.inject({
      method: 'GET',
      url: '/metrics',
      headers: s.server.auth(s.server.tokens.admin),
    });
    expect(metrics.body).toContain('tend_cleanup_last_pass_outcome{outcome="skipped"} 1');

    // The passes after the step plan again, on the clock without it: used 10 s ago, not 9 h.
    await s.cleanupRound();
    await s.cleanupRound();
    expect(s.namespaceExists('resumed-dev')).toBe(true);
    expect((await api<{ lastPassOutcome: string }>('/api/v1/cleanup/status')).lastPassOutcome).toBe('ok');
    expect(await decisionOf('resumed-dev')).toMatchObject({ kind: 'scheduled' });

    // Really idle for the hour: cleaned (the guard does not merely block forever).
    s.advance(2 * hour);
    await s.cleanupRound();
    await s.cleanupRound();
    expect(s.namespaceExists('resumed-dev')).toBe(false);
  });

  it("the server's clock alone went wrong: nothing is planned on the cluster whose clock disagrees, until they agree", async () => {
    const root = s.project({ name: 'skewed', namespace: 'skewed-dev' });
    const run = await s.tend(root, 'deploy');
    expect(run.code, run.stderr).toBe(0);
    await s.enforce('skewed');
    await s.cleanupRound();
    s.advance(10_000);
    s.step(9 * hour);
    await s.cleanupRound(); // the step itself: skipped
    // Compensation alone would plan on; the cluster says the server's clock is wrong.
    for (let i = 0; i < 3; i++) await s.cleanupRound();
    s.advance(2 * hour);
    await s.cleanupRound();
    await s.cleanupRound();
    expect(s.namespaceExists('skewed-dev')).toBe(true);
    const blocked = await decisionOf('skewed-dev');
    expect(blocked).toMatchObject({ kind: 'blocked', reason: 'clock-disagrees' });
    expect(blocked!.sentence).toMatch(/the server's clock disagrees with the clock of its cluster/);
    const audit = await api<{ items: { action: string; detail: { message: string; offsetMs: number } }[] }>(
      '/api/v1/audit?action=cleanup-clock-disagrees',
    );
    expect(audit.items).toHaveLength(1);
    expect(audit.items[0]!.detail.message).toMatch(/the server's clock is 9 h 0 min ahead of the target's/);

    // The clock is set right: the step back is seen, then cleanup goes on — idle 2 h, policy 1 h.
    s.step(-9 * hour);
    await s.cleanupRound();
    await s.cleanupRound();
    await s.cleanupRound();
    expect(s.namespaceExists('skewed-dev')).toBe(false);
  });
});
