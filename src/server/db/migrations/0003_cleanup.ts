/**
 * Automatic cleanup: executors and the targets they serve, the last inventory of each target
 * and its namespaces (tend-labelled but unrecorded ones flagged), enforced policies, per-project
 * circuit breakers, the global control row (halt switch, planning lease), the decisions of the
 * last planning pass (what `GET /cleanup/plan` pages through), and what a job needs to be
 * executed and re-checked. Portable SQL only: it runs on SQLite and PostgreSQL.
 */
import { sql, type Kysely } from 'kysely';

// Migrations see the database as it was when they were written, not as the current types say.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  // `agent` tokens may be bound to cluster ids (JSON array; null: any target).
  await db.schema.alterTable('api_tokens').addColumn('clusters', 'text').execute();

  await db.schema
    .createTable('cleanup_executors')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('version', 'text', (c) => c.notNull())
    .addColumn('token_name', 'text')
    .addColumn('first_seen_at', 'text', (c) => c.notNull())
    .addColumn('last_seen_at', 'text', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('cleanup_executor_targets')
    .addColumn('executor_id', 'text', (c) => c.notNull().references('cleanup_executors.id'))
    .addColumn('target_key', 'text', (c) => c.notNull())
    .addColumn('plugin', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull())
    .addColumn('last_seen_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('cleanup_executor_targets_pk', ['executor_id', 'target_key'])
    .execute();
  await db.schema
    .createIndex('cleanup_executor_targets_by_target')
    .on('cleanup_executor_targets')
    .columns(['target_key', 'last_seen_at'])
    .execute();

  // The last inventory of each target; last_complete_at is when a complete one last arrived.
  await db.schema
    .createTable('cleanup_inventories')
    .addColumn('target_key', 'text', (c) => c.primaryKey())
    .addColumn('plugin', 'text', (c) => c.notNull())
    .addColumn('executor_id', 'text', (c) => c.notNull())
    .addColumn('received_at', 'text', (c) => c.notNull())
    .addColumn('complete', 'integer', (c) => c.notNull())
    .addColumn('error', 'text')
    .addColumn('item_count', 'integer', (c) => c.notNull())
    .addColumn('last_complete_at', 'text')
    .execute();

  // The namespaces of the inventories, with what the planner needs as columns (no JSON parsing
  // in a planning pass). `recorded` = 0: a tend-labelled namespace no recorded resource matches.
  await db.schema
    .createTable('cleanup_inventory_items')
    .addColumn('target_key', 'text', (c) => c.notNull())
    .addColumn('namespace_name', 'text', (c) => c.notNull())
    .addColumn('uid', 'text', (c) => c.notNull())
    .addColumn('resource_version', 'text', (c) => c.notNull())
    .addColumn('phase', 'text', (c) => c.notNull())
    .addColumn('managed_by_tend', 'integer', (c) => c.notNull())
    .addColumn('project', 'text')
    .addColumn('environment', 'text')
    .addColumn('role', 'text')
    .addColumn('adopted', 'integer', (c) => c.notNull())
    .addColumn('last_activity_at', 'text')
    .addColumn('labels', 'text', (c) => c.notNull())
    .addColumn('annotations', 'text', (c) => c.notNull())
    .addColumn('recorded', 'integer', (c) => c.notNull())
    .addColumn('environment_id', 'text')
    .addColumn('first_seen_at', 'text', (c) => c.notNull())
    .addColumn('seen_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('cleanup_inventory_items_pk', ['target_key', 'namespace_name'])
    .execute();
  await db.schema
    .createIndex('cleanup_inventory_items_unrecorded')
    .on('cleanup_inventory_items')
    .columns(['recorded', 'target_key'])
    .execute();

  // A policy an administrator enforced, per project and environment name. A policy seen on an
  // environment is enforced only if it is not stricter than this (shorter wait, or delete where
  // pause was enforced): a new or stricter policy runs as dry-run until enforced.
  await db.schema
    .createTable('cleanup_policies')
    .addColumn('project', 'text', (c) => c.notNull())
    .addColumn('environment', 'text', (c) => c.notNull())
    .addColumn('after_inactivity_ms', 'integer', (c) => c.notNull())
    .addColumn('action', 'text', (c) => c.notNull())
    .addColumn('enforced_at', 'text', (c) => c.notNull())
    .addColumn('enforced_by', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('cleanup_policies_pk', ['project', 'environment'])
    .execute();

  // An open breaker per project (a row); an administrator's reset removes it.
  await db.schema
    .createTable('cleanup_breakers')
    .addColumn('project', 'text', (c) => c.primaryKey())
    .addColumn('opened_at', 'text', (c) => c.notNull())
    .addColumn('due_count', 'integer', (c) => c.notNull())
    .addColumn('active_count', 'integer', (c) => c.notNull())
    .execute();

  // One row: the halt switch, and the lease that lets one replica at a time run a planning pass.
  await db.schema
    .createTable('cleanup_control')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('halted', 'integer', (c) => c.notNull())
    .addColumn('halted_at', 'text')
    .addColumn('halted_by', 'text')
    .addColumn('plan_lease_owner', 'text')
    .addColumn('plan_lease_expires_at', 'text')
    .addColumn('pass_seq', 'integer', (c) => c.notNull())
    .addColumn('last_pass_at', 'text')
    .addColumn('last_pass_ms', 'integer')
    .execute();
  await db.insertInto('cleanup_control').values({ id: 'global', halted: 0, pass_seq: 0 }).execute();

  // The decisions of the last planning pass, one per resource: what the plan route pages through.
  await db.schema
    .createTable('cleanup_decisions')
    .addColumn('resource_id', 'text', (c) => c.primaryKey())
    .addColumn('environment_id', 'text', (c) => c.notNull())
    .addColumn('project', 'text', (c) => c.notNull())
    .addColumn('environment', 'text', (c) => c.notNull())
    .addColumn('namespace_name', 'text', (c) => c.notNull())
    .addColumn('target_key', 'text', (c) => c.notNull())
    .addColumn('plugin', 'text', (c) => c.notNull())
    .addColumn('action', 'text', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('reason_code', 'text')
    .addColumn('due_at', 'text', (c) => c.notNull())
    .addColumn('last_activity_at', 'text', (c) => c.notNull())
    .addColumn('sentence', 'text', (c) => c.notNull())
    .addColumn('job_id', 'text')
    .addColumn('decided_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('cleanup_decisions_by_due')
    .on('cleanup_decisions')
    .columns(['due_at', 'resource_id'])
    .execute();
  await db.schema
    .createIndex('cleanup_decisions_by_project_due')
    .on('cleanup_decisions')
    .columns(['project', 'due_at', 'resource_id'])
    .execute();
  await db.schema
    .createIndex('cleanup_decisions_by_environment')
    .on('cleanup_decisions')
    .column('environment_id')
    .execute();

  // What an executor needs to act and re-check, copied when the job is planned.
  for (const [name, type] of [
    ['project', 'text'],
    ['environment', 'text'],
    ['plugin', 'text'],
    ['target_key', 'text'],
    ['namespace_name', 'text'],
    ['namespace_uid', 'text'],
    ['expected_last_activity_at', 'text'],
    ['trigger', 'text'],
    ['actor', 'text'],
    ['outcome_message', 'text'],
  ] as const) {
    await db.schema.alterTable('cleanup_jobs').addColumn(name, type).execute();
  }
  await db.schema
    .alterTable('cleanup_jobs')
    .addColumn('dry_run', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  // One open job per resource (an environment can have a namespace on each of several targets).
  await db.schema.dropIndex('cleanup_jobs_open_per_environment').execute();
  await db.schema
    .createIndex('cleanup_jobs_open_per_resource')
    .on('cleanup_jobs')
    .column('resource_id')
    .unique()
    .where(sql.ref('state'), 'in', ['planned', 'executing'])
    .execute();
  await db.schema
    .createIndex('cleanup_jobs_by_target')
    .on('cleanup_jobs')
    .columns(['target_key', 'state', 'not_before'])
    .execute();
  await db.schema
    .createIndex('cleanup_jobs_by_planned')
    .on('cleanup_jobs')
    .columns(['planned_at', 'id'])
    .execute();

  // Running sessions keep their environment active: the planner reads the recent ones.
  await db.schema
    .createIndex('sessions_by_status_event')
    .on('sessions')
    .columns(['status', 'last_event_at'])
    .execute();
}
