/**
 * What the cleanup safety checks record: how the last planning pass ended (`ok`, `failed`, or
 * `skipped` — a clock step, a suspect input — with why), and every rule of an enforced policy
 * (its `afterClose` and its schedule beside the wait and the action), so that a policy that adds
 * or tightens a rule runs as a dry-run again until enforced. Portable SQL only.
 */
import type { Kysely } from 'kysely';

// Migrations see the database as it was when they were written, not as the current types say.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('cleanup_control').addColumn('last_pass_outcome', 'text').execute();
  await db.schema.alterTable('cleanup_control').addColumn('last_pass_note', 'text').execute();
  await db.schema.alterTable('cleanup_policies').addColumn('after_close_ms', 'bigint').execute();
  await db.schema.alterTable('cleanup_policies').addColumn('schedule', 'text').execute();
}
