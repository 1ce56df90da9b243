/**
 * What the server's wall clock must not contradict. What a target's clock said of it: each
 * inventory carries the target's time (the Kubernetes API server's `Date`), and the server keeps
 * how far its own clock was from it when the inventory arrived (null: no time attested). And the
 * planning clock's last reading per boot of the host — wall and monotonic clock (milliseconds)
 * and the forward steps compensated — so that a restart still sees a step. And when a target
 * created each namespace it lists, against the window of the claim that made the namespace owned:
 * the claiming session's start (its client's clock) and the server's receipt of the claim.
 * Portable SQL only.
 */
import type { Kysely } from 'kysely';

// Migrations see the database as it was when they were written, not as the current types say.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('cleanup_inventories').addColumn('clock_offset_ms', 'bigint').execute();
  await db.schema.alterTable('cleanup_inventory_items').addColumn('created_at', 'text').execute();
  await db.schema.alterTable('sessions').addColumn('client_started_at', 'text').execute();
  await db.schema.alterTable('resources').addColumn('claim_started_at', 'text').execute();
  await db.schema.alterTable('resources').addColumn('claim_received_at', 'text').execute();
  await db.schema
    .createTable('cleanup_clock_readings')
    .addColumn('boot_id', 'text', (c) => c.primaryKey())
    .addColumn('wall_ms', 'bigint', (c) => c.notNull())
    .addColumn('monotonic_ms', 'bigint', (c) => c.notNull())
    .addColumn('forward_ms', 'bigint', (c) => c.notNull())
    .execute();
}
