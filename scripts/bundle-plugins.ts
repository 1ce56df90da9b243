/**
 * The esbuild plugins of the CLI bundle (scripts/bundle.ts): what packages load at start-up that a
 * command may not use is loaded when first used instead, and of @kubernetes/client-node only what
 * tend uses is bundled. Each saves its milliseconds on the commands that do not need it.
 */
import type { Plugin } from 'esbuild';
import { readFileSync } from 'node:fs';
import path from 'node:path';

const inPackage = (file: string, name: string) =>
  file.includes(`${path.sep}node_modules${path.sep}${name.split('/').join(path.sep)}${path.sep}`);

/**
 * Node built-ins that packages require at load and use only in calls tend seldom makes, each for
 * its importers: commander's node:child_process (for executable subcommands, which tend has none
 * of: with it net, dgram…), client-node's (exec and cloud auth plugins run a command), node-fetch's
 * zlib (compressed answers, of client-node's log streaming). They get an object that requires
 * the module on first use. With `functions`, every export of the module is a function, and reading
 * one loads nothing: it gives a function that requires the module when called. (client-node's
 * KubeConfig reads `child_process.spawn` for every kubeconfig, and calls it only for an exec
 * credential plugin.)
 */
const builtinsOnFirstUse: Record<string, { importers: string[]; functions?: true }> = {
  'node:child_process': { importers: ['commander', '@kubernetes/client-node'], functions: true },
  zlib: { importers: ['node-fetch'] },
};

/** The stand-in module of a built-in: loads it on first use (see builtinsOnFirstUse). */
function standIn(id: string): string {
  const load = `require(${JSON.stringify(id)})`;
  if (!builtinsOnFirstUse[id]!.functions) {
    return `module.exports = new Proxy({}, { get: (_, key) => ${load}[key] });`;
  }
  return `const forwarders = new Map();
module.exports = new Proxy({}, {
  get(_, key) {
    // What the bundle's interop asks of any module (\`__esModule\`): a built-in has no such export.
    if (typeof key !== 'string' || key === '__esModule') return undefined;
    let forward = forwarders.get(key);
    if (!forward) {
      forward = function (...args) {
        const target = ${load}[key];
        return new.target ? Reflect.construct(target, args, new.target) : Reflect.apply(target, this, args);
      };
      forwarders.set(key, forward);
    }
    return forward;
  },
});`;
}

export const builtinsWhenUsed: Plugin = {
  name: 'builtins-when-used',
  setup(bundle) {
    const filter = new RegExp(`^(${Object.keys(builtinsOnFirstUse).join('|')})$`);
    bundle.onResolve({ filter }, ({ path: id, importer }) =>
      builtinsOnFirstUse[id]!.importers.some((name) => inPackage(importer, name))
        ? { path: id, namespace: 'tend-builtin-when-used' }
        : undefined,
    );
    bundle.onLoad({ filter: /.*/, namespace: 'tend-builtin-when-used' }, ({ path: id }) => ({
      contents: standIn(id),
      loader: 'js',
    }));
  },
};

/**
 * What @kubernetes/client-node imports for a kubeconfig that few have — a proxy (`proxy-url`:
 * SOCKS through socks-proxy-agent, which brings socks, ip-address and its regular expressions, and
 * debug; HTTP through hpagent), the Azure and GCP auth providers (jsonpath-plus) — and runs at
 * load: each name it imports of them is a stand-in that loads the package on its first call.
 * (openid-client, for OIDC, stays as it is: required whole, its ES module would bring all of
 * oauth4webapi, 100 KB more to read on every command, where esbuild keeps the part it uses.)
 * A name not listed here would fail the build (esbuild: "No matching export", or a warning that it
 * is always undefined, which bundle.ts treats as an error).
 */
const packagesOnFirstCall: Record<string, string[]> = {
  'socks-proxy-agent': ['SocksProxyAgent'],
  hpagent: ['HttpProxyAgent', 'HttpsProxyAgent'],
  'jsonpath-plus': ['JSONPath'],
};

export const kubernetesAuthWhenUsed: Plugin = {
  name: 'kubernetes-auth-when-used',
  setup(bundle) {
    const filter = new RegExp(`^(${Object.keys(packagesOnFirstCall).join('|')})$`);
    bundle.onResolve({ filter }, ({ path: name, importer }) =>
      inPackage(importer, '@kubernetes/client-node')
        ? { path: name, namespace: 'tend-package-when-used', pluginData: path.dirname(importer) }
        : undefined,
    );
    bundle.onLoad({ filter: /.*/, namespace: 'tend-package-when-used' }, ({ path: name, pluginData }) => {
      const exports = packagesOnFirstCall[name]!.map(
        (key) =>
          `export function ${key}(...args) {\n` +
          `  return new.target ? new (load().${key})(...args) : load().${key}(...args);\n}`,
      );
      return {
        contents: `let loaded;\nconst load = () => (loaded ??= require(${JSON.stringify(name)}));\n${exports.join('\n')}\n`,
        loader: 'js',
        // The package as client-node's own import finds it.
        resolveDir: pluginData as string,
      };
    });
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
export const kubernetesClientUsedParts: Plugin = {
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
export const whatwgUrlFromNode: Plugin = {
  name: 'whatwg-url-from-node',
  setup(bundle) {
    bundle.onResolve({ filter: /^whatwg-url$/ }, ({ importer }) =>
      inPackage(importer, 'node-fetch') ? { path: 'whatwg-url', namespace: 'tend-whatwg-url' } : undefined,
    );
    bundle.onLoad({ filter: /.*/, namespace: 'tend-whatwg-url' }, () => ({
      contents: 'module.exports = { URL: globalThis.URL };',
      loader: 'js',
    }));
  },
};

/**
 * node-fetch 2 parses every URL with `url.parse()`, which Node 24 deprecates at run time for
 * callers outside node_modules — and bundled, node-fetch is outside node_modules: every `tend
 * logs` and pod Test printed DEP0169 on stderr. It gets node:url with a `parse` made of the WHATWG
 * parser instead (node-fetch gives it absolute URLs only, already normalised by `new URL`).
 */
export const nodeFetchLegacyUrlParse: Plugin = {
  name: 'node-fetch-legacy-url-parse',
  setup(bundle) {
    bundle.onResolve({ filter: /^(node:)?url$/ }, ({ importer }) =>
      inPackage(importer, 'node-fetch') ? { path: 'url', namespace: 'tend-node-fetch-url' } : undefined,
    );
    bundle.onLoad({ filter: /.*/, namespace: 'tend-node-fetch-url' }, () => ({
      contents: `const url = require('node:url');
function parse(input) {
  const u = new URL(input);
  const user = u.username ? decodeURIComponent(u.username) : '';
  return {
    protocol: u.protocol,
    slashes: true,
    auth: user ? user + (u.password ? ':' + decodeURIComponent(u.password) : '') : null,
    host: u.host,
    port: u.port || null,
    hostname: u.hostname.startsWith('[') ? u.hostname.slice(1, -1) : u.hostname,
    hash: u.hash || null,
    search: u.search || null,
    query: u.search ? u.search.slice(1) : null,
    pathname: u.pathname,
    path: u.pathname + u.search,
    href: u.href,
  };
}
module.exports = { ...url, parse };`,
      loader: 'js',
    }));
  },
};
