/**
 * Pause and schedules: the working-hours schedule of an environment's cleanup policy (JSON text,
 * `{sleepAt, wakeAt, weekdays, timeZone}`), and when and why an environment was paused
 * (`environments.state` gains the value `paused`: its workloads scaled to 0 by a cleanup job).
 * Portable SQL only: it runs on SQLite and PostgreSQL.
 */
import type { Kysely } from 'kysely';

// Migrations see the database as it was when they were written, not as the current types say.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('environments').addColumn('policy_schedule', 'text').execute();
  await db.schema.alterTable('environments').addColumn('paused_at', 'text').execute();
  /** `schedule` (asleep outside its hours) or `inactivity` (the policy's wait). */
  await db.schema.alterTable('environments').addColumn('paused_by', 'text').execute();
  /** The rule a job follows (`inactivity`, `schedule`; null: clean up now or before this). */
  await db.schema.alterTable('cleanup_jobs').addColumn('rule', 'text').execute();
}
