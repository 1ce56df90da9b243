/**
 * The secrets `${secrets.NAME}` reads (`tend secrets set`): per project, and per environment
 * (`environment` '' for the project-wide value, which an environment's own overrides). The value
 * is sealed with AES-256-GCM under the `--secrets-key-file` key, bound to its project,
 * environment and name; the key's fingerprint is kept beside it, never the key. Portable SQL only.
 */
import type { Kysely } from 'kysely';

// Migrations see the database as it was when they were written, not as the current types say.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('project_secrets')
    .addColumn('project', 'text', (c) => c.notNull())
    .addColumn('environment', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('value_sealed', 'text', (c) => c.notNull())
    .addColumn('key_fingerprint', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('updated_by', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('project_secrets_pk', ['project', 'environment', 'name'])
    .execute();
}
