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
 * of: with it net, dgram…) and client-node's (exec and cloud auth plugins run a command). Every
 * export of them that is used is a function, and reading one loads nothing: the stand-in gives a
 * function that requires the module when called. (client-node's KubeConfig reads
 * `child_process.spawn` for every kubeconfig, and calls it only for an exec credential plugin.)
 */
const builtinsOnFirstUse: Record<string, { importers: string[] }> = {
  'node:child_process': { importers: ['commander', '@kubernetes/client-node'] },
};

/** The stand-in module of a built-in: loads it on the first call of one of its functions. */
function standIn(id: string): string {
  const load = `require(${JSON.stringify(id)})`;
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
 * SOCKS through socks-proxy-agent or socks itself, which bring ip-address and its regular
 * expressions, and debug; HTTP through hpagent), the Azure and GCP auth providers (jsonpath-plus),
 * and undici, its HTTP client (tend makes its own requests, src/plugins/kubernetes/client/
 * connection.ts; undici is 1.3 MB of code, left outside the bundle) — and runs at load: each name
 * it imports of them is a stand-in that loads the package on its first use.
 * (openid-client, for OIDC, stays as it is: required whole, its ES module would bring all of
 * oauth4webapi, 100 KB more to read on every command, where esbuild keeps the part it uses.)
 * A name not listed here would fail the build (esbuild: "No matching export", or a warning that it
 * is always undefined, which bundle.ts treats as an error).
 */
const packagesOnFirstCall: Record<string, string[]> = {
  'socks-proxy-agent': ['SocksProxyAgent'],
  // For a socks:// proxy: `SocksClient.createConnection(…)`.
  socks: ['SocksClient'],
  hpagent: ['HttpProxyAgent', 'HttpsProxyAgent'],
  'jsonpath-plus': ['JSONPath'],
  undici: ['Agent', 'ProxyAgent', 'fetch'],
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
      // Called, constructed, or a static member read (SocksClient.createConnection).
      const exports = packagesOnFirstCall[name]!.map(
        (key) =>
          `export const ${key} = new Proxy(function ${key}() {}, {\n` +
          `  apply: (_, self, args) => Reflect.apply(load().${key}, self, args),\n` +
          `  construct: (_, args) => Reflect.construct(load().${key}, args),\n` +
          `  get: (_, member) => load().${key}[member],\n});`,
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
