/**
 * Dashboard sessions of people signed in through the OpenID provider: like `dashboard_sessions`
 * (the cookie's id stored as its sha256, a CSRF token, an expiry) but bound to a person — the ID
 * token's subject, e-mail and groups at sign-in — instead of a token. Their roles are not stored:
 * they are looked up in the roles file on every request. Portable SQL only.
 */
import type { Kysely } from 'kysely';

// Migrations see the database as it was when they were written, not as the current types say.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('person_sessions')
    .addColumn('id_hash', 'text', (c) => c.primaryKey())
    .addColumn('issuer', 'text', (c) => c.notNull())
    .addColumn('subject', 'text', (c) => c.notNull())
    .addColumn('email', 'text')
    .addColumn('name', 'text')
    /** The groups claim at sign-in, as a JSON array of strings. */
    .addColumn('groups', 'text', (c) => c.notNull())
    .addColumn('csrf_token', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('person_sessions_expires').on('person_sessions').column('expires_at').execute();
}
