/**
 * The change log of the cleanup planner's snapshot (SQLite): triggers append the id of every
 * environment whose planning inputs changed — its row, one of its resources, or what the
 * inventory saw of one of its namespaces — so a planning pass re-reads only those environments
 * instead of 100,000 of them. On PostgreSQL nothing is created: concurrent transactions commit
 * sequence numbers out of order, so a log read there could skip a change; its passes load the
 * whole snapshot.
 */
import { sql, type Kysely } from 'kysely';
import { isSqlite } from '../dialect.js';

/** The inventory columns the snapshot reads: an inventory that only saw the namespace again logs nothing. */
const inventoryColumns = [
  'uid',
  'managed_by_tend',
  'project',
  'environment',
  'role',
  'adopted',
  'last_activity_at',
];

// Migrations see the database as it was when they were written, not as the current types say.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  if (!isSqlite(db)) return;
  await sql`create table cleanup_changes (
    seq integer primary key autoincrement,
    environment_id text not null
  )`.execute(db);
  const log = (id: string) => `insert into cleanup_changes (environment_id) values (${id});`;
  const byItem = (row: 'new' | 'old') =>
    `insert into cleanup_changes (environment_id) select environment_id from resources ` +
    `where target_key = ${row}.target_key and namespace_name = ${row}.namespace_name;`;
  const inventoryChanged = inventoryColumns.map((c) => `old.${c} is not new.${c}`).join(' or ');
  const triggers: [string, string, string][] = [
    // Any change of an environment or a resource: columns read by the snapshot may be added later.
    ['environments_insert', 'after insert on environments', log('new.id')],
    ['environments_update', 'after update on environments', log('new.id')],
    ['environments_delete', 'after delete on environments', log('old.id')],
    ['resources_insert', 'after insert on resources', log('new.environment_id')],
    [
      'resources_update',
      'after update on resources',
      log('new.environment_id') +
        'insert into cleanup_changes (environment_id) select old.environment_id where old.environment_id is not new.environment_id;',
    ],
    ['resources_delete', 'after delete on resources', log('old.environment_id')],
    ['inventory_insert', 'after insert on cleanup_inventory_items', byItem('new')],
    [
      'inventory_update',
      `after update on cleanup_inventory_items when old.target_key is not new.target_key or old.namespace_name is not new.namespace_name or ${inventoryChanged}`,
      byItem('new') + byItem('old'),
    ],
    ['inventory_delete', 'after delete on cleanup_inventory_items', byItem('old')],
  ];
  for (const [name, when, body] of triggers) {
    await sql.raw(`create trigger cleanup_changes_${name} ${when} begin ${body} end`).execute(db);
  }
}
