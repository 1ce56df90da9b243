/**
 * Environments by state over time, for the dashboard's chart: per UTC day, project and state,
 * how many environments the registry held in that state when the day was last recorded
 * (`EnvironmentRepository.recordStateCounts`, run by the server on start and every 10 minutes).
 * Portable SQL only: it runs on SQLite and PostgreSQL.
 */
import type { Kysely } from 'kysely';

// Migrations see the database as it was when they were written, not as the current types say.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('environment_state_days')
    .addColumn('day', 'text', (c) => c.notNull())
    .addColumn('project', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('count', 'integer', (c) => c.notNull())
    .addColumn('recorded_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('environment_state_days_pk', ['day', 'project', 'state'])
    .execute();
}
