/**
 * What namespaces requested while they ran, for the savings report: the inventory item keeps
 * what its last inventory saw (the CPU and memory requests of the namespace's running pods, and
 * how many; null when the executor could not tell), and `namespace_requests` keeps each change of
 * them while pods ran, per namespace uid — so a deletion or a pause is valued at what the
 * namespace requested before it, even after the namespace is gone. Portable SQL only.
 */
import type { Kysely } from 'kysely';

// Migrations see the database as it was when they were written, not as the current types say.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('cleanup_inventory_items').addColumn('cpu_millicores', 'integer').execute();
  await db.schema.alterTable('cleanup_inventory_items').addColumn('memory_bytes', 'bigint').execute();
  await db.schema.alterTable('cleanup_inventory_items').addColumn('pods', 'integer').execute();
  await db.schema
    .createTable('namespace_requests')
    .addColumn('target_key', 'text', (c) => c.notNull())
    .addColumn('namespace_name', 'text', (c) => c.notNull())
    .addColumn('uid', 'text', (c) => c.notNull())
    .addColumn('observed_at', 'text', (c) => c.notNull())
    .addColumn('cpu_millicores', 'integer', (c) => c.notNull())
    .addColumn('memory_bytes', 'bigint', (c) => c.notNull())
    .addColumn('pods', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('namespace_requests_pk', ['target_key', 'namespace_name', 'uid', 'observed_at'])
    .execute();
  await db.schema
    .createIndex('cleanup_jobs_finished')
    .on('cleanup_jobs')
    .columns(['result', 'finished_at'])
    .execute();
}
