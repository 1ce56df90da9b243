/**
 * The initial schema: the record of environments (docs/design.md#server-and-cleanup), including the tables the cleanup
 * planner and executor will use (policies on environments, ownership and role on resources,
 * cleanup_jobs with leases, audit_log). Portable SQL only: it runs on SQLite and PostgreSQL.
 */
import { sql, type Kysely } from 'kysely';

// Migrations see the database as it was when they were written, not as the current types say.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('projects')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('api_tokens')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('token_prefix', 'text', (c) => c.notNull())
    .addColumn('scope', 'text', (c) => c.notNull())
    .addColumn('project', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('last_used_at', 'text')
    .addColumn('revoked_at', 'text')
    .execute();
  // A name identifies one live token (`tend server token revoke ci`); revoked names can be reused.
  await db.schema
    .createIndex('api_tokens_live_name')
    .on('api_tokens')
    .column('name')
    .unique()
    .where(sql.ref('revoked_at'), 'is', null)
    .execute();

  await db.schema
    .createTable('environments')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('project', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('namespace', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('owner', 'text')
    .addColumn('protected', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('protected_by', 'text')
    .addColumn('protected_at', 'text')
    .addColumn('keep_alive_until', 'text')
    .addColumn('keep_alive_by', 'text')
    .addColumn('policy_after_inactivity', 'text')
    .addColumn('policy_action', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('cleaned_at', 'text')
    .addColumn('last_activity_at', 'text', (c) => c.notNull())
    .addColumn('last_activity_session', 'text')
    .addColumn('last_activity_command', 'text')
    .addColumn('last_activity_user', 'text')
    .addColumn('last_activity_type', 'text')
    .addUniqueConstraint('environments_identity', ['project', 'name', 'namespace'])
    .execute();
  // The list is ordered by last activity (newest first) with the id as tie-breaker; keyset pages.
  await db.schema
    .createIndex('environments_by_activity')
    .on('environments')
    .columns(['last_activity_at', 'id'])
    .execute();
  await db.schema
    .createIndex('environments_by_project_activity')
    .on('environments')
    .columns(['project', 'last_activity_at', 'id'])
    .execute();
  await db.schema
    .createIndex('environments_by_state_activity')
    .on('environments')
    .columns(['state', 'last_activity_at', 'id'])
    .execute();

  await db.schema
    .createTable('sessions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('environment_id', 'text', (c) => c.references('environments.id'))
    .addColumn('project', 'text')
    .addColumn('environment', 'text')
    .addColumn('namespace', 'text')
    .addColumn('command', 'text')
    .addColumn('args', 'text')
    .addColumn('user_name', 'text')
    .addColumn('host_id', 'text')
    .addColumn('cli_version', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('started_at', 'text')
    .addColumn('ended_at', 'text')
    .addColumn('last_heartbeat_at', 'text')
    .addColumn('last_event_at', 'text', (c) => c.notNull())
    .addColumn('error_code', 'text')
    .addColumn('error_message', 'text')
    .execute();
  await db.schema
    .createIndex('sessions_by_environment')
    .on('sessions')
    .columns(['environment_id', 'last_event_at'])
    .execute();

  await db.schema
    .createTable('events')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('session_id', 'text', (c) => c.notNull())
    .addColumn('client_timestamp', 'text', (c) => c.notNull())
    .addColumn('received_at', 'text', (c) => c.notNull())
    .addColumn('environment_id', 'text')
    .addColumn('payload', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('events_by_received').on('events').column('received_at').execute();
  await db.schema
    .createIndex('events_by_environment')
    .on('events')
    .columns(['environment_id', 'received_at'])
    .execute();

  await db.schema
    .createTable('resources')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('environment_id', 'text', (c) => c.notNull().references('environments.id'))
    .addColumn('plugin', 'text', (c) => c.notNull())
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('target_kind', 'text', (c) => c.notNull())
    .addColumn('target', 'text', (c) => c.notNull())
    .addColumn('target_key', 'text', (c) => c.notNull())
    .addColumn('namespace_name', 'text', (c) => c.notNull())
    .addColumn('namespace_uid', 'text')
    .addColumn('generation', 'integer', (c) => c.notNull())
    .addColumn('role', 'text', (c) => c.notNull())
    .addColumn('ownership', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('last_cause', 'text', (c) => c.notNull())
    .addColumn('detail', 'text')
    .addColumn('first_seen_at', 'text', (c) => c.notNull())
    .addColumn('last_seen_at', 'text', (c) => c.notNull())
    .addColumn('last_activity_at', 'text')
    .addColumn('missing_since', 'text')
    .addUniqueConstraint('resources_generation', [
      'environment_id',
      'plugin',
      'target_key',
      'namespace_name',
      'generation',
    ])
    .execute();
  // Finding a namespace across environments (the cleanup executor works per target and name).
  await db.schema
    .createIndex('resources_by_target')
    .on('resources')
    .columns(['target_key', 'namespace_name'])
    .execute();

  await db.schema
    .createTable('cleanup_jobs')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('environment_id', 'text', (c) => c.notNull().references('environments.id'))
    .addColumn('resource_id', 'text', (c) => c.references('resources.id'))
    .addColumn('action', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('reason', 'text', (c) => c.notNull())
    .addColumn('planned_at', 'text', (c) => c.notNull())
    .addColumn('not_before', 'text')
    .addColumn('lease_owner', 'text')
    .addColumn('lease_expires_at', 'text')
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('started_at', 'text')
    .addColumn('finished_at', 'text')
    .addColumn('result', 'text')
    .execute();
  await db.schema
    .createIndex('cleanup_jobs_by_state')
    .on('cleanup_jobs')
    .columns(['state', 'lease_expires_at'])
    .execute();
  // At most one open job per environment: replicas planning at once cannot both enqueue one.
  await db.schema
    .createIndex('cleanup_jobs_open_per_environment')
    .on('cleanup_jobs')
    .column('environment_id')
    .unique()
    .where(sql.ref('state'), 'in', ['planned', 'executing'])
    .execute();

  await db.schema
    .createTable('audit_log')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('at', 'text', (c) => c.notNull())
    .addColumn('actor', 'text', (c) => c.notNull())
    .addColumn('action', 'text', (c) => c.notNull())
    .addColumn('environment_id', 'text')
    .addColumn('detail', 'text')
    .execute();
  await db.schema
    .createIndex('audit_log_by_environment')
    .on('audit_log')
    .columns(['environment_id', 'id'])
    .execute();

  await db.schema
    .createTable('dashboard_sessions')
    .addColumn('id_hash', 'text', (c) => c.primaryKey())
    .addColumn('token_id', 'text', (c) => c.notNull().references('api_tokens.id'))
    .addColumn('csrf_token', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .execute();
}
