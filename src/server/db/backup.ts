/**
 * `tend server backup`: a consistent copy of the SQLite database, also while the server writes
 * to it. `VACUUM INTO` copies one read transaction's snapshot (WAL readers do not stop the
 * writer), compacted; the copy is checked, synced and then renamed into place, so the
 * destination is either a whole database or not there. PostgreSQL is backed up with its own
 * tools (pg_dump).
 */
import type { DatabaseSync } from 'node:sqlite';
import {
  chmodSync,
  closeSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  renameSync,
  rmSync,
  statSync,
} from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { TendError } from '../../errors.js';
import { openSqlite } from './sqlite.js';

export interface BackupReport {
  source: string;
  file: string;
  bytes: number;
}

export function backupSqlite(source: string, destination: string): BackupReport {
  const file = resolve(destination);
  if (existsSync(file)) {
    throw new TendError('TEND_USAGE', `${file} exists; name a new file for the backup`);
  }
  if (!existsSync(source)) {
    throw new TendError('TEND_DATABASE_NOT_FOUND', `no tend server database at ${source}`, {
      detail: {
        dataDir: dirname(source),
        hint: 'pass the --data-dir (or TEND_DATA_DIR) your tend server uses',
      },
    });
  }
  const temp = join(dirname(file), `.${basename(file)}.${process.pid}.tmp`);
  let connection: DatabaseSync | undefined;
  try {
    mkdirSync(dirname(file), { recursive: true });
    connection = openSqlite(source);
    connection.exec('pragma busy_timeout = 10000');
    connection.prepare('VACUUM INTO ?').run(temp);
    connection.close();
    connection = undefined;
    const copy = openSqlite(temp, { readOnly: true });
    try {
      const check = copy.prepare('pragma quick_check').get()?.quick_check;
      if (check !== 'ok') throw new Error(`the copy fails SQLite's quick_check: ${String(check)}`);
    } finally {
      copy.close();
    }
    // Token hashes and everything ingested: only the owner reads a copy, as the database itself.
    chmodSync(temp, 0o600);
    const fd = openSync(temp, 'r');
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(temp, file);
  } catch (error) {
    connection?.close();
    rmSync(temp, { force: true });
    if (error instanceof TendError) throw error;
    throw new TendError(
      'TEND_DATABASE',
      `backing up ${source} to ${file} failed: ${(error as Error).message}`,
      {
        cause: error,
      },
    );
  }
  return { source, file, bytes: statSync(file).size };
}
