/**
 * The server's SQLite on node:sqlite (src/server/db/sqlite.ts): Kysely's SqliteDriver drives a
 * node:sqlite connection through the statement cache (rows, `run` counts and ids, streaming,
 * errors as SQLite words them), and on every Node line tend is tested on (scripts/node-lines.txt)
 * a server database opened, written and read — the writer thread, the checkpointer thread and
 * the reader connection each loading node:sqlite — prints nothing, where Node 22 warns on stderr
 * that node:sqlite is experimental whenever a thread loads it.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Kysely, sql, type Generated } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { cachingStatements, openSqlite, TurnTakingSqliteDialect } from '../../src/server/db/sqlite.js';
import { repoRoot } from '../helpers/project.js';

const scratch = mkdtempSync(path.join(os.tmpdir(), 'tend-node-sqlite-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

interface Things {
  things: { id: Generated<number>; name: string; size: number | null };
}

describe('node:sqlite behind Kysely', () => {
  it('returns rows, counts changes and inserted ids, streams, and fails as SQLite says', async () => {
    const db = new Kysely<Things>({
      dialect: new TurnTakingSqliteDialect({
        database: cachingStatements(openSqlite(path.join(scratch, 'kysely.db'))),
      }),
    });
    await sql`create table things (id integer primary key, name text not null unique, size integer)`.execute(
      db,
    );
    const inserted = await db
      .insertInto('things')
      .values([
        { name: 'a', size: 1 },
        { name: 'b', size: null },
      ])
      .executeTakeFirstOrThrow();
    expect(inserted.numInsertedOrUpdatedRows).toBe(2n);
    expect(inserted.insertId).toBe(2n);
    // The same statement again, from the cache, with other parameters.
    await db.insertInto('things').values({ name: 'c', size: 3 }).execute();
    const updated = await db
      .updateTable('things')
      .set({ size: 9 })
      .where('size', 'is not', null)
      .executeTakeFirst();
    expect(updated.numUpdatedRows).toBe(2n);
    const returned = await db
      .insertInto('things')
      .values({ name: 'd', size: 4 })
      .returning(['id', 'name'])
      .execute();
    expect(returned).toEqual([{ id: 4, name: 'd' }]);
    expect(
      await db
        .selectFrom('things')
        .select(['name', 'size'])
        .where('name', 'in', ['a', 'b'])
        .orderBy('name')
        .execute(),
    ).toEqual([
      { name: 'a', size: 9 },
      { name: 'b', size: null },
    ]);
    const streamed: string[] = [];
    for await (const row of db.selectFrom('things').select('name').orderBy('id').stream())
      streamed.push(row.name);
    expect(streamed).toEqual(['a', 'b', 'c', 'd']);
    await expect(db.insertInto('things').values({ name: 'a', size: 1 }).execute()).rejects.toThrow(
      /UNIQUE constraint failed: things\.name/,
    );
    // A failed transaction leaves nothing behind.
    await expect(
      db.transaction().execute(async (trx) => {
        await trx.insertInto('things').values({ name: 'e', size: 5 }).execute();
        await trx.insertInto('things').values({ name: 'a', size: 1 }).execute();
      }),
    ).rejects.toThrow(/UNIQUE/);
    expect(await db.selectFrom('things').select('name').where('name', '=', 'e').execute()).toEqual([]);
    await db.destroy();
  });
});

/** The Node lines of scripts/node-lines.txt: [line, directory of its node]. */
function nodeLines(): [string, string][] {
  return readFileSync(path.join(repoRoot, 'scripts', 'node-lines.txt'), 'utf8')
    .split('\n')
    .filter((line) => !/^\s*(#|$)/.test(line))
    .map((line) => {
      const name = line.split(/\s+/)[0]!;
      const bin = execFileSync('bash', [path.join(repoRoot, 'scripts', 'node-line.sh'), 'bin', name], {
        encoding: 'utf8',
      }).trim();
      return [name, bin];
    });
}

const serverScript = `
import { migrateToLatest, openDatabase } from ${JSON.stringify(path.join(repoRoot, 'src/server/db/database.ts'))};
const database = await openDatabase({ sqliteFile: process.argv[2], checkpointIntervalMs: 10 });
await migrateToLatest(database);
await database.db.insertInto('projects').values({ name: 'p', created_at: new Date().toISOString() }).execute();
const rows = await database.reader.selectFrom('projects').select('name').execute();
await database.close();
console.log(JSON.stringify(rows));
`;

describe('node:sqlite on each Node line', () => {
  it('opens, writes and reads a server database without a word on stderr', () => {
    const script = path.join(scratch, 'server-db.mts');
    writeFileSync(script, serverScript);
    let warned = 0;
    for (const [line, bin] of nodeLines()) {
      const node = path.join(bin, 'node');
      const run = spawnSync(node, ['--import', 'tsx', script, path.join(scratch, `line-${line}.db`)], {
        cwd: repoRoot,
        encoding: 'utf8',
      });
      expect(run.status, `Node ${line}: ${run.stderr}`).toBe(0);
      expect(JSON.parse(run.stdout), `Node ${line}`).toEqual([{ name: 'p' }]);
      expect(run.stderr, `Node ${line}`).toBe('');
      // What it kept quiet: the warning node:sqlite prints when loaded as it is.
      const bare = spawnSync(node, ['-e', "require('node:sqlite')"], { encoding: 'utf8' });
      if (/ExperimentalWarning: SQLite is an experimental feature/.test(bare.stderr)) warned++;
    }
    // Node 22 (listed) warns: the test above would have seen the warning.
    expect(warned).toBeGreaterThan(0);
  }, 120_000);
});
