/**
 * A schedule's decision keeps its due time in the schedule's time zone, so that every warning
 * (the per-command line, the Slack headline) names the local time people read the schedule in.
 * Null: the inactivity rule decided, or a row written before. Portable SQL only.
 */
import type { Kysely } from 'kysely';

// Migrations see the database as it was when they were written, not as the current types say.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('cleanup_decisions').addColumn('due_local', 'text').execute();
}
