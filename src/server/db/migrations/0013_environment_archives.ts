/**
 * Undo a cleanup: the archive an executor stores of an environment right before it deletes it
 * (its objects, compressed; its Secrets encrypted with the server's archive key, or only their
 * names), kept until `expires_at` (`--archive-retention`), and whether the environment's policy
 * says `archive: false`. The key is never stored: only its fingerprint, so that an archive
 * taken with another key is told apart from a tampered one. Portable SQL only.
 */
import type { Kysely } from 'kysely';

// Migrations see the database as it was when they were written, not as the current types say.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  // 0: the policy says `archive: false`; null: archive (the default).
  await db.schema.alterTable('environments').addColumn('policy_archive', 'integer').execute();

  await db.schema
    .createTable('environment_archives')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('environment_id', 'text', (c) => c.notNull())
    .addColumn('project', 'text', (c) => c.notNull())
    .addColumn('environment', 'text', (c) => c.notNull())
    .addColumn('namespace_name', 'text', (c) => c.notNull())
    .addColumn('job_id', 'text', (c) => c.notNull())
    .addColumn('target_key', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    // The archive without the Secrets' contents: gzip-compressed JSON, base64.
    .addColumn('body', 'text', (c) => c.notNull())
    .addColumn('size_bytes', 'integer', (c) => c.notNull())
    .addColumn('objects', 'integer', (c) => c.notNull())
    .addColumn('secrets', 'integer', (c) => c.notNull())
    // The Secrets, gzip-compressed JSON sealed with AES-256-GCM (iv, tag, ciphertext; base64); null: none kept.
    .addColumn('secrets_sealed', 'text')
    // The SHA-256 fingerprint of the key that sealed them (never the key).
    .addColumn('key_fingerprint', 'text')
    // JSON array of the names of Secrets whose contents were not kept (no archive key).
    .addColumn('secrets_not_kept', 'text', (c) => c.notNull())
    .addColumn('restored_at', 'text')
    .execute();
  await db.schema
    .createIndex('environment_archives_by_environment')
    .on('environment_archives')
    .columns(['environment_id', 'created_at'])
    .execute();
  await db.schema
    .createIndex('environment_archives_by_expiry')
    .on('environment_archives')
    .column('expires_at')
    .execute();
}
