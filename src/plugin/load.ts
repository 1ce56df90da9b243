/**
 * Loading a third-party plugin named by a provider entry (`providers[].plugin` in tend.yml): a
 * path relative to the project root (`./plugins/x.js`) or a package name resolved from the project
 * root's node_modules, imported as an ES module. Its default export (or its `plugin` export) must
 * be a PluginDefinition; it is checked by validatePlugins like the built-in plugins.
 */
import { withCleanupChecks } from './cleanup-wrap.js';
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { TendError } from '../errors.js';
import { importModule } from '../import-module.js';
import type { LoadedPlugin, PluginDefinition } from './types.js';
import { validatePlugins } from './validate.js';

/** Whether a `plugin:` value names a file (relative or absolute path) rather than a package. */
export function isPathSpecifier(specifier: string): boolean {
  return specifier.startsWith('./') || specifier.startsWith('../') || path.isAbsolute(specifier);
}

/** The file a `plugin:` value points at, or a TEND_PLUGIN_NOT_FOUND error saying where it looked. */
export function resolvePluginModule(specifier: string, projectRoot: string): string {
  if (isPathSpecifier(specifier)) {
    const file = path.resolve(projectRoot, specifier);
    if (!existsSync(file) || !statSync(file).isFile()) {
      throw notFound(specifier, `no file ${file} (paths are relative to the project root)`);
    }
    return file;
  }
  const { name, subpath } = splitPackageSpecifier(specifier);
  if (!name) throw notFound(specifier, 'expected a path starting with ./ or ../, or a package name');
  for (let dir = projectRoot; ; dir = path.dirname(dir)) {
    const packageDir = path.join(dir, 'node_modules', name);
    const manifest = path.join(packageDir, 'package.json');
    if (existsSync(manifest)) return packageEntry(specifier, packageDir, manifest, subpath);
    if (path.dirname(dir) === dir) break;
  }
  throw notFound(
    specifier,
    `package "${name}" is not installed in ${projectRoot} or a parent directory (node_modules/${name})`,
  );
}

/** Imports the module and returns its checked PluginDefinition. */
export async function loadPluginModule(
  specifier: string,
  projectRoot: string,
  builtins: readonly PluginDefinition[],
): Promise<LoadedPlugin> {
  const file = resolvePluginModule(specifier, projectRoot);
  let module: Record<string, unknown>;
  try {
    module = await importModule<Record<string, unknown>>(pathToFileURL(file).href);
  } catch (error) {
    throw new TendError(
      'TEND_PLUGIN_INVALID',
      `plugin module "${specifier}" (${file}) failed to load: ${(error as Error).message ?? String(error)}`,
      { cause: error },
    );
  }
  const definition = module.default ?? module.plugin;
  if (definition === null || typeof definition !== 'object') {
    throw new TendError(
      'TEND_PLUGIN_INVALID',
      `plugin module "${specifier}" (${file}) has no plugin: expected a PluginDefinition as its ` +
        `default export or as its "plugin" export; it exports ${Object.keys(module).join(', ') || 'nothing'}`,
    );
  }
  const plugin = definition as PluginDefinition;
  try {
    validatePlugins([...builtins, plugin]);
  } catch (error) {
    if (error instanceof TendError) {
      throw new TendError('TEND_PLUGIN_INVALID', `plugin module "${specifier}": ${error.message}`, {
        cause: error,
      });
    }
    throw error;
  }
  // Its cleanup primitives run inside tend's checks, whoever calls them.
  const { cleanup, ...rest } = plugin;
  return cleanup ? { ...rest, cleanup: withCleanupChecks(cleanup) } : rest;
}

function notFound(specifier: string, why: string): TendError {
  return new TendError('TEND_PLUGIN_NOT_FOUND', `plugin module "${specifier}" not found: ${why}`);
}

function splitPackageSpecifier(specifier: string): { name?: string; subpath: string } {
  const parts = specifier.split('/');
  const scoped = specifier.startsWith('@');
  const name = scoped ? parts.slice(0, 2).join('/') : parts[0];
  const valid = /^(@[a-z0-9][\w.-]*\/)?[a-z0-9][\w.-]*$/i.test(name ?? '');
  return { ...(valid ? { name } : {}), subpath: ['.', ...parts.slice(scoped ? 2 : 1)].join('/') };
}

/**
 * The file of a package (sub)path: `exports` (a string, or conditions `import`, `node`,
 * `default`), else `main`, else index.js — the entry Node's `import` would pick for an ES module.
 */
function packageEntry(specifier: string, packageDir: string, manifest: string, subpath: string): string {
  let pkg: { exports?: unknown; main?: unknown };
  try {
    pkg = JSON.parse(readFileSync(manifest, 'utf8')) as typeof pkg;
  } catch (error) {
    throw notFound(specifier, `cannot read ${manifest}: ${(error as Error).message}`);
  }
  let target: string | undefined;
  if (pkg.exports !== undefined) {
    const exportsMap = pkg.exports;
    const keyed =
      exportsMap !== null &&
      typeof exportsMap === 'object' &&
      !Array.isArray(exportsMap) &&
      Object.keys(exportsMap).some((k) => k.startsWith('.'));
    const entry = keyed
      ? (exportsMap as Record<string, unknown>)[subpath]
      : subpath === '.'
        ? exportsMap
        : undefined;
    target = conditionalTarget(entry);
    if (!target) throw notFound(specifier, `${manifest} does not export "${subpath}" for import`);
  } else if (subpath !== '.') {
    target = subpath;
  } else {
    target = typeof pkg.main === 'string' ? pkg.main : 'index.js';
  }
  const file = path.resolve(packageDir, target);
  if (!existsSync(file) || !statSync(file).isFile()) {
    throw notFound(specifier, `${file} (the entry of ${manifest}) does not exist`);
  }
  return file;
}

function conditionalTarget(entry: unknown): string | undefined {
  if (typeof entry === 'string') return entry;
  if (Array.isArray(entry)) return entry.map(conditionalTarget).find(Boolean);
  if (entry && typeof entry === 'object') {
    const conditions = entry as Record<string, unknown>;
    for (const condition of ['import', 'node', 'default']) {
      const found = conditionalTarget(conditions[condition]);
      if (found) return found;
    }
  }
  return undefined;
}
