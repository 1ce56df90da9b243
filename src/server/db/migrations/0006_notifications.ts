/**
 * Warnings, webhooks and pull-request environments: the warning and pull-request parts of an
 * environment's policy and its pull request (with what GitHub last said of it), the warning time
 * of each stored decision, the webhooks with their signing secrets, their persisted deliveries
 * (retried with backoff, across restarts and replicas), the GitHub deliveries seen (replays are
 * refused), and how far the notifier has read the audit log. Portable SQL only.
 */
import type { Kysely } from 'kysely';

// Migrations see the database as it was when they were written, not as the current types say.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  for (const [name, type] of [
    ['policy_warn_before', 'text'],
    ['policy_after_close', 'text'],
    ['pull_request_repository', 'text'],
    ['pull_request_number', 'integer'],
    // `open`, `closed` or `merged`, as the last GitHub delivery said; null: never heard of.
    ['pull_request_state', 'text'],
    // Server time of the delivery that closed it (null while open).
    ['pull_request_closed_at', 'text'],
  ] as const) {
    await db.schema.alterTable('environments').addColumn(name, type).execute();
  }
  await db.schema
    .createIndex('environments_by_pull_request')
    .on('environments')
    .columns(['pull_request_repository', 'pull_request_number'])
    .execute();

  // When the decision's warning period starts (due time - warnBefore); null: no warning.
  await db.schema.alterTable('cleanup_decisions').addColumn('warn_at', 'text').execute();
  await db.schema
    .createIndex('cleanup_decisions_by_warn')
    .on('cleanup_decisions')
    .column('warn_at')
    .execute();

  await db.schema
    .createTable('webhooks')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('url', 'text', (c) => c.notNull())
    // JSON array of event names (`cleanup.warning`, `cleanup.done`).
    .addColumn('events', 'text', (c) => c.notNull())
    .addColumn('format', 'text', (c) => c.notNull())
    .addColumn('project', 'text')
    // The signing key: the server needs it to sign, so it cannot be stored hashed; never shown again.
    .addColumn('secret', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('created_by', 'text', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('webhook_deliveries')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('webhook_id', 'text', (c) => c.notNull())
    .addColumn('event', 'text', (c) => c.notNull())
    // Once per webhook, event and key: environment + due time for a warning, job id for done.
    .addColumn('dedupe_key', 'text', (c) => c.notNull())
    .addColumn('project', 'text')
    .addColumn('environment_id', 'text')
    .addColumn('body', 'text', (c) => c.notNull())
    // pending → delivered | failed (attempts exhausted)
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull())
    .addColumn('next_attempt_at', 'text', (c) => c.notNull())
    .addColumn('lease_owner', 'text')
    .addColumn('lease_expires_at', 'text')
    .addColumn('last_status', 'integer')
    .addColumn('last_error', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('finished_at', 'text')
    .execute();
  await db.schema
    .createIndex('webhook_deliveries_once')
    .on('webhook_deliveries')
    .columns(['webhook_id', 'event', 'dedupe_key'])
    .unique()
    .execute();
  await db.schema
    .createIndex('webhook_deliveries_due')
    .on('webhook_deliveries')
    .columns(['state', 'next_attempt_at'])
    .execute();

  // GitHub deliveries accepted: a delivery id or a signature seen before is a replay.
  await db.schema
    .createTable('github_deliveries')
    .addColumn('signature', 'text', (c) => c.primaryKey())
    .addColumn('delivery_id', 'text', (c) => c.notNull().unique())
    .addColumn('event', 'text', (c) => c.notNull())
    .addColumn('action', 'text')
    .addColumn('repository', 'text')
    .addColumn('number', 'integer')
    .addColumn('environments', 'integer', (c) => c.notNull())
    .addColumn('received_at', 'text', (c) => c.notNull())
    .execute();

  // How far the notifier has turned `cleanup-done` audit entries into deliveries.
  await db.schema
    .createTable('notification_cursor')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('audit_after', 'text', (c) => c.notNull())
    .execute();
}
