/** The tend version, from package.json (read once, without loading anything else). */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The version of the nearest package.json named `tend` above `moduleUrl`: this file runs from
 * `src/` (tsx, tests), `dist/src/` (the library) and `dist/cli/` (the CLI bundle, the demo's
 * embedded executor), each at another depth below the package root — and, installed, below
 * `node_modules/tend/`. 0.0.0 only when none is found (a copy without its package.json).
 */
export function versionOf(moduleUrl: string): string {
  let dir = path.dirname(fileURLToPath(moduleUrl));
  for (;;) {
    try {
      const pkg = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as {
        name?: unknown;
        version?: unknown;
      };
      if (pkg.name === 'tend' && typeof pkg.version === 'string') return pkg.version;
    } catch {
      // none here (or not JSON): the directory above
    }
    const parent = path.dirname(dir);
    if (parent === dir) return '0.0.0';
    dir = parent;
  }
}

export const cliVersion = versionOf(import.meta.url);
