/**
 * The cleanup planner at scale (issue 11), on SQLite: 100,000 environments with 200,000 recorded
 * namespaces (an app and a build namespace each), all with an 8h policy, enforced, a live
 * executor and a complete inventory listing every namespace. Measures:
 * - one planning pass (`PlanningPass.run`: lease, snapshot, plan, jobs, decisions
 *   stored): the first pass, which stores all 200,000 decisions, and the next, which stores only
 *   what changed (target < 1 s); and the snapshot load and the pure `plan` on their own;
 * - `GET /api/v1/cleanup/plan?within=24h`, the first page of 50, over real HTTP on 127.0.0.1
 *   (target < 100 ms).
 * Activity is spread over the last 10 hours, so a fifth of each project's environments are due
 * (the cap of 10 per pass holds the rest: `blocked: cap-reached`), the rest scheduled.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { monotonicFactory } from 'ulidx';
import { buildServer } from '../src/server/app.js';
import { plan } from '../src/server/cleanup/planner/plan.js';
import { loadSnapshot } from '../src/server/cleanup/snapshot.js';
import { migrateToLatest, openDatabase, type ServerDatabase } from '../src/server/db/database.js';
import { openSqlite } from '../src/server/db/sqlite.js';
import { TokenRepository } from '../src/server/db/repositories/tokens.js';
import { figure, median, percentile, ratio, timeIt } from './support.js';

const environments = Number(process.env.TEND_BENCH_ENVIRONMENTS ?? 100_000);
const projects = 1000;
const targetKey = 'kubernetes/bench-cluster';
const hour = 3_600_000;
const nextId = monotonicFactory();

async function insertChunked<T>(
  database: ServerDatabase,
  table: 'environments' | 'resources' | 'cleanup_inventory_items' | 'cleanup_policies',
  rows: T[],
  chunk = 1000,
): Promise<void> {
  for (let i = 0; i < rows.length; i += chunk) {
    // The rows are built for the table named (checked by the seed below, not by this helper).
    await database.db
      .insertInto(table)
      .values(rows.slice(i, i + chunk) as never)
      .execute();
  }
}

async function seed(database: ServerDatabase, now: number): Promise<void> {
  const target = { kind: 'kubernetes', clusterId: 'bench-cluster', server: 'https://k8s', context: 'bench' };
  const envRows = [];
  const resourceRows = [];
  const itemRows = [];
  const at = new Date(now).toISOString();
  for (let n = 0; n < environments; n++) {
    const project = `project${n % projects}`;
    const name = n % 2 ? 'dev' : 'preview';
    // Spread over the last 10 hours: with an 8h policy a fifth is due.
    const activity = new Date(now - ((n * 7919) % (10 * hour))).toISOString();
    const id = nextId();
    envRows.push({
      id,
      project,
      name,
      namespace: `ns-${n}`,
      state: 'active',
      owner: `user${n % 700}`,
      protected: 0,
      policy_after_inactivity: '8h',
      policy_action: 'delete',
      created_at: activity,
      updated_at: activity,
      last_activity_at: activity,
      last_activity_type: 'sessionCompleted',
      last_activity_user: `user${n % 700}`,
      last_activity_command: 'build',
    });
    for (const [suffix, role] of [
      ['', 'app'],
      ['-build', 'build'],
    ] as const) {
      const namespace = `ns-${n}${suffix}`;
      const uid = `uid-${n}${suffix}`;
      resourceRows.push({
        id: nextId(),
        environment_id: id,
        plugin: 'kubernetes',
        provider: 'kubernetes',
        target_kind: 'kubernetes',
        target: JSON.stringify(target),
        target_key: targetKey,
        namespace_name: namespace,
        namespace_uid: uid,
        generation: 1,
        role,
        ownership: 'owned',
        state: 'ready',
        last_cause: 'created',
        detail: null,
        first_seen_at: activity,
        last_seen_at: activity,
        last_activity_at: activity,
        missing_since: null,
      });
      itemRows.push({
        target_key: targetKey,
        namespace_name: namespace,
        uid,
        resource_version: '1',
        phase: 'active',
        managed_by_tend: 1,
        project,
        environment: name,
        role: null,
        adopted: 0,
        last_activity_at: activity,
        detail: null,
        recorded: 1,
        environment_id: null,
        first_seen_at: at,
        seen_at: at,
      });
    }
  }
  await insertChunked(database, 'environments', envRows);
  await insertChunked(database, 'resources', resourceRows);
  await insertChunked(database, 'cleanup_inventory_items', itemRows);
  const policies = [];
  for (let p = 0; p < projects; p++) {
    for (const name of ['dev', 'preview']) {
      policies.push({
        project: `project${p}`,
        environment: name,
        after_inactivity_ms: 8 * hour,
        action: 'delete',
        enforced_at: at,
        enforced_by: 'bench',
      });
    }
  }
  await insertChunked(database, 'cleanup_policies', policies);
  await database.db
    .insertInto('cleanup_executors')
    .values({
      id: 'bench-exec',
      name: 'bench',
      kind: 'embedded',
      version: 'bench',
      token_name: null,
      first_seen_at: at,
      last_seen_at: at,
    })
    .execute();
  await database.db
    .insertInto('cleanup_executor_targets')
    .values({
      executor_id: 'bench-exec',
      target_key: targetKey,
      plugin: 'kubernetes',
      description: 'bench',
      last_seen_at: at,
    })
    .execute();
  await database.db
    .insertInto('cleanup_inventories')
    .values({
      target_key: targetKey,
      plugin: 'kubernetes',
      executor_id: 'bench-exec',
      received_at: at,
      complete: 1,
      error: null,
      item_count: itemRows.length,
      last_complete_at: at,
    })
    .execute();
}

export async function run(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'tend-bench-cleanup-'));
  const database = await openDatabase({ sqliteFile: join(dir, 'tend.db') });
  try {
    await migrateToLatest(database);
    const now = Date.now();
    const seedMs = await timeIt(() => seed(database, now));
    console.log(
      `  seeded ${environments.toLocaleString('en')} environments, ${(2 * environments).toLocaleString('en')} resources and inventory items in ${(seedMs / 1000).toFixed(1)} s`,
    );
    const app = await buildServer({ db: database, logger: false });
    try {
      const planning = app.cleanup.pass;
      const first = await planning.run();
      if (!first) throw new Error('the planning lease was not free');
      console.log(
        `  first pass: ${first.decisions.toLocaleString('en')} decisions, ${first.planned} jobs planned`,
      );
      figure('planning pass, first (reads all, stores every decision)', first.durationMs, 'ms');
      // Between passes, what a busy registry sees in 30 s: 1,000 environments used, 200
      // namespaces stamped by in-cluster builds (written as ingest and inventories write them).
      let touched = 0;
      const touch = async () => {
        const at = new Date().toISOString();
        const envIds = await database.db
          .selectFrom('environments')
          .select('id')
          .orderBy('id')
          .offset((touched * 1000) % environments)
          .limit(1000)
          .execute();
        await database.db
          .updateTable('environments')
          .set({ last_activity_at: at, updated_at: at })
          .where(
            'id',
            'in',
            envIds.map((e) => e.id),
          )
          .execute();
        const names = Array.from(
          { length: 200 },
          (_, i) => `ns-${(touched * 7919 + i * 499) % environments}`,
        );
        await database.db
          .updateTable('cleanup_inventory_items')
          .set({ last_activity_at: at, seen_at: at })
          .where('target_key', '=', targetKey)
          .where('namespace_name', 'in', names)
          .execute();
        touched++;
      };
      const steady: number[] = [];
      const reused: number[] = [];
      const phases: { snapshot: number[]; plan: number[]; store: number[] } = {
        snapshot: [],
        plan: [],
        store: [],
      };
      for (let i = 0; i < 5; i++) {
        await touch();
        const pass = await planning.run();
        steady.push(pass!.durationMs);
        reused.push(pass!.reused);
        for (const phase of ['snapshot', 'plan', 'store'] as const) phases[phase].push(pass!.phasesMs[phase]);
      }
      figure('planning pass, next (1,000 changed), median of 5', median(steady), 'ms', {
        max: 1000,
      });
      figure('  environments the memo carried over (median)', median(reused), 'envs');
      figure('  of which: snapshot (cache, re-reads what changed)', median(phases.snapshot), 'ms');
      figure('  of which: plan()', median(phases.plan), 'ms');
      figure('  of which: storing what changed', median(phases.store), 'ms');

      // Floors, on the same database in the same run.
      const loads: number[] = [];
      const plans: number[] = [];
      for (let i = 0; i < 3; i++) {
        const started = performance.now();
        const snapshot = await loadSnapshot(database.reader, new Date());
        loads.push(performance.now() - started);
        plans.push(await timeIt(() => plan(snapshot, Date.now(), planning.settings)));
      }
      const raw = openSqlite(join(dir, 'tend.db'), { readOnly: true });
      const select = raw.prepare(
        'select id, environment_id, plugin, target_key, namespace_name, namespace_uid from resources',
      );
      select.setReturnArrays(true);
      const selects: number[] = [];
      for (let i = 0; i < 3; i++) selects.push(await timeIt(() => select.all()));
      raw.close();
      figure('floor: plan(), the pure function (median of 3)', median(plans), 'ms');
      figure('  plan() per environment', (median(plans) * 1000) / environments, 'µs');
      figure('floor: bare SELECT of the 200,000 resource rows (raw)', median(selects), 'ms');
      figure('full loadSnapshot, no cache (median of 3)', median(loads), 'ms');
      ratio('planning pass, next ÷ plan()', median(steady), median(plans), 'plan()');
      ratio('planning pass, next ÷ bare SELECT', median(steady), median(selects), 'SELECT');
      ratio('planning pass, first ÷ bare SELECT', first.durationMs, median(selects), 'SELECT');

      // The same environments with working-hours schedules (issue 14): every policy gets one of
      // four schedules in two zones, a third of the environments are paused by their schedule.
      // Ratios against the passes without schedules above, measured in this run.
      const schedules = [
        {
          sleepAt: '20:00',
          wakeAt: '08:00',
          weekdays: ['mon', 'tue', 'wed', 'thu', 'fri'],
          timeZone: 'Europe/Berlin',
        },
        { sleepAt: '02:30', wakeAt: '02:15', weekdays: ['sun'], timeZone: 'Europe/Berlin' },
        { sleepAt: '18:00', wakeAt: '09:00', weekdays: ['mon', 'wed', 'fri'], timeZone: 'America/New_York' },
        { sleepAt: '06:00', wakeAt: '22:00', weekdays: ['sat', 'sun'], timeZone: 'America/New_York' },
      ];
      for (const [i, schedule] of schedules.entries()) {
        await database.db
          .updateTable('environments')
          .set({ policy_schedule: JSON.stringify(schedule), policy_action: 'pause' })
          .where(
            sql`substr(namespace, -1)`,
            'in',
            [0, 1, 2].map((d) => String(i * 2 + d)).filter((d) => d < '10'),
          )
          .execute();
      }
      await database.db
        .updateTable('environments')
        .set({ state: 'paused', paused_by: 'schedule', paused_at: new Date().toISOString() })
        .where(sql`substr(namespace, -1)`, 'in', ['0', '3', '6'])
        .execute();
      await database.db.updateTable('cleanup_policies').set({ action: 'pause' }).execute();
      const scheduledFirst = await planning.run();
      // Every policy changed at once: every decision is worked out and stored again (once).
      figure(
        'with schedules: first pass (every decision changed and stored)',
        scheduledFirst!.durationMs,
        'ms',
      );
      const scheduledSteady: number[] = [];
      for (let i = 0; i < 3; i++) scheduledSteady.push((await planning.run())!.durationMs);
      figure('with schedules: planning pass, next, median of 3', median(scheduledSteady), 'ms', {
        max: 1000,
      });
      ratio('  ratio to the pass without schedules', median(scheduledSteady), median(steady), 'without');
      const scheduledPlans: number[] = [];
      for (let i = 0; i < 3; i++) {
        const snapshot = await loadSnapshot(database.reader, new Date());
        scheduledPlans.push(await timeIt(() => plan(snapshot, Date.now(), planning.settings)));
      }
      figure('with schedules: plan(), the pure function (median of 3)', median(scheduledPlans), 'ms');
      ratio('  ratio to plan() without schedules', median(scheduledPlans), median(plans), 'without');

      // The plan route over real HTTP.
      const { token } = await new TokenRepository(database.db).create({ name: 'bench', scope: 'read' });
      const url = await app.listen({ port: 0, host: '127.0.0.1' });
      const get = async () => {
        const started = performance.now();
        const res = await fetch(`${url}/api/v1/cleanup/plan?within=24h`, {
          headers: { authorization: `Bearer ${token}` },
        });
        const body = (await res.json()) as { items: unknown[] };
        if (res.status !== 200 || body.items.length !== 50) throw new Error(`plan failed: ${res.status}`);
        return performance.now() - started;
      };
      for (let i = 0; i < 10; i++) await get();
      const times: number[] = [];
      for (let i = 0; i < 200; i++) times.push(await get());
      figure('GET /api/v1/cleanup/plan?within=24h first page, median', median(times), 'ms', { max: 100 });
      figure('GET /api/v1/cleanup/plan?within=24h first page, p99', percentile(times, 99), 'ms', {
        max: 100,
      });
    } finally {
      await app.close();
    }
  } finally {
    await database.close().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  }
}

await run();
