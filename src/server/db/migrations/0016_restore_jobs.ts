/**
 * Restore jobs (the dashboard's Restore button): a cleanup job with action `restore` names the
 * archive it re-creates, so the server hands the executor exactly that archive and marks exactly
 * it restored. Portable SQL only.
 */
import type { Kysely } from 'kysely';

// Migrations see the database as it was when they were written, not as the current types say.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('cleanup_jobs').addColumn('archive_id', 'text').execute();
}
