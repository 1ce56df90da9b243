/**
 * The server's job queue and planning pass on SQLite and PostgreSQL: planning passes, jobs and
 * their leases (two claimers, an expired lease, a crash mid-pass), the re-check at start,
 * retries, inventory reconciliation and unrecorded namespaces, through the agent routes an
 * executor uses. Run by service.sqlite.test.ts and service.postgres.test.ts.
 */
import type { KyselyPlugin } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { composeCleanup } from '../../../src/server/cleanup/compose.js';
import { defaultCleanupSettings } from '../../../src/server/cleanup/settings.js';
import { Metrics } from '../../../src/server/metrics.js';
import { postEvents, postLogin, session, type Dialect } from '../helpers.js';
import { cleanupFixture, target, type CleanupFixture } from './fixture.js';

const hour = 3_600_000;

/** The tests on one database: a file per dialect, so that the two run side by side. */
export function queueAndPlanningTests(dialect: Dialect): void {
  describe(`cleanup queue and planning pass on ${dialect}`, () => {
    let f: CleanupFixture;
    beforeEach(async () => {
      f = await cleanupFixture(dialect);
    });
    afterEach(async () => {
      await f.close();
    });

    const cleanup = () => f.server.app.cleanup;
    const claim = (executorId: string, leaseSeconds = 60) =>
      f.call(
        'POST',
        '/api/v1/cleanup/jobs/claim',
        { executorId, targetKeys: [target], leaseSeconds },
        f.server.tokens.agent,
      );
    const start = (id: string, executorId: string) =>
      f.call('POST', `/api/v1/cleanup/jobs/${id}/start`, { executorId }, f.server.tokens.agent);
    const complete = (id: string, executorId: string, outcome = 'done', message = 'deleted') =>
      f.call(
        'POST',
        `/api/v1/cleanup/jobs/${id}/complete`,
        { executorId, outcome, message },
        f.server.tokens.agent,
      );
    const audit = async (action: string) =>
      (await f.call('GET', `/api/v1/audit?action=${action}`, undefined, f.server.tokens.read)).body.items as {
        detail: Record<string, unknown>;
      }[];

    /** One idle environment, enforced, with a live executor and a fresh inventory. */
    async function idleEnvironment(user = 'alice') {
      const env = await f.environment({ user });
      expect((await f.call('POST', '/api/v1/cleanup/enforce', { project: 'shop' })).status).toBe(200);
      f.advance(9 * hour);
      await f.report('e1', [f.item(env.namespace, `uid-${user}`)]);
      return env;
    }

    it('a token bound to another project acts on no job and marks nothing missing on the executor routes', async () => {
      const env = await idleEnvironment();
      expect(await cleanup().pass.run()).toMatchObject({ planned: 1 });
      const jobId = (await f.call('GET', '/api/v1/cleanup/jobs?limit=10', undefined, f.server.tokens.read))
        .body.items[0].id as string;
      const other = f.server.tokens.otherProject;
      const refused = [
        await f.call(
          'POST',
          '/api/v1/agents/heartbeat',
          {
            executorId: 'rogue',
            name: 'rogue',
            kind: 'agent',
            version: '0.1.0',
            targets: [{ targetKey: target, pluginName: 'kubernetes', description: 'dev cluster' }],
          },
          other,
        ),
        await f.call(
          'POST',
          '/api/v1/agents/inventory',
          { executorId: 'rogue', targetKey: target, pluginName: 'kubernetes', complete: true, items: [] },
          other,
        ),
        await f.call(
          'POST',
          '/api/v1/cleanup/jobs/claim',
          { executorId: 'rogue', targetKeys: [target] },
          other,
        ),
        await f.call('POST', `/api/v1/cleanup/jobs/${jobId}/start`, { executorId: 'rogue' }, other),
        await f.call(
          'POST',
          `/api/v1/cleanup/jobs/${jobId}/complete`,
          { executorId: 'rogue', outcome: 'done', message: 'deleted' },
          other,
        ),
      ];
      for (const r of refused) {
        expect(r.status).toBe(403);
        expect(r.body.error.message).toMatch(/bound to project other; an executor serves every project/);
      }
      const jobs = await f.call('GET', '/api/v1/cleanup/jobs?limit=10', undefined, f.server.tokens.read);
      expect(jobs.body.items).toEqual([expect.objectContaining({ id: jobId, state: 'planned' })]);
      const record = await f.call('GET', `/api/v1/environments/${env.id}`, undefined, f.server.tokens.read);
      expect(record.body.environment.state).toBe('active');
      expect(record.body.resources.every((r: { state: string }) => r.state === 'ready')).toBe(true);
    });

    it('a pass that fails shows as failed in status, metrics and the dashboard; the next good one as ok', async () => {
      await idleEnvironment();
      expect(await cleanup().pass.run()).toMatchObject({ outcome: 'ok' });
      const status = async () =>
        (await f.call('GET', '/api/v1/cleanup/status', undefined, f.server.tokens.read)).body;
      expect(await status()).toMatchObject({ lastPassOutcome: 'ok', lastPassNote: null });
      // The policies table gone under it: the pass cannot read its snapshot.
      const db = f.server.database.db;
      await db.schema.alterTable('cleanup_policies').renameTo('cleanup_policies_away').execute();
      try {
        f.advance(60_000);
        await expect(cleanup().pass.run()).rejects.toThrow();
      } finally {
        await db.schema.alterTable('cleanup_policies_away').renameTo('cleanup_policies').execute();
      }
      expect(await status()).toMatchObject({
        lastPassOutcome: 'failed',
        lastPassNote: expect.stringMatching(/cleanup_policies/),
      });
      const metrics = await f.server.app.inject({
        method: 'GET',
        url: '/metrics',
        headers: f.server.auth(f.server.tokens.admin),
      });
      expect(metrics.body).toContain('tend_cleanup_last_pass_outcome{outcome="failed"} 1');
      const login = await postLogin(f.server.app, { token: f.server.tokens.read, next: '/' });
      const cookie = login.cookies.find((c) => c.name === 'tend_session')!;
      const page = await f.server.app.inject({
        method: 'GET',
        url: '/cleanup',
        headers: { cookie: `tend_session=${cookie.value}` },
      });

      expect(page.body).toMatch(/The last planning pass\s+failed:<\/strong\s*>\s*[^<]*cleanup_policies/);
      f.advance(60_000);
      expect(await cleanup().pass.run()).toMatchObject({ outcome: 'ok' });
      expect(await status()).toMatchObject({ lastPassOutcome: 'ok' });
    });

    it("namespaces that executing delete jobs remove do not make another executor's list suspect", async () => {
      const users = ['d1', 'd2', 'd3', 'd4', 'd5'];
      for (const user of users) await f.environment({ user });
      // Five more, used lately: five due of ten opens no breaker.
      await f.call('POST', '/api/v1/cleanup/enforce', { project: 'shop' });
      f.advance(9 * hour);
      const fresh = ['f1', 'f2', 'f3', 'f4', 'f5'];
      for (const user of fresh) await f.environment({ user });
      const all = [...users, ...fresh];
      await f.report(
        'e1',
        all.map((u) => f.item(`shop-${u}`, `uid-${u}`)),
      );
      expect(await cleanup().pass.run()).toMatchObject({ planned: 5 });
      const claimed = (await claim('e1')).body.jobs as { id: string; namespaceName: string }[];
      const executing = claimed.slice(0, 3);
      for (const job of executing) expect((await start(job.id, 'e1')).body.proceed).toBe(true);
      // A second executor lists the target while the three are being deleted: 3 of 10 gone is
      // more than 20 %, but all three are expected.
      const gone = new Set(executing.map((j) => j.namespaceName));
      await f.report(
        'e2',
        all.filter((u) => !gone.has(`shop-${u}`)).map((u) => f.item(`shop-${u}`, `uid-${u}`)),
      );
      const status = async () =>
        (await f.call('GET', '/api/v1/cleanup/status', undefined, f.server.tokens.read)).body;
      expect((await status()).suspectInventories).toEqual([]);
      // The same disappearance with nothing deleting them is suspect.
      const others = claimed.slice(3).map((j) => j.namespaceName);
      await f.report(
        'e2',
        all
          .filter((u) => !gone.has(`shop-${u}`) && !others.includes(`shop-${u}`))
          .map((u) => f.item(`shop-${u}`, `uid-${u}`)),
      );
      expect((await status()).suspectInventories).toHaveLength(0);
      const untouched = fresh.slice(0, 3).map((u) => `shop-${u}`);
      await f.report(
        'e2',
        all
          .filter(
            (u) =>
              !gone.has(`shop-${u}`) && !others.includes(`shop-${u}`) && !untouched.includes(`shop-${u}`),
          )
          .map((u) => f.item(`shop-${u}`, `uid-${u}`)),
      );
      expect((await status()).suspectInventories).toHaveLength(1);
    });

    it('plans a job for an idle environment; one executor claims, starts and completes it; the environment is cleaned', async () => {
      const env = await idleEnvironment();
      const pass = await cleanup().pass.run();
      expect(pass).toMatchObject({ planned: 1, cancelled: 0, breakersOpened: [] });

      const plan = await f.call('GET', '/api/v1/cleanup/plan', undefined, f.server.tokens.read);
      expect(plan.body.items).toHaveLength(1);
      expect(plan.body.items[0]).toMatchObject({ kind: 'due', namespace: env.namespace, reason: null });
      expect(plan.body.items[0].sentence).toMatch(
        /^no activity since .* UTC, policy 8h; last: tend build by alice$/,
      );

      const [a, b] = await Promise.all([claim('e1'), claim('e2')]);
      const jobs = [...a.body.jobs, ...b.body.jobs];
      expect(jobs).toHaveLength(1);
      const job = jobs[0];
      const holder = a.body.jobs.length === 1 ? 'e1' : 'e2';
      expect(job).toMatchObject({
        action: 'delete',
        namespaceName: env.namespace,
        namespaceUid: 'uid-alice',
        pluginName: 'kubernetes',
        targetKey: target,
        target: { kind: 'kubernetes', clusterId: 'cluster-1' },
        dryRun: false,
      });
      const other = holder === 'e1' ? 'e2' : 'e1';
      expect((await start(job.id, other)).status).toBe(409);
      const started = await start(job.id, holder);
      expect(started.body).toMatchObject({ proceed: true, job: { state: 'executing', attempts: 1 } });
      const done = await complete(job.id, holder);
      expect(done.body.job.state).toBe('done');
      // Reported twice: the job is no longer held.
      expect((await complete(job.id, holder)).status).toBe(409);

      const detail = await f.call('GET', `/api/v1/environments/${env.id}`, undefined, f.server.tokens.read);
      expect(detail.body.environment.state).toBe('cleaned');
      expect(detail.body.resources[0].state).toBe('missing');
      expect((await audit('cleanup-planned')).length).toBe(1);
      const doneAudit = await audit('cleanup-done');
      expect(doneAudit).toHaveLength(1);
      expect(doneAudit[0]!.detail).toMatchObject({
        project: 'shop',
        namespace: env.namespace,
        message: 'deleted',
      });
      // The next pass plans nothing more.
      expect(await cleanup().pass.run()).toMatchObject({ planned: 0, decisions: 0 });
    });

    it('a pass whose snapshot was read before a job completed plans no second job for the cleaned namespace', async () => {
      const env = await idleEnvironment();
      // A replica whose reads can be interleaved: `between` runs once its next read has answered.
      let between: (() => Promise<unknown>) | undefined;
      const interleave: KyselyPlugin = {
        transformQuery: (args) => args.node,
        async transformResult(args) {
          const run = between;
          between = undefined;
          if (run) await run();
          return args.result;
        },
      };
      const racer = composeCleanup(
        f.server.database.db,
        f.server.database.reader.withPlugin(interleave),
        new Metrics(),
        f.now,
        { ...defaultCleanupSettings, intervalMs: 30_000 },
      );
      expect(await racer.pass.run()).toMatchObject({ planned: 1 });
      const [job] = (await claim('e1')).body.jobs;
      expect((await start(job.id, 'e1')).body).toMatchObject({ proceed: true });

      // The job completes while the next pass reads: after its first read, before its last
      // (through a queue that reads on the writer: the reader is held by the read interleaved).
      const completer = composeCleanup(f.server.database.db, f.server.database.db, new Metrics(), f.now, {
        ...defaultCleanupSettings,
        intervalMs: 30_000,
      });
      between = async () =>
        expect(
          (await completer.queue.complete(job.id, { executorId: 'e1', outcome: 'done', message: 'deleted' }))
            .job.state,
        ).toBe('done');
      expect(await racer.pass.run()).toMatchObject({ planned: 0 });
      expect(between).toBeUndefined();

      const jobs = await f.call('GET', '/api/v1/cleanup/jobs?limit=100', undefined, f.server.tokens.read);
      expect(jobs.body.items.map((j: { id: string; state: string }) => [j.id, j.state])).toEqual([
        [job.id, 'done'],
      ]);
      expect(await audit('cleanup-planned')).toHaveLength(1);
      // The next pass knows the namespace is gone.
      expect(await racer.pass.run()).toMatchObject({ planned: 0, decisions: 0 });
      const detail = await f.call('GET', `/api/v1/environments/${env.id}`, undefined, f.server.tokens.read);
      expect(detail.body.environment.state).toBe('cleaned');
    });

    it('a policy not enforced is dry-run, audited once per environment and due time', async () => {
      const env = await f.environment({ user: 'bob' });
      f.advance(9 * hour);
      await f.report('e1', [f.item(env.namespace, 'uid-bob')]);
      expect(await cleanup().pass.run()).toMatchObject({ planned: 0 });
      expect(await cleanup().pass.run()).toMatchObject({ planned: 0 });
      const plan = await f.call('GET', '/api/v1/cleanup/plan', undefined, f.server.tokens.read);
      expect(plan.body.items[0]).toMatchObject({ kind: 'dry-run' });
      expect(plan.body.items[0].sentence).toContain('tend cleanup enforce --project shop --environment dev');
      expect(await audit('cleanup-dry-run')).toHaveLength(1);
      expect((await claim('e1')).body.jobs).toEqual([]);
    });

    it('a dry-run ahead of its due time is not audited; it is audited once when it comes due', async () => {
      const env = await f.environment({ user: 'bob' });
      f.advance(7 * hour);
      await f.report('e1', [f.item(env.namespace, 'uid-bob')]);
      await cleanup().pass.run();
      const ahead = await f.call('GET', '/api/v1/cleanup/plan', undefined, f.server.tokens.read);
      expect(ahead.body.items[0]).toMatchObject({ kind: 'dry-run', dueAt: '2026-03-29T08:00:00.000Z' });
      expect(ahead.body.items[0].sentence).toMatch(/^would be deleted at 08:00 UTC once enforced/);
      expect(await audit('cleanup-dry-run')).toHaveLength(0);
      f.advance(2 * hour);
      await f.report('e1', [f.item(env.namespace, 'uid-bob')]);
      await cleanup().pass.run();
      await cleanup().pass.run();
      expect(await audit('cleanup-dry-run')).toHaveLength(1);
    });

    it('an expired lease returns the job; the first executor can no longer report it; the second finishes it once', async () => {
      await idleEnvironment();
      await cleanup().pass.run();
      const [job] = (await claim('e1', 10)).body.jobs;
      expect((await start(job.id, 'e1')).body.proceed).toBe(true);
      // e1 dies. Its lease runs out; a pass returns the job to planned, e2 claims it.
      f.advance(130_000);
      await f.report('e2', [f.item(job.namespaceName, 'uid-alice')]);
      await cleanup().pass.run();
      const jobs = await f.call('GET', '/api/v1/cleanup/jobs?state=planned', undefined, f.server.tokens.read);
      expect(jobs.body.items.map((j: { id: string }) => j.id)).toEqual([job.id]);
      const [again] = (await claim('e2')).body.jobs;
      expect(again.id).toBe(job.id);
      expect((await complete(job.id, 'e1')).status).toBe(409);
      expect((await start(job.id, 'e2')).body).toMatchObject({ proceed: true, job: { attempts: 2 } });
      expect((await complete(job.id, 'e2')).body.job.state).toBe('done');
      expect(await audit('cleanup-done')).toHaveLength(1);
      expect(await audit('cleanup-lease-expired')).toHaveLength(1);
    });

    it('activity after the decision cancels the job at start, with the reason', async () => {
      const env = await idleEnvironment();
      await cleanup().pass.run();
      const [job] = (await claim('e1')).body.jobs;
      const s = session({ user: 'alice', command: 'deploy' });
      await postEvents(f.server, [s.started({ afterInactivity: '8h', action: 'delete' }), s.completed()]);
      const started = await start(job.id, 'e1');
      expect(started.body.proceed).toBe(false);
      expect(started.body.reason).toMatch(/^used since the decision/);
      const detail = await f.call('GET', `/api/v1/environments/${env.id}`, undefined, f.server.tokens.read);
      expect(detail.body.resources[0].state).toBe('ready');
      const cancelled = await audit('cleanup-cancelled');
      expect(cancelled[0]!.detail.message).toMatch(/^used since the decision/);
    });

    it('protection, keep-alive and halt at start cancel; a planned job no longer due is cancelled by the next pass', async () => {
      const env = await idleEnvironment();
      await cleanup().pass.run();
      const [job] = (await claim('e1')).body.jobs;
      expect((await f.call('POST', `/api/v1/environments/${env.id}/protect`)).status).toBe(200);
      expect((await start(job.id, 'e1')).body).toMatchObject({ proceed: false });

      const env2 = await f.environment({ user: 'carol' });
      f.advance(9 * hour);
      await f.report('e1', [f.item(env.namespace, 'uid-alice'), f.item(env2.namespace, 'uid-carol')]);
      expect(await cleanup().pass.run()).toMatchObject({ planned: 1 });
      await f.call('POST', `/api/v1/environments/${env2.id}/keep-alive`, { for: '1d' });
      expect(await cleanup().pass.run()).toMatchObject({ cancelled: 1 });
      const plan = await f.call('GET', '/api/v1/cleanup/plan', undefined, f.server.tokens.read);
      expect(plan.body.items.map((i: { reason: string }) => i.reason).sort()).toEqual([
        'kept-alive',
        'protected',
      ]);

      // A keep-alive only ever extends: asking for 1m leaves the day in force; the day then ends.
      await f.call('POST', `/api/v1/environments/${env2.id}/keep-alive`, { for: '1m' });
      f.advance(120_000);
      await f.report('e1', [f.item(env.namespace, 'uid-alice'), f.item(env2.namespace, 'uid-carol')]);
      expect(await cleanup().pass.run()).toMatchObject({ planned: 0 });
      f.advance(24 * hour);
      await f.report('e1', [f.item(env.namespace, 'uid-alice'), f.item(env2.namespace, 'uid-carol')]);
      expect(await cleanup().pass.run()).toMatchObject({ planned: 1 });
      const [job2] = (await claim('e1')).body.jobs;
      expect((await f.call('POST', '/api/v1/cleanup/halt')).body).toEqual({ halted: true, changed: true });
      expect((await start(job2.id, 'e1')).body).toMatchObject({
        proceed: false,
        reason: expect.stringContaining('halted'),
      });
    });

    it('a breaker opened after the claim refuses the start, and the reason names the breaker', async () => {
      const first = await f.environment({ user: 'b1' });
      await f.call('POST', '/api/v1/cleanup/enforce', { project: 'shop' });
      f.advance(4 * hour);
      const envs = [first];
      for (const user of ['b2', 'b3', 'b4']) envs.push(await f.environment({ user }));
      const items = () => envs.map((e, i) => f.item(e.namespace, `uid-b${i + 1}`));
      // Only b1 is due: one of four, no breaker.
      f.advance(5 * hour);
      await f.report('e1', items());
      expect(await cleanup().pass.run()).toMatchObject({ planned: 1, breakersOpened: [] });
      // Now the other three are due too; b1's job is claimed before the next pass sees it.
      f.advance(4 * hour);
      await f.report('e1', items());
      const [job] = (await claim('e1', 600)).body.jobs;
      expect(job.namespaceName).toBe(first.namespace);
      // Four of four due at once opens the breaker.
      expect(await cleanup().pass.run()).toMatchObject({ breakersOpened: ['shop'] });
      const started = await start(job.id, 'e1');
      expect(started.body).toMatchObject({
        proceed: false,
        reason: expect.stringMatching(/circuit breaker of project shop .*open/),
      });
      const jobs = await f.call('GET', '/api/v1/cleanup/jobs?limit=10', undefined, f.server.tokens.read);
      expect(jobs.body.items.find((j: { id: string }) => j.id === job.id)).toMatchObject({
        state: 'cancelled',
      });
      expect(await audit('cleanup-done')).toEqual([]);
    });

    it('a failure is retried after a backoff, then given up after the last attempt', async () => {
      await idleEnvironment();
      await cleanup().pass.run();
      let [job] = (await claim('e1')).body.jobs;
      for (let attempt = 1; attempt <= 5; attempt++) {
        expect((await start(job.id, 'e1')).body.proceed).toBe(true);
        const failed = await complete(job.id, 'e1', 'failed', 'the API answered 500');
        if (attempt < 5) {
          expect(failed.body.job.state).toBe('planned');
          // Not claimable before the backoff.
          expect((await claim('e1')).body.jobs).toEqual([]);
          f.advance(3_600_000);
          await f.report('e1', [f.item(job.namespaceName, 'uid-alice')]);
          [job] = (await claim('e1')).body.jobs;
          expect(job).toBeDefined();
        } else {
          expect(failed.body.job.state).toBe('failed');
        }
      }
      expect(await audit('cleanup-retry')).toHaveLength(4);
      expect(await audit('cleanup-failed')).toHaveLength(1);
    });

    it('a replica that died mid-pass leaves nothing stuck: its lease expires, the next pass runs', async () => {
      await idleEnvironment();
      const db = f.server.database.db;
      await db
        .updateTable('cleanup_control')
        .set({
          plan_lease_owner: 'dead-replica',
          plan_lease_expires_at: new Date(f.now().getTime() + 60_000).toISOString(),
        })
        .execute();
      expect(await cleanup().pass.run()).toBeUndefined();
      f.advance(61_000);
      await f.report('e1', [
        f.item((await claim('e1')).body.jobs[0]?.namespaceName ?? 'shop-alice', 'uid-alice'),
      ]);
      expect(await cleanup().pass.run()).toMatchObject({ planned: 1 });
    });

    it('two replicas planning at once create each job once', async () => {
      for (const user of ['a1', 'a2', 'a3', 'a4', 'a5', 'a6', 'a7', 'a8']) await f.environment({ user });
      await f.call('POST', '/api/v1/cleanup/enforce', { project: 'shop' });
      f.advance(9 * hour);
      // Eight of eight due would open the breaker: ten more under the same policy, just used.
      for (let i = 0; i < 10; i++) await f.environment({ user: `np${i}` });
      await f.report(
        'e1',
        [
          ...['a1', 'a2', 'a3', 'a4', 'a5', 'a6', 'a7', 'a8'],
          ...Array.from({ length: 10 }, (_, i) => `np${i}`),
        ].map((u) => f.item(`shop-${u}`, `uid-${u}`)),
      );
      const other = composeCleanup(f.server.database.db, f.server.database.reader, new Metrics(), f.now, {
        ...defaultCleanupSettings,
        intervalMs: 30_000,
      });
      const results = await Promise.all([cleanup().pass.run(), other.pass.run()]);
      await Promise.all([cleanup().pass.run(), other.pass.run()]);
      expect(results.filter((r) => r !== undefined).length).toBeGreaterThanOrEqual(1);
      const jobs = await f.call('GET', '/api/v1/cleanup/jobs?limit=100', undefined, f.server.tokens.read);
      expect(jobs.body.items).toHaveLength(8);
      expect(await audit('cleanup-planned')).toHaveLength(8);
    });

    it('opens the breaker when most of a project is due at once; an admin resets it', async () => {
      for (const user of ['b1', 'b2', 'b3']) await f.environment({ user });
      // Environments that cannot be deleted (no policy) do not dilute the share due at once.
      for (let i = 0; i < 5; i++) await f.environment({ user: `np${i}`, policy: null });
      await f.call('POST', '/api/v1/cleanup/enforce', { project: 'shop' });
      // Nor do ones under a policy nobody enforced (another environment name, seen after enforce).
      for (let i = 0; i < 5; i++) await f.environment({ user: `ne${i}`, environment: 'preview' });
      f.advance(9 * hour);
      await f.report('e1', [
        ...['b1', 'b2', 'b3'].map((u) => f.item(`shop-${u}`, `uid-${u}`)),
        ...Array.from({ length: 5 }, (_, i) => f.item(`shop-np${i}`, `uid-np${i}`)),
        ...Array.from({ length: 5 }, (_, i) =>
          f.item(`shop-ne${i}`, `uid-ne${i}`, { environment: 'preview' }),
        ),
      ]);
      expect(await cleanup().pass.run()).toMatchObject({ planned: 0, breakersOpened: ['shop'] });
      expect(await audit('breaker-open')).toHaveLength(1);
      const metrics = await f.server.app.inject({
        method: 'GET',
        url: '/metrics',
        headers: f.server.auth(f.server.tokens.read),
      });
      expect(metrics.body).toContain('tend_cleanup_breaker_open{project="shop"} 1');
      expect(metrics.body).toContain('tend_cleanup_blocked{reason="breaker-open"} 3');
      expect(metrics.body).toMatch(/tend_executor_last_seen_seconds\{target="kubernetes\/cluster-1"\} 0/);
      expect((await f.call('POST', '/api/v1/cleanup/breakers/shop/reset')).status).toBe(200);
      expect((await f.call('POST', '/api/v1/cleanup/breakers/shop/reset')).status).toBe(409);
      // Still more than half due: it opens again (the admin would lift policies or protect first).
      expect(await cleanup().pass.run()).toMatchObject({ breakersOpened: ['shop'] });
    });

    it('reconciles inventories: absent from a complete one -> missing; partial -> nothing; unrecorded namespaces shown', async () => {
      const env = await f.environment({ user: 'dora' });
      await f.report('e1', [f.item(env.namespace, 'uid-dora'), f.item('shop-stray', 'uid-stray')], false);
      let detail = await f.call('GET', `/api/v1/environments/${env.id}`, undefined, f.server.tokens.read);
      expect(detail.body.resources[0].state).toBe('ready');
      await f.report('e1', [f.item('shop-stray', 'uid-stray')], false);
      detail = await f.call('GET', `/api/v1/environments/${env.id}`, undefined, f.server.tokens.read);
      expect(detail.body.resources[0].state).toBe('ready');
      await f.report('e1', [f.item('shop-stray', 'uid-stray')]);
      detail = await f.call('GET', `/api/v1/environments/${env.id}`, undefined, f.server.tokens.read);
      expect(detail.body.resources[0].state).toBe('missing');
      expect(detail.body.environment.state).toBe('cleaned');
      const status = await f.call('GET', '/api/v1/cleanup/status', undefined, f.server.tokens.read);
      expect(status.body.unrecorded).toMatchObject([
        { namespace: 'shop-stray', uid: 'uid-stray', project: 'shop' },
      ]);
      expect(status.body.executors).toMatchObject([{ id: 'e1', targetKey: target, version: '0.1.0' }]);
      expect(await audit('unrecorded-namespace')).toHaveLength(1);
      expect(await audit('resource-missing')).toHaveLength(1);
    });

    it('a namespace an inventory found missing stays missing when it is listed again', async () => {
      const env = await f.environment({ user: 'dana' });
      const other = await f.environment({ user: 'otto' });
      const stays = f.item(other.namespace, 'uid-otto');
      await f.report('e1', [f.item(env.namespace, 'uid-dana'), stays]);
      // Gone from a complete list (not every recorded namespace at once: not suspect).
      await f.report('e1', [stays]);
      const detail = async () =>
        (await f.call('GET', `/api/v1/environments/${env.id}`, undefined, f.server.tokens.read)).body;
      expect((await detail()).resources[0].state).toBe('missing');
      // Listed again (a namespace deleted by tend is still listed while it terminates).
      f.advance(30_000);
      await f.report('e1', [f.item(env.namespace, 'uid-dana', { state: 'terminating' }), stays]);
      f.advance(30_000);
      await f.report('e1', [f.item(env.namespace, 'uid-dana'), stays]);
      expect((await detail()).resources[0].state).toBe('missing');
      expect((await detail()).environment.state).toBe('cleaned');
      expect(await audit('resource-restored')).toHaveLength(0);
    });

    it('a complete inventory of a host covers the local environments of every path on it', async () => {
      const s = session({ user: 'lou', project: 'shop' });
      const ns = s.ns('ready', { uid: 'uid-lou' });
      const local = {
        ...ns,
        payload: {
          ...(ns.payload as object),
          pluginName: 'exec',
          providerName: 'exec',
          target: { kind: 'local', hostId: 'my_host', path: '/src/shop' },
        },
      };
      expect((await postEvents(f.server, [s.started(), local, s.completed()])).statusCode).toBe(200);
      const call = (token = f.server.tokens.agent) =>
        f.call(
          'POST',
          '/api/v1/agents/inventory',
          { executorId: 'h1', targetKey: 'local/myXhost', pluginName: 'exec', complete: true, items: [] },
          token,
        );
      // Another host (a LIKE pattern would take `_` for any character) leaves it alone…
      expect((await call()).body.markedMissing).toBe(0);
      // (Another environment listed: an empty list that would mark a recorded one missing is suspect.)
      const owned = await f.call(
        'POST',
        '/api/v1/agents/inventory',
        {
          executorId: 'h1',
          targetKey: 'local/my_host',
          pluginName: 'exec',
          complete: true,
          items: [f.item('shop-other', 'uid-other')],
        },
        f.server.tokens.agent,
      );
      // …its own host marks it missing.
      expect(owned.body.markedMissing).toBe(1);
    });

    it('an adopted namespace stays recorded when a complete inventory (managed-by=tend only) leaves it out', async () => {
      const s = session({ user: 'ada', project: 'shop' });
      const adopted = s.ns('ready', { uid: 'uid-ada', cause: 'observed', detail: { adopted: true } });
      expect((await postEvents(f.server, [s.started(), adopted, s.completed()])).statusCode).toBe(200);
      const res = await f.call(
        'POST',
        '/api/v1/agents/inventory',
        { executorId: 'e1', targetKey: target, pluginName: 'kubernetes', complete: true, items: [] },
        f.server.tokens.agent,
      );
      expect(res.body.markedMissing).toBe(0);
      expect(await audit('resource-missing')).toHaveLength(0);
    });

    it('a created event for a uid already recorded as adopted leaves it adopted; the planner blocks it', async () => {
      const s = session({ user: 'abe', project: 'shop' });
      const adopted = s.ns('ready', { uid: 'uid-abe', cause: 'observed', detail: { adopted: true } });
      expect(
        (await postEvents(f.server, [s.started({ afterInactivity: '8h', action: 'delete' }), adopted]))
          .statusCode,
      ).toBe(200);
      // A later claim of creation for the same uid (a forged or confused session) is no proof.
      const created = s.ns('ready', { uid: 'uid-abe', cause: 'created' });
      expect((await postEvents(f.server, [created, s.completed()])).statusCode).toBe(200);
      const ownership = await f.server.database.db
        .selectFrom('resources')
        .select('ownership')
        .where('namespace_name', '=', s.namespace)
        .execute();
      expect(ownership.map((r) => r.ownership)).toEqual(['adopted']);
      expect((await f.call('POST', '/api/v1/cleanup/enforce', { project: 'shop' })).status).toBe(200);
      f.advance(9 * hour);
      await f.report('e1', [f.item(s.namespace, 'uid-abe')]);
      await cleanup().pass.run();
      const plan = await f.call('GET', '/api/v1/cleanup/plan', undefined, f.server.tokens.read);
      expect(plan.body.items).toEqual([
        expect.objectContaining({ namespace: s.namespace, kind: 'blocked', reason: 'adopted' }),
      ]);
      expect((await claim('e1')).body.jobs).toEqual([]);
    });

    it('a job cannot be reported done before it was started', async () => {
      await idleEnvironment('ivy');
      await cleanup().pass.run();
      const [job] = (await claim('e1')).body.jobs;
      const res = await complete(job.id, 'e1');
      expect(res.status).toBe(409);
      expect(res.body.error.code).toBe('TEND_CLEANUP_CONFLICT');
      expect((await start(job.id, 'e1')).body.proceed).toBe(true);
      expect((await complete(job.id, 'e1')).body.job.state).toBe('done');
    });

    it('a namespace re-created with another uid is not cleaned', async () => {
      await idleEnvironment('erin');
      await f.report('e1', [f.item('shop-erin', 'uid-new')], false);
      await cleanup().pass.run();
      const plan = await f.call('GET', '/api/v1/cleanup/plan', undefined, f.server.tokens.read);
      expect(plan.body.items[0]).toMatchObject({ kind: 'blocked', reason: 'inventory-partial' });
      f.advance(1000);
      await f.report('e1', [f.item('shop-erin', 'uid-new')]);
      await cleanup().pass.run();
      expect((await claim('e1')).body.jobs).toEqual([]);
    });

    it('clean up now skips the inactivity wait only, through the same job path', async () => {
      const env = await f.environment({ user: 'finn', policy: null });
      await f.report('e1', [f.item(env.namespace, 'uid-finn')]);
      const res = await f.call('POST', `/api/v1/environments/${env.id}/cleanup`);
      expect(res.status).toBe(200);
      expect(res.body.jobs).toHaveLength(1);
      expect((await f.call('POST', `/api/v1/environments/${env.id}/cleanup`)).status).toBe(409);
      const [job] = (await claim('e1')).body.jobs;
      expect((await start(job.id, 'e1')).body.proceed).toBe(true);
      expect((await audit('cleanup-now'))[0]!.detail).toMatchObject({ namespace: env.namespace });

      const env2 = await f.environment({ user: 'gus', policy: null });
      await f.call('POST', `/api/v1/environments/${env2.id}/protect`);
      const refused = await f.call('POST', `/api/v1/environments/${env2.id}/cleanup`);
      expect(refused.status).toBe(409);
      expect(refused.body.error.message).toContain('protected');
    });
  });
}
