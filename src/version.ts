/** The tend version, from package.json (read once, without loading anything else). */
import { readFileSync } from 'node:fs';

function readVersion(): string {
  // dist/src/cli/ when built, src/cli/ when run from source (tests).
  for (const relative of ['../../../package.json', '../../package.json']) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(relative, import.meta.url), 'utf8')) as {
        name?: string;
        version: string;
      };
      if (pkg.name === 'tend') return pkg.version;
    } catch {
      // try the next location
    }
  }
  return '0.0.0';
}

export const cliVersion = readVersion();
