/**
 * The CLI bundle that `bin/tend.js` runs (part of `npm run build`, after tsc): `src/main.ts` and
 * everything of tend's it imports, with the packages they use (commander, yaml, fast-glob,
 * TypeBox…), in one CommonJS file, `dist/cli/tend.cjs`, written as the function CommonJS wraps a
 * module in (src/cli/launch.ts compiles it as it reads it). Start-up then reads one file instead
 * of hundreds of modules, and the launcher keeps V8's code cache of it, which Node 20 offers for
 * scripts and not for ES modules. Each command module stays a lazily initialised part of the
 * file: it runs only when its command does.
 *
 * The bundle is minified, names too, with a source map beside it (`dist/cli/tend.cjs.map`, in the
 * package): every start reads the file, copies it into a string and deserializes the code cache
 * of what it ran, each in proportion to its size (3.4 MB as written, 1.6 MB minified), and on
 * the 2-core machines measured touching memory is what costs. `--debug` prints its stack traces
 * through the map, as lines of tend's sources (src/cli/bundle-stack.ts).
 *
 * The server's and the databases' packages stay outside the bundle, loaded from node_modules by
 * the code that uses them, so only the commands that need them load them; some cannot be bundled
 * (worker threads started by file). So does undici, client-node's HTTP client, which tend's
 * requests do not use (bundle-plugins.ts loads it on a first call that never comes in practice). @kubernetes/client-node is bundled, only what
 * tend uses of it (bundle-plugins.ts): its package index, as Node loads it, is some 3,000 ES
 * modules of generated API classes and models, about a second of CPU before the first request.
 * The library (`dist/src/index.js`, `dist/src/testing/index.js`) is tsc's output, not bundled.
 */
import { build, type BuildOptions } from 'esbuild';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { moduleFunctionHead } from '../src/cli/launch.js';
import { builtinsWhenUsed, kubernetesAuthWhenUsed, kubernetesClientUsedParts } from './bundle-plugins.js';
import { sha256Hex } from '../src/hash.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const outdir = path.join(root, 'dist', 'cli');
const outfile = path.join(outdir, 'tend.cjs');

/** Packages imported from node_modules at run time instead of bundled. */
const externalPackages = ['@fastify/*', 'fastify', 'kysely', 'luxon', 'pg', 'pino', 'tar', 'undici', 'ws'];

/** One CommonJS file for Node 22 and later from an entry point and what it imports. */
const commonJs = {
  absWorkingDir: root,
  bundle: true,
  format: 'cjs',
  platform: 'node',
  target: 'node22',
  // The sources are ES modules: their import.meta.url is the output file's URL.
  define: { 'import.meta.url': '__tendImportMetaUrl' },
  banner: { js: "const __tendImportMetaUrl = require('node:url').pathToFileURL(__filename).href;" },
  logLevel: 'warning',
} satisfies BuildOptions;

rmSync(outdir, { recursive: true, force: true });
const bundled = await build({
  ...commonJs,
  entryPoints: ['src/main.ts'],
  outfile,
  external: externalPackages,
  plugins: [builtinsWhenUsed, kubernetesAuthWhenUsed, kubernetesClientUsedParts],
  // Names too (see the header): 20-25 ms less CPU per Kubernetes command than unminified,
  // measured on Node 24 (2 cores); whitespace and syntax alone gave 7, keepNames nothing (its
  // __name() calls cost what the smaller file saves).
  minify: true,
  sourcemap: 'external',
  sourcesContent: false,
});
// A warning is an error: "import … will always be undefined" is a stand-in of bundle-plugins.ts
// that lacks a name its package came to use.
if (bundled.warnings.length > 0) throw new Error(`the CLI bundle has ${bundled.warnings.length} warning(s)`);
// ASCII only: Node reads an ASCII file into a one-byte string several times faster than UTF-8 text
// into a two-byte one (about 8 ms of every start for this file). esbuild escapes strings; what is
// left is in comments and template literals, where an escape means the same (no tag here reads
// `raw`). Each UTF-16 unit on its own, so an astral character becomes its surrogate pair.
// (A line with such a character is off by a few columns in the source map: esbuild leaves a
// handful in template literals.)
const text = readFileSync(outfile, 'utf8')
  .replace(/\n\/\/# sourceMappingURL=.*\n$/, '\n')
  .replace(/[^\t\n\r -~]/g, (unit) => `\\u${unit.charCodeAt(0).toString(16).padStart(4, '0')}`);
// What names the bundle's code cache (src/cli/launch.ts): a new build never meets an old cache.
const buildId = sha256Hex(text);
// Written as the function CommonJS wraps a module in, which the launcher compiles as it reads it.
writeFileSync(outfile, `${moduleFunctionHead}${text}\n});\n// tend-build ${buildId}\n`);
// The head is a line of its own: the source map's lines move down by one.
const map = JSON.parse(readFileSync(`${outfile}.map`, 'utf8')) as { mappings: string };
map.mappings = `;${map.mappings}`;
writeFileSync(`${outfile}.map`, JSON.stringify(map));

// The launcher that `bin/tend.js` requires, CommonJS too: with no ES module on the way to the
// bundle, Node does not load its ES module loader (and node:fs/promises, readline) to start tend.
// Its `import()`, lent to the bundle, loads that loader when a plugin or tar first needs it.
await build({ ...commonJs, entryPoints: ['src/cli/launch.ts'], outfile: path.join(outdir, 'launch.cjs') });
console.log(`bundled the CLI: ${path.relative(root, outfile)} and its launcher`);
