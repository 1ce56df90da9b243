/**
 * The CLI bundle that `bin/tend.js` runs (part of `npm run build`, after tsc): `src/main.ts` and
 * what every command needs at start (commander, yaml, fast-glob, TypeBox…) in one file,
 * `dist/cli/tend.js`; each command module and what only it needs in a chunk of its own under
 * `dist/cli/chunks/`, loaded when the command runs (code splitting of the dynamic imports).
 * Start-up then reads a few files instead of hundreds of modules.
 *
 * The server's, the database's and the Kubernetes client's packages stay outside the bundle,
 * imported from node_modules by the chunks that use them: they are loaded only by the commands
 * that need them, and some cannot be bundled (native addons, worker threads started by file).
 * The library (`dist/src/index.js`, `dist/src/testing/index.js`) is tsc's output, not bundled.
 */
import { build } from 'esbuild';
import { rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const outdir = path.join(root, 'dist', 'cli');

/** Packages imported from node_modules at run time instead of bundled. */
export const externalPackages = [
  '@fastify/*',
  '@kubernetes/client-node',
  '@octokit/webhooks-methods',
  'better-sqlite3',
  'fastify',
  'kysely',
  'luxon',
  'pg',
  'pino',
  'tar',
  'ws',
];

rmSync(outdir, { recursive: true, force: true });
const result = await build({
  absWorkingDir: root,
  // The server's SQLite writer runs in a worker thread started by file (src/server/db/sqlite-writer.ts
  // finds it at the top of the bundle).
  entryPoints: { tend: 'src/main.ts', 'sqlite-writer-thread': 'src/server/db/sqlite-writer-thread.ts' },
  outdir,
  chunkNames: 'chunks/[name]-[hash]',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  external: externalPackages,
  // Bundled CommonJS packages call require() for Node's modules: give the ES module one.
  banner: {
    js: "import { createRequire as __tendRequire } from 'node:module';\nconst require = __tendRequire(import.meta.url);",
  },
  logLevel: 'warning',
  metafile: true,
});
const outputs = Object.entries(result.metafile.outputs).filter(([file]) => file.endsWith('.js'));
console.log(`bundled the CLI: ${outputs.length} file(s) in ${path.relative(root, outdir)}/`);
