/**
 * Where `tend server` keeps its SQLite database when no `--database-url` is given: one
 * directory per user, whatever the working directory — `--data-dir`, else `TEND_DATA_DIR`, else
 * `$XDG_DATA_HOME/tend`, else `~/.local/share/tend` (the XDG base directory default).
 */
import { homedir } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';

/** The file name of the SQLite database inside the data directory. */
export const databaseFileName = 'tend.db';

/** The data directory, absolute: the explicit one, else `TEND_DATA_DIR`, else the XDG default. */
export function serverDataDir(explicit?: string, env: NodeJS.ProcessEnv = process.env): string {
  if (explicit) return resolve(explicit);
  if (env.TEND_DATA_DIR) return resolve(env.TEND_DATA_DIR);
  // The XDG spec ignores a relative XDG_DATA_HOME.
  const xdg = env.XDG_DATA_HOME && isAbsolute(env.XDG_DATA_HOME) ? env.XDG_DATA_HOME : undefined;
  return join(xdg ?? join(homedir(), '.local', 'share'), 'tend');
}
