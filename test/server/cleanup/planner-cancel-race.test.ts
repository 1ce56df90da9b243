/**
 * The planning pass cancels a planned job whose decision is no longer due (pass.ts
 * cancelNoLongerDue): it reads the job, then writes the cancel through the queue's group commit,
 * which can wait behind other writes. An executor that claimed, began and confirmed the job in
 * that time may already have sent its DELETE: the cancel must not land on it, or the namespace is
 * gone with its job "cancelled" and no `done` — what two servers under load once showed. Nor
 * may it reopen a job that finished since (the pass reads the job again before its cancel). On
 * SQLite and PostgreSQL, through the agent routes and the repository the pass writes with.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { jobAudit } from '../../../src/server/cleanup/audits.js';
import { CleanupJobRepository } from '../../../src/server/db/repositories/cleanup-jobs.js';
import type { Dialect } from '../helpers.js';
import { cleanupFixture, target, type CleanupFixture } from './fixture.js';

const hour = 3_600_000;

describe.each<Dialect>(['sqlite', 'postgres'])('the planner and an executor at once, on %s', (dialect) => {
  let f: CleanupFixture;
  beforeEach(async () => {
    f = await cleanupFixture(dialect);
  });
  afterEach(async () => {
    await f.close();
  });

  const agent = (route: string, body: unknown) => f.call('POST', route, body, f.server.tokens.agent);

  /** A planned job for an idle environment, and the row as the planner read it. */
  async function plannedJob() {
    const env = await f.environment({ user: 'alice' });
    expect((await f.call('POST', '/api/v1/cleanup/enforce', { project: 'shop' })).status).toBe(200);
    f.advance(9 * hour);
    await f.report('e1', [f.item(env.namespace, 'uid-alice')]);
    expect(await f.server.app.cleanup.pass.run()).toMatchObject({ planned: 1 });
    const [read] = await f.server.database.db.selectFrom('cleanup_jobs').selectAll().execute();
    expect(read).toMatchObject({ state: 'planned', lease_expires_at: null });
    return read!;
  }

  /** The planner's cancel of the job as it read it. */
  const plannerCancels = (read: Awaited<ReturnType<typeof plannedJob>>) =>
    new CleanupJobRepository(f.server.database.db).finish({
      job: read,
      executorId: null,
      outcome: 'cancelled',
      message: 'due, but no live executor for its cluster',
      now: f.now(),
      audit: jobAudit(read, 'cleanup-cancelled', 'planner', 'due, but no live executor for its cluster'),
    });

  it('a job an executor began after the planner read it is not cancelled: it ends as the executor reports', async () => {
    const read = await plannedJob();
    const [job] = (await agent('/api/v1/cleanup/jobs/claim', { executorId: 'e1', targetKeys: [target] })).body
      .jobs;
    expect((await agent(`/api/v1/cleanup/jobs/${job.id}/start`, { executorId: 'e1' })).body.proceed).toBe(
      true,
    );
    expect((await agent(`/api/v1/cleanup/jobs/${job.id}/start`, { executorId: 'e1' })).body.proceed).toBe(
      true,
    );

    expect(await plannerCancels(read)).toBe(false);
    const done = await agent(`/api/v1/cleanup/jobs/${job.id}/complete`, {
      executorId: 'e1',
      outcome: 'done',
      message: 'deleted',
    });
    expect(done.status).toBe(200);
    expect(done.body.job.state).toBe('done');
    const audited = await f.server.database.db.selectFrom('audit_log').select('action').execute();
    expect(audited.map((a) => a.action)).not.toContain('cleanup-cancelled');
  });

  it('nor one an executor only claimed: its start re-checks it instead', async () => {
    const read = await plannedJob();
    const [job] = (await agent('/api/v1/cleanup/jobs/claim', { executorId: 'e1', targetKeys: [target] })).body
      .jobs;
    expect(await plannerCancels(read)).toBe(false);
    expect((await agent(`/api/v1/cleanup/jobs/${job.id}/start`, { executorId: 'e1' })).body.proceed).toBe(
      true,
    );
  });

  // The pass reads the job again right before its cancel: what it holds then may be the job done,
  // its lease cleared, when the executor finished in between.
  it.each(['as the planner read it', 'read again after it finished'])(
    'nor one an executor finished since, the row %s: it stays done',
    async (row) => {
      const read = await plannedJob();
      const [job] = (await agent('/api/v1/cleanup/jobs/claim', { executorId: 'e1', targetKeys: [target] }))
        .body.jobs;
      await agent(`/api/v1/cleanup/jobs/${job.id}/start`, { executorId: 'e1' });
      await agent(`/api/v1/cleanup/jobs/${job.id}/complete`, {
        executorId: 'e1',
        outcome: 'done',
        message: 'deleted',
      });
      const [afresh] = await f.server.database.db.selectFrom('cleanup_jobs').selectAll().execute();
      expect(afresh).toMatchObject({ state: 'done', lease_expires_at: null });
      expect(await plannerCancels(row === 'as the planner read it' ? read : afresh!)).toBe(false);
      const [after] = await f.server.database.db.selectFrom('cleanup_jobs').select('state').execute();
      expect(after!.state).toBe('done');
      const audited = await f.server.database.db.selectFrom('audit_log').select('action').execute();
      expect(audited.map((a) => a.action)).not.toContain('cleanup-cancelled');
    },
  );

  it('a job nobody took since the planner read it is cancelled', async () => {
    const read = await plannedJob();
    expect(await plannerCancels(read)).toBe(true);
    const [row] = await f.server.database.db.selectFrom('cleanup_jobs').select('state').execute();
    expect(row!.state).toBe('cancelled');
  });
});
