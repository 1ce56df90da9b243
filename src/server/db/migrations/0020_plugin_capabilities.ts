/**
 * Restore, pause and bound agent tokens for every plugin: the actions an executor says it runs on
 * each target it serves (JSON array; null: an executor of an earlier version, which runs every
 * action but restore), and the executor targets (`<kind>/<id>`) an `agent` token may be bound to
 * beyond clusters. Portable SQL only.
 */
import type { Kysely } from 'kysely';

// Migrations see the database as it was when they were written, not as the current types say.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('cleanup_executor_targets').addColumn('actions', 'text').execute();
  await db.schema.alterTable('api_tokens').addColumn('targets', 'text').execute();
}
