/**
 * Inventory items are plugin-neutral: executors report each resource's marks as fields (managed
 * by tend, project, environment, role, adopted, last activity — the columns that already held
 * them), no longer a Kubernetes namespace's labels and annotations, so their JSON copies go and
 * the plugin's own `detail` (JSON) takes their place; the phase is the item's state, `active` or
 * `terminating`. An inventory held back as suspect (it would mark too many resources missing at
 * once) is kept on the inventory's row: why, since when, and what it would have done.
 * Portable SQL only.
 */
import { sql, type Kysely } from 'kysely';

// Migrations see the database as it was when they were written, not as the current types say.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('cleanup_inventory_items').dropColumn('labels').execute();
  await db.schema.alterTable('cleanup_inventory_items').dropColumn('annotations').execute();
  await db.schema.alterTable('cleanup_inventory_items').addColumn('detail', 'text').execute();
  await db.schema.alterTable('cleanup_inventories').addColumn('suspect_reason', 'text').execute();
  await db.schema.alterTable('cleanup_inventories').addColumn('suspect_since', 'text').execute();
  await db.schema.alterTable('cleanup_inventories').addColumn('suspect_missing', 'integer').execute();
  await db.schema.alterTable('cleanup_inventories').addColumn('suspect_recorded', 'integer').execute();
  await db
    .updateTable('cleanup_inventory_items')
    .set({ phase: sql`lower(phase)` })
    .execute();
}
