/**
 * `import()` of an ES module that is not part of the CLI bundle: a third-party plugin, an
 * ESM-only package (tar). The bundle runs from V8's code cache
 * (src/cli/launch.ts), and Node 20 gives such a script no working `import()` of its own (with
 * cached code the dynamic import callback is lost), so the launcher, an ES module, lends its
 * `import()`. Run otherwise (from source, through the library), this module's own is used.
 */
export const importKey = Symbol.for('tend.importModule');

type Importer = (specifier: string) => Promise<unknown>;

/** @param specifier a package name or an absolute URL (a relative one would resolve from the launcher) */
export function importModule<T>(specifier: string): Promise<T> {
  const lent = (globalThis as { [importKey]?: Importer })[importKey];
  return (lent ?? ((s: string) => import(s)))(specifier) as Promise<T>;
}
