/**
 * The order of a record's changes (docs/events.md#the-order-of-events): the host sequence of the
 * last event applied to a resource, and of the last `sessionStarted` that set an environment's
 * policy. A late event of the same counter with a lower number changes neither. Null: none known
 * (events of older clients, rows written before). Portable SQL only.
 */
import type { Kysely } from 'kysely';

// Migrations see the database as it was when they were written, not as the current types say.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('resources').addColumn('sequence_counter', 'text').execute();
  await db.schema.alterTable('resources').addColumn('sequence_number', 'bigint').execute();
  await db.schema.alterTable('environments').addColumn('started_sequence_counter', 'text').execute();
  await db.schema.alterTable('environments').addColumn('started_sequence_number', 'bigint').execute();
}
