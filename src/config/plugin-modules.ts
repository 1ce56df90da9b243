/**
 * The third-party plugins a project names (`providers[].plugin` in tend.yml), loaded before the
 * configuration is checked: their provider and action spec schemas are needed to check it. A
 * module that cannot be found or exports no valid plugin is a configuration problem at the
 * `plugin:` value's file:line:column.
 */
import { TendError } from '../errors.js';
import { loadPluginModule, resolvePluginModule } from '../plugin/load.js';
import type { PluginDefinition } from '../plugin/types.js';
import type { ConfigProblem } from './diagnostics.js';
import type { SourceFile } from './source.js';

/** The plugins of the project's tend.yml (not the built-ins), or the problems found loading them. */
export async function loadProjectPlugins(
  projectFile: SourceFile,
  root: string,
  builtins: readonly PluginDefinition[],
): Promise<{ plugins: PluginDefinition[]; problems: ConfigProblem[] }> {
  const problems: ConfigProblem[] = [];
  const byFile = new Map<string, PluginDefinition>();
  const plugins: PluginDefinition[] = [];
  for (const document of projectFile.parse().documents) {
    const value = document.value as { kind?: unknown; providers?: unknown } | null;
    if (!value || typeof value !== 'object' || value.kind !== 'Project') continue;
    if (!Array.isArray(value.providers)) continue;
    for (const [i, entry] of (value.providers as unknown[]).entries()) {
      const { name, plugin: specifier } = (entry ?? {}) as { name?: unknown; plugin?: unknown };
      // Shape errors (a `plugin:` that is not a string) are the schema check's to report.
      if (typeof specifier !== 'string' || specifier === '') continue;
      const location = projectFile.locate(document.index, ['providers', i, 'plugin']);
      try {
        const file = resolvePluginModule(specifier, root);
        let plugin = byFile.get(file);
        if (!plugin) {
          plugin = await loadPluginModule(specifier, root, builtins);
          if (plugins.some((p) => p.name === plugin!.name)) {
            throw new TendError(
              'TEND_PLUGIN_INVALID',
              `plugin module "${specifier}" is named "${plugin.name}", like another plugin module of this project`,
            );
          }
          byFile.set(file, plugin);
          plugins.push(plugin);
        }
        if (plugin.name !== name) {
          throw new TendError(
            'TEND_PLUGIN_INVALID',
            `plugin module "${specifier}" is the plugin "${plugin.name}", but this provider entry is named ` +
              `${typeof name === 'string' ? `"${name}"` : '(no name)'}; set name: ${plugin.name}`,
          );
        }
      } catch (error) {
        if (!(error instanceof TendError)) throw error;
        problems.push({ code: error.code, message: error.message, location });
      }
    }
  }
  return { plugins, problems };
}
