/** Where the server's SQLite database lives: --data-dir, TEND_DATA_DIR, $XDG_DATA_HOME/tend, ~/.local/share/tend. */
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { serverDataDir } from '../../src/server/db/data-dir.js';

describe('serverDataDir', () => {
  it('takes --data-dir, then TEND_DATA_DIR, then XDG_DATA_HOME, then ~/.local/share', () => {
    const env = { TEND_DATA_DIR: '/srv/tend', XDG_DATA_HOME: '/home/u/.data' };
    expect(serverDataDir('rel/dir', env)).toBe(resolve('rel/dir'));
    expect(serverDataDir(undefined, env)).toBe('/srv/tend');
    expect(serverDataDir(undefined, { XDG_DATA_HOME: '/home/u/.data' })).toBe('/home/u/.data/tend');
    expect(serverDataDir(undefined, {})).toBe(join(homedir(), '.local', 'share', 'tend'));
  });

  it('ignores an empty TEND_DATA_DIR and a relative XDG_DATA_HOME, as the XDG spec says', () => {
    expect(serverDataDir(undefined, { TEND_DATA_DIR: '', XDG_DATA_HOME: 'data' })).toBe(
      join(homedir(), '.local', 'share', 'tend'),
    );
  });
});
