/**
 * Events by type within an environment (`GET /api/v1/environments/:id/events?type=…`): plugins
 * declare types of their own, and an environment's events of one type are read without scanning
 * the others. Portable SQL only.
 */
import type { Kysely } from 'kysely';

// Migrations see the database as it was when they were written, not as the current types say.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createIndex('events_by_environment_type')
    .on('events')
    .columns(['environment_id', 'type', 'received_at'])
    .execute();
}
