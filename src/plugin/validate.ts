/**
 * Plugin declarations are checked when a plugin is registered, not at its first call: the shape
 * of the definition (a third-party module may export anything), unknown event types, missing or
 * unknown handlers, and action types declared twice fail with a coded error naming the plugin. A
 * plugin's optional `cleanup` part must have all three handlers, a target kind no other plugin
 * declares, and a schema of its executor settings.
 */
import { TendError } from '../errors.js';
import { isEventType } from '../events/catalog.js';
import {
  actionHandlerNames,
  actionKinds,
  cleanupHandlerNames,
  optionalActionHandlerNames,
  optionalProviderHandlerNames,
  providerHandlerNames,
  type ActionKind,
  type PluginDefinition,
} from './types.js';

function invalid(plugin: string, message: string): TendError {
  return new TendError('TEND_PLUGIN_INVALID', `plugin "${plugin}": ${message}`, { plugin });
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

/** The fields every definition has, checked before anything reads them. */
function checkShape(plugin: PluginDefinition): void {
  const p = plugin as unknown as Record<string, unknown>;
  if (typeof p.name !== 'string' || !/^[a-z][a-z0-9-]*$/.test(p.name)) {
    throw invalid(String(p.name), '"name" must be a lowercase name (letters, digits, "-")');
  }
  const name = p.name;
  if (typeof p.description !== 'string') throw invalid(name, '"description" must be a string');
  if (!isObject(p.configSchema)) throw invalid(name, '"configSchema" must be a TypeBox schema object');
  if (!Array.isArray(p.emits)) throw invalid(name, '"emits" must be an array of event types');
  if (!isObject(p.provider)) throw invalid(name, '"provider" must be an object of provider handlers');
  if (!Array.isArray(p.actionTypes)) throw invalid(name, '"actionTypes" must be an array');
  for (const type of p.actionTypes as unknown[]) {
    if (!isObject(type) || typeof type.name !== 'string' || !isObject(type.kinds)) {
      throw invalid(name, 'each action type needs a string "name" and an object "kinds"');
    }
    for (const [kind, definition] of Object.entries(type.kinds)) {
      if (definition === undefined) continue;
      if (!isObject(definition) || !isObject(definition.specSchema) || !isObject(definition.handlers)) {
        throw invalid(name, `${kind} of action type "${type.name}" needs a "specSchema" and "handlers"`);
      }
      for (const [handler, fn] of Object.entries(definition.handlers)) {
        if (typeof fn !== 'function') {
          throw invalid(name, `${kind} handler "${handler}" of action type "${type.name}" is not a function`);
        }
      }
      if (definition.versionInputs !== undefined && typeof definition.versionInputs !== 'function') {
        throw invalid(name, `${kind} "versionInputs" of action type "${type.name}" is not a function`);
      }
    }
  }
}

export function validatePlugins(plugins: readonly PluginDefinition[]): void {
  const typeOwners = new Map<string, string>();
  const names = new Set<string>();
  const targetKinds = new Map<string, string>();
  for (const plugin of plugins) {
    checkShape(plugin);
    if (names.has(plugin.name)) throw invalid(plugin.name, 'registered twice');
    names.add(plugin.name);
    for (const type of plugin.emits) {
      if (!isEventType(type)) throw invalid(plugin.name, `declares unknown event type "${type}"`);
    }
    for (const handler of providerHandlerNames) {
      if (typeof plugin.provider[handler] !== 'function') {
        throw invalid(plugin.name, `provider handler "${handler}" is missing`);
      }
    }
    for (const handler of optionalProviderHandlerNames) {
      const fn = plugin.provider[handler];
      if (fn !== undefined && typeof fn !== 'function') {
        throw invalid(plugin.name, `provider handler "${handler}" is not a function`);
      }
    }
    if (plugin.cleanup !== undefined) checkCleanup(plugin, targetKinds);
    for (const type of plugin.actionTypes) {
      const owner = typeOwners.get(type.name);
      if (owner)
        throw invalid(plugin.name, `action type "${type.name}" is already provided by plugin "${owner}"`);
      typeOwners.set(type.name, plugin.name);
      for (const [kind, definition] of Object.entries(type.kinds)) {
        if (!actionKinds.includes(kind as ActionKind)) {
          throw invalid(plugin.name, `action type "${type.name}" declares unknown kind "${kind}"`);
        }
        if (!definition) continue;
        const expected: readonly string[] = actionHandlerNames[kind as ActionKind];
        const optional: readonly string[] = optionalActionHandlerNames[kind as ActionKind];
        const given = Object.keys(definition.handlers);
        const missing = expected.filter((h) => !given.includes(h));
        const unknown = given.filter((h) => !expected.includes(h) && !optional.includes(h));
        if (missing.length > 0 || unknown.length > 0) {
          throw invalid(
            plugin.name,
            `${kind} handlers of type "${type.name}": ` +
              [
                missing.length ? `missing ${missing.join(', ')}` : '',
                unknown.length
                  ? `unknown ${unknown.join(', ')} (expected ${[...expected, ...optional.map((h) => `${h}?`)].join(', ')})`
                  : '',
              ]
                .filter(Boolean)
                .join('; '),
          );
        }
      }
    }
  }
}

/** The cleanup part: every handler, a target kind of its own, and a schema of its executor settings. */
function checkCleanup(plugin: PluginDefinition, targetKinds: Map<string, string>): void {
  const cleanup = plugin.cleanup!;
  for (const handler of cleanupHandlerNames) {
    if (typeof cleanup[handler] !== 'function')
      throw invalid(plugin.name, `cleanup handler "${handler}" is missing`);
  }
  if (cleanup.restore !== undefined && typeof cleanup.restore !== 'function')
    throw invalid(plugin.name, 'cleanup handler "restore" is optional, and must be a function when given');
  const kind = cleanup.targetKind;
  if (typeof kind !== 'string' || !/^[a-z][a-z0-9-]{0,62}$/.test(kind) || kind === 'plugin') {
    throw invalid(
      plugin.name,
      `cleanup.targetKind must be a lower-case name (letters, digits, "-"), got ${JSON.stringify(kind)}`,
    );
  }
  const owner = targetKinds.get(kind);
  if (owner)
    throw invalid(plugin.name, `cleanup.targetKind "${kind}" is already declared by plugin "${owner}"`);
  targetKinds.set(kind, plugin.name);
  if (typeof cleanup.settingsSchema !== 'object' || cleanup.settingsSchema === null) {
    throw invalid(plugin.name, 'cleanup.settingsSchema must be a schema of its executor settings');
  }
  if (cleanup.settingsFromFlags !== undefined && typeof cleanup.settingsFromFlags !== 'function') {
    throw invalid(plugin.name, 'cleanup.settingsFromFlags is not a function');
  }
}
