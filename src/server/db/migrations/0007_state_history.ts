/**
 * Environments by state over time, for the dashboard's chart: per UTC day, project and state,
 * how many environments the registry held in that state when the day was last recorded
 * (`EnvironmentRepository.recordStateCounts`, run by the server on start and every 10 minutes).
 *
 * The 30 days before this migration are filled in as an estimate (`estimated = 1`), so the chart
 * has a history from the start: an environment counts from its first-seen day, as `cleaned` from
 * its cleaned time if it is cleaned now, else as `active` (earlier cleaned spells are not known).
 * Portable SQL only: it runs on SQLite and PostgreSQL.
 */
import type { Kysely } from 'kysely';

const dayMs = 86_400_000;
export const estimatedDays = 30;

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
    .addColumn('estimated', 'integer', (c) => c.notNull().defaultTo(0))
    .addPrimaryKeyConstraint('environment_state_days_pk', ['day', 'project', 'state'])
    .execute();

  const now = new Date();
  const environments = (await db
    .selectFrom('environments')
    .select(['project', 'state', 'created_at', 'cleaned_at'])
    .execute()) as { project: string; state: string; created_at: string; cleaned_at: string | null }[];
  const counts = new Map<string, { day: string; project: string; state: string; count: number }>();
  const today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  for (let i = estimatedDays; i >= 1; i--) {
    const start = today - i * dayMs;
    const day = new Date(start).toISOString().slice(0, 10);
    const end = new Date(start + dayMs).toISOString();
    for (const e of environments) {
      if (e.created_at >= end) continue;
      const state =
        e.state === 'cleaned' && e.cleaned_at !== null && e.cleaned_at < end ? 'cleaned' : 'active';
      const key = `${day}\u0000${e.project}\u0000${state}`;
      const row = counts.get(key) ?? { day, project: e.project, state, count: 0 };
      row.count++;
      counts.set(key, row);
    }
  }
  const rows = [...counts.values()].map((r) => ({ ...r, recorded_at: now.toISOString(), estimated: 1 }));
  // 6 values a row: well within SQLite's parameter limit per statement.
  for (let i = 0; i < rows.length; i += 1000) {
    await db
      .insertInto('environment_state_days')
      .values(rows.slice(i, i + 1000))
      .execute();
  }
}
