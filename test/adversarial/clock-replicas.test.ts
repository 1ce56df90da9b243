/**
 * Attack: two replicas on one PostgreSQL, one with its wall clock 9 hours ahead. The skewed one
 * must not plan the deletion of a namespace used a moment ago under a 1-hour policy: each pass it
 * compares its clock with the database's and plans nothing while they disagree, saying so in
 * status and audit; an inventory it receives records the cluster's disagreement too, so the
 * other replica plans nothing on that cluster either until an inventory it receives says the
 * clocks agree again.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CleanupExecutor } from '../../src/executor/executor.js';
import { PlanningClock } from '../../src/server/cleanup/clock.js';
import { composeCleanup } from '../../src/server/cleanup/compose.js';
import { defaultCleanupSettings } from '../../src/server/cleanup/settings.js';
import { Metrics } from '../../src/server/metrics.js';
import { removeProjects } from '../helpers/project.js';
import { servedClusters, testProtection } from '../cleanup/helpers.js';
import { stage, type Stage } from './harness.js';

const hour = 3_600_000;

describe('two replicas, one with its clock 9 h ahead (postgres)', () => {
  let s: Stage;
  beforeAll(async () => {
    s = await stage('postgres');
  });
  afterAll(async () => {
    await s.stop();
    removeProjects();
  });

  it('the skewed replica plans nothing, and its disagreement never becomes a deletion', async () => {
    const root = s.project({ name: 'replicas', namespace: 'replicas-dev' });
    const run = await s.tend(root, 'deploy');
    expect(run.code, run.stderr).toBe(0);
    await s.enforce('replicas');
    await s.cleanupRound();

    const { db, reader } = s.server.database;
    const skewed = composeCleanup(
      db,
      reader,
      new Metrics(),
      new PlanningClock(
        () => new Date(Date.now() + 9 * hour),
        () => performance.now(),
        { checkDatabase: true },
      ),
      { ...defaultCleanupSettings, intervalMs: 30_000 },
    );
    const skewedExecutor = new CleanupExecutor({
      queue: skewed.queue,
      plugins: servedClusters(s.sim.kubeconfig),
      protection: testProtection,
      kind: 'embedded',
      name: 'skewed',
      version: 'test',
    });
    for (let i = 0; i < 3; i++) {
      await skewedExecutor.runPass();
      expect(await skewed.pass.run()).toMatchObject({ outcome: 'skipped', planned: 0 });
    }
    const status = await skewed.control.control();
    expect(status.last_pass_note).toMatch(/the wall clock is 9 h 0 min ahead of the database's/);

    // The sound replica plans on, but not on the cluster the skewed one last heard from.
    await s.server.app.cleanup.pass.run();
    expect(s.namespaceExists('replicas-dev')).toBe(true);
    const plan = await s.server.app.inject({
      method: 'GET',
      url: '/api/v1/cleanup/plan?limit=50',
      headers: s.server.auth(s.server.tokens.admin),
    });
    expect(plan.json<{ items: { namespace: string; reason: string | null }[] }>().items).toContainEqual(
      expect.objectContaining({ namespace: 'replicas-dev', reason: 'clock-disagrees' }),
    );
    const audit = await s.server.app.inject({
      method: 'GET',
      url: '/api/v1/audit?action=cleanup-clock-disagrees',
      headers: s.server.auth(s.server.tokens.admin),
    });
    // Once when the skewed replica's passes began to disagree, once when the cluster's did.
    expect(audit.json<{ items: unknown[] }>().items).toHaveLength(2);

    // An inventory the sound replica receives: the clocks agree there; planning goes on.
    await s.cleanupRound();
    await s.cleanupRound();
    const again = await s.server.app.inject({
      method: 'GET',
      url: '/api/v1/cleanup/plan?limit=50',
      headers: s.server.auth(s.server.tokens.admin),
    });
    expect(again.json<{ items: { namespace: string; kind: string }[] }>().items).toContainEqual(
      expect.objectContaining({ namespace: 'replicas-dev', kind: 'scheduled' }),
    );
    expect(s.namespaceExists('replicas-dev')).toBe(true);

    // Idle for real now: the sound replica plans the deletion. An executor that asks the skewed
    // replica to start the job is refused there (its re-check reads the clocks too).
    s.advance(2 * hour);
    await s.executor.runPass();
    expect(await s.server.app.cleanup.pass.run()).toMatchObject({ planned: 1 });
    const refused = await skewedExecutor.runPass();
    expect(s.namespaceExists('replicas-dev')).toBe(true);
    expect(JSON.stringify(refused.jobs)).toMatch(/the wall clock is 9 h \d+ min ahead of the database's/);
  });
});
