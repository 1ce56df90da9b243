/**
 * Which database a Kysely instance (or transaction) talks to, for the few places where SQLite
 * and PostgreSQL need different SQL (row locks, the planner's change log).
 */
import { SqliteAdapter, type Kysely } from 'kysely';

export type DialectName = 'sqlite' | 'postgres';

// Any database schema: migrations see the tables as they were, not as the current types say.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function isSqlite(db: Kysely<any>): boolean {
  return db.getExecutor().adapter instanceof SqliteAdapter;
}
