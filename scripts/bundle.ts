/**
 * The CLI bundle that `bin/tend.js` runs (part of `npm run build`, after tsc): `src/main.ts` and
 * everything of tend's it imports, with the packages they use (commander, yaml, fast-glob,
 * TypeBox…), in one CommonJS file, `dist/cli/tend.cjs`, written as the function CommonJS wraps a
 * module in (src/cli/launch.ts compiles it as it reads it). Start-up then reads one file instead
 * of hundreds of modules, and the launcher keeps V8's code cache of it, which Node 20 offers for
 * scripts and not for ES modules. Each command module stays a lazily initialised part of the
 * file: it runs only when its command does.
 *
 * The server's and the databases' packages stay outside the bundle, loaded from node_modules by
 * the code that uses them, so only the commands that need them load them; some cannot be bundled
 * (native addons, worker threads started by file). @kubernetes/client-node is bundled, only what
 * tend uses of it (kubernetesClientUsedParts): its package index, as Node loads it, is some 3,000
 * ES modules of generated API classes and models, about a second of CPU before the first request.
 * The library (`dist/src/index.js`, `dist/src/testing/index.js`) is tsc's output, not bundled.
 */
import { build, type BuildOptions, type Plugin } from 'esbuild';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { moduleFunctionHead } from '../src/cli/launch.js';
import { sha256Hex } from '../src/hash.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const outdir = path.join(root, 'dist', 'cli');
const outfile = path.join(outdir, 'tend.cjs');

/** Packages imported from node_modules at run time instead of bundled. */
const externalPackages = [
  '@fastify/*',
  'better-sqlite3',
  'fastify',
  'kysely',
  'luxon',
  'pg',
  'pino',
  'tar',
  'ws',
];

/**
 * commander requires node:child_process at load, for executable subcommands, which tend has none
 * of: it gets the module on first use instead, so that a command that starts no process does not
 * load it (and net, dgram…), a few milliseconds of every start.
 */
const commanderChildProcessOnUse: Plugin = {
  name: 'commander-child-process-on-use',
  setup(bundle) {
    bundle.onResolve({ filter: /^node:child_process$/ }, ({ importer }) =>
      importer.includes(`${path.sep}node_modules${path.sep}commander${path.sep}`)
        ? { path: 'child-process-on-use', namespace: 'tend-shim' }
        : undefined,
    );
    bundle.onLoad({ filter: /.*/, namespace: 'tend-shim' }, () => ({
      contents: "module.exports = new Proxy({}, { get: (_, key) => require('node:child_process')[key] });",
      loader: 'js',
    }));
  },
};

const clientNodeDist = `${path.sep}node_modules${path.sep}@kubernetes${path.sep}client-node${path.sep}dist${path.sep}`;
/** The lines of the generated client's index that re-export its API classes and models. */
const generatedApisAndModels =
  /^export .* from ["'](\.\/models\/all\.js|\.\/types\/ObjectParamAPI\.js)["'];$/;

/**
 * @kubernetes/client-node, bundled: the modules src/plugins/kubernetes/client/library.ts and
 * streams.ts import by path (KubeConfig, logs, exec, attach; not the package index) and what they
 * import. Two of them import a name or two from the generated client's index (`gen/index.js`,
 * re-exported as `api.js`), which re-exports every API class and model: 4 MB of code to run when
 * tend first connects. They get that index without its API classes and models, which they do not
 * use; a name they came to need from those would fail the build ("No matching export").
 */
const kubernetesClientUsedParts: Plugin = {
  name: 'kubernetes-client-used-parts',
  setup(bundle) {
    bundle.onResolve({ filter: /^\.\/(gen\/index|api)\.js$/ }, ({ importer }) => {
      const dist = importer.lastIndexOf(clientNodeDist);
      if (dist < 0 || importer.slice(dist + clientNodeDist.length).includes(path.sep)) return undefined;
      const index = path.join(importer.slice(0, dist + clientNodeDist.length), 'gen', 'index.js');
      return { path: index, namespace: 'tend-client-node-index' };
    });
    bundle.onLoad({ filter: /.*/, namespace: 'tend-client-node-index' }, ({ path: index }) => {
      const lines = readFileSync(index, 'utf8').split('\n');
      const kept = lines.filter((line) => !generatedApisAndModels.test(line));
      if (lines.length - kept.length !== 2) {
        throw new Error(
          `${index}: expected the re-exports of the models and the API classes, found ${lines.length - kept.length}`,
        );
      }
      return { contents: kept.join('\n'), loader: 'js', resolveDir: path.dirname(index) };
    });
  },
};

/**
 * node-fetch (client-node's log streaming) takes `URL` from node:url and falls back to the
 * whatwg-url package only where Node has none: that package, with its 300 KB Unicode table, is
 * left out.
 */
const whatwgUrlFromNode: Plugin = {
  name: 'whatwg-url-from-node',
  setup(bundle) {
    bundle.onResolve({ filter: /^whatwg-url$/ }, ({ importer }) =>
      importer.includes(`${path.sep}node_modules${path.sep}node-fetch${path.sep}`)
        ? { path: 'whatwg-url', namespace: 'tend-whatwg-url' }
        : undefined,
    );
    bundle.onLoad({ filter: /.*/, namespace: 'tend-whatwg-url' }, () => ({
      contents: 'module.exports = { URL: globalThis.URL };',
      loader: 'js',
    }));
  },
};

/** One CommonJS file for Node 20 from an entry point and what it imports. */
const commonJs = {
  absWorkingDir: root,
  bundle: true,
  format: 'cjs',
  platform: 'node',
  target: 'node20',
  // The sources are ES modules: their import.meta.url is the output file's URL.
  define: { 'import.meta.url': '__tendImportMetaUrl' },
  banner: { js: "const __tendImportMetaUrl = require('node:url').pathToFileURL(__filename).href;" },
  logLevel: 'warning',
} satisfies BuildOptions;

rmSync(outdir, { recursive: true, force: true });
await build({
  ...commonJs,
  entryPoints: ['src/main.ts'],
  outfile,
  external: externalPackages,
  plugins: [commanderChildProcessOnUse, kubernetesClientUsedParts, whatwgUrlFromNode],
});
// ASCII only: Node reads an ASCII file into a one-byte string several times faster than UTF-8 text
// into a two-byte one (about 8 ms of every start for this file). esbuild escapes strings; what is
// left is in comments and template literals, where an escape means the same (no tag here reads
// `raw`). Each UTF-16 unit on its own, so an astral character becomes its surrogate pair.
const text = readFileSync(outfile, 'utf8').replace(
  /[^\t\n\r -~]/g,
  (unit) => `\\u${unit.charCodeAt(0).toString(16).padStart(4, '0')}`,
);
// What names the bundle's code cache (src/cli/launch.ts): a new build never meets an old cache.
const buildId = sha256Hex(text);
// Written as the function CommonJS wraps a module in, which the launcher compiles as it reads it.
writeFileSync(outfile, `${moduleFunctionHead}${text}\n});\n// tend-build ${buildId}\n`);

// The launcher that `bin/tend.js` requires, CommonJS too: with no ES module on the way to the
// bundle, Node does not load its ES module loader (and node:fs/promises, readline) to start tend.
// Its `import()`, lent to the bundle, loads that loader when a plugin or tar first needs it.
await build({ ...commonJs, entryPoints: ['src/cli/launch.ts'], outfile: path.join(outdir, 'launch.cjs') });
console.log(`bundled the CLI: ${path.relative(root, outfile)} and its launcher`);
