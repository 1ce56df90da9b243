/**
 * Attack: a clock step. The server's wall clock jumps 9 hours forward (NTP correcting a drifted
 * host, a VM resumed) 10 seconds after an environment under a 1-hour delete policy was used.
 * The pass that sees the step plans nothing and says so in status and audit; later passes age
 * activity on the clock without the step, so the environment is cleaned only once it really has
 * been idle for an hour.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { removeProjects, runTend } from '../helpers/project.js';
import { dialects } from '../server/helpers.js';
import { stage, type Stage } from './harness.js';

const hour = 3_600_000;

describe.each(dialects)('a step of the wall clock, on %s', (dialect) => {
  let s: Stage;
  beforeAll(async () => {
    s = await stage(dialect);
  });
  afterAll(async () => {
    await s.stop();
    removeProjects();
  });

  const api = async <T>(url: string) =>
    (
      await s.server.app.inject({ method: 'GET', url, headers: s.server.auth(s.server.tokens.admin) })
    ).json<T>();

  it('plans nothing the pass it is seen, never ages activity by it, and is reported', async () => {
    const root = s.project({ name: 'clock', namespace: 'clock-dev' });
    const run = await s.tend(root, 'deploy');
    expect(run.code, run.stderr).toBe(0);
    await s.enforce('clock');
    await s.cleanupRound();
    s.advance(10_000);
    s.step(9 * hour);
    await s.cleanupRound();
    expect(s.namespaceExists('clock-dev')).toBe(true);
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
    expect(s.namespaceExists('clock-dev')).toBe(true);
    expect((await api<{ lastPassOutcome: string }>('/api/v1/cleanup/status')).lastPassOutcome).toBe('ok');
    const plan = await api<{ items: { namespace: string; kind: string }[] }>('/api/v1/cleanup/plan?limit=50');
    expect(plan.items.find((d) => d.namespace === 'clock-dev')?.kind).toBe('scheduled');

    // Really idle for the hour: cleaned (the guard does not merely block forever).
    s.advance(2 * hour);
    await s.cleanupRound();
    await s.cleanupRound();
    expect(s.namespaceExists('clock-dev')).toBe(false);
  });
});
