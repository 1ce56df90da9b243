/**
 * What an executor serves: the plugins with cleanup handlers (the built-in ones, and modules
 * named with `--plugin`), each with its executor settings — what its `settingsFromFlags` makes of
 * the executor's flags, with `--set <plugin>.<key>=<value>` on top — checked against the schema
 * the plugin declares. A plugin with no settings is not served. Nothing here names a plugin: each
 * says what it needs.
 */
import { Value } from 'typebox/value';
import { schemaProblems } from '../schema-check.js';
import { parse as parseYaml } from 'yaml';
import { TendError } from '../errors.js';
import { loadPluginModule } from '../plugin/load.js';
import type { CleanupPrimitives, ExecutorFlags, PluginDefinition } from '../plugin/types.js';
import { validatePlugins } from '../plugin/validate.js';
import type { ServedPlugin } from '../router/cleanup.js';

export interface ExecutorPluginOptions extends ExecutorFlags {
  /** `--plugin <module>` (repeatable): a path (relative to the working directory) or a package name. */
  pluginModules?: readonly string[];
  /** `--set <plugin>.<key>=<value>` (repeatable); the value is read as YAML (`3`, `true`, `[a, b]`). */
  sets?: readonly string[];
  /** Where `--plugin` paths are relative to. */
  cwd: string;
}

/** The plugins this executor serves, each with its settings. */
export async function servedPlugins(
  builtins: readonly PluginDefinition[],
  options: ExecutorPluginOptions,
): Promise<ServedPlugin[]> {
  const plugins = [...builtins];
  for (const specifier of options.pluginModules ?? []) {
    plugins.push(await loadPluginModule(specifier, options.cwd, plugins));
  }
  validatePlugins(plugins);
  const sets = parseSets(options.sets ?? [], plugins);
  const served: ServedPlugin[] = [];
  for (const plugin of plugins) {
    if (!plugin.cleanup) continue;
    const fromFlags = plugin.cleanup.settingsFromFlags?.(options);
    const given = sets.get(plugin.name);
    if (fromFlags === undefined && given === undefined) continue;
    const settings = { ...(fromFlags as object | undefined), ...given };
    served.push({ plugin: plugin as ServedPlugin['plugin'], settings: checkSettings(plugin, settings) });
  }
  return served;
}

function parseSets(
  sets: readonly string[],
  plugins: readonly PluginDefinition[],
): Map<string, Record<string, unknown>> {
  const byPlugin = new Map<string, Record<string, unknown>>();
  for (const set of sets) {
    const m = /^([a-z][a-z0-9-]*)\.([A-Za-z_][A-Za-z0-9_-]*)=([\s\S]*)$/.exec(set);
    if (!m) {
      throw new TendError(
        'TEND_USAGE',
        `--set expects <plugin>.<key>=<value>, e.g. --set dirs.root=/srv/envs, got "${set.slice(0, 200)}"`,
      );
    }
    const [, name, key, raw] = m as unknown as [string, string, string, string];
    const plugin = plugins.find((p) => p.name === name);
    if (!plugin?.cleanup) {
      const cleaning = plugins.filter((p) => p.cleanup).map((p) => p.name);
      throw new TendError(
        'TEND_USAGE',
        `--set ${name}.${key}: no plugin "${name}" with cleanup handlers here; expected one of: ${cleaning.join(', ')}`,
      );
    }
    let value: unknown;
    try {
      value = parseYaml(raw);
    } catch {
      value = raw;
    }
    const settings = byPlugin.get(name) ?? {};
    settings[key] = value ?? '';
    byPlugin.set(name, settings);
  }
  return byPlugin;
}

/** The settings with the schema's defaults, or a TEND_USAGE error naming the first problem. */
function checkSettings(plugin: PluginDefinition, settings: unknown): unknown {
  const schema = (plugin.cleanup as CleanupPrimitives).settingsSchema;
  const value = Value.Default(schema, structuredClone(settings));
  if (Value.Check(schema, value)) return value;
  const [first] = schemaProblems(Value.Errors(schema, value), 1);
  const where =
    first && first.path !== '/' ? `${plugin.name}${first.path.replaceAll('/', '.')}` : plugin.name;
  throw new TendError(
    'TEND_USAGE',
    `executor settings of plugin ${plugin.name}: ${where}: ${first?.message ?? 'not valid'} (--set ${plugin.name}.<key>=<value>)`,
  );
}
