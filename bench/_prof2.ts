/**
 * The cleanup planner at scale (issue 11), on SQLite: 100,000 environments with 200,000 recorded
 * namespaces (an app and a build namespace each), all with an 8h policy, enforced, a live
 * executor and a complete inventory listing every namespace. Measures:
 * - one planning pass (`CleanupService.planningPass`: lease, snapshot, plan, jobs, decisions
 *   stored): the first pass, which stores all 200,000 decisions, and the next, which stores only
 *   what changed (target < 1 s); and the snapshot load and the pure `plan` on their own;
 * - `GET /api/v1/cleanup/plan?within=24h`, the first page of 50, over real HTTP on 127.0.0.1
 *   (target < 100 ms).
 * Activity is spread over the last 10 hours, so a fifth of each project's environments are due
 * (the cap of 10 per pass holds the rest: `blocked: cap-reached`), the rest scheduled.
 */
import BetterSqlite3 from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { monotonicFactory } from 'ulidx';
import { buildServer } from '../dist/src/server/app.js';
import { plan } from '../dist/src/server/cleanup/planner.js';
import { loadSnapshot } from '../dist/src/server/cleanup/snapshot.js';
import { migrateToLatest, openDatabase, type ServerDatabase } from '../dist/src/server/db/database.js';
import { TokenRepository } from '../dist/src/server/db/repositories/tokens.js';
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
        phase: 'Active',
        managed_by_tend: 1,
        project,
        environment: name,
        role: null,
        adopted: 0,
        last_activity_at: activity,
        labels: '{"app.kubernetes.io/managed-by":"tend"}',
        annotations: '{}',
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
      const service = app.cleanup;
      const first = await service.planningPass();
      if (!first) throw new Error('the planning lease was not free');
      console.log(
        `  first pass: ${first.decisions.toLocaleString('en')} decisions, ${first.planned} jobs planned`,
      );
      figure('planning pass, first (reads all, stores every decision)', first.durationMs, 'ms');
      const { Session } = await import('node:inspector/promises');
      const session = new Session();
      session.connect();
      await session.post('Profiler.enable');
      const touchAt = async (k: number) => {
        const at = new Date().toISOString();
        const envIds = await database.db.selectFrom('environments').select('id').orderBy('id').offset((k * 1000) % environments).limit(1000).execute();
        await database.db.updateTable('environments').set({ last_activity_at: at, updated_at: at }).where('id', 'in', envIds.map((e) => e.id)).execute();
      };
      const mode = process.env.PROF ?? 'plan';
      if (mode === 'plan') {
        const snapshot = await loadSnapshot(database.reader, new Date());
        for (let i = 0; i < 2; i++) plan(snapshot, Date.now(), service.settings);
        await session.post('Profiler.start');
        const t: number[] = [];
        for (let i = 0; i < 5; i++) t.push(await timeIt(() => plan(snapshot, Date.now(), service.settings)));
        console.log('plan', t);
      } else {
        await touchAt(0); await service.planningPass();
        await session.post('Profiler.start');
        const t: unknown[] = [];
        for (let i = 1; i < 5; i++) { await touchAt(i); const p = await service.planningPass(); t.push([p!.durationMs, p!.phasesMs]); }
        console.log(JSON.stringify(t));
      }
      const { profile } = await session.post('Profiler.stop');
      (await import('node:fs')).writeFileSync('/tmp/plan2.cpuprofile', JSON.stringify(profile));
    } finally {
      await app.close();
    }
  } finally {
    await database.close().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  }
}

await run();
