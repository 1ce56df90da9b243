/**
 * Plugin declarations are checked when a plugin is registered, not at its first call: unknown
 * event types, missing or unknown handlers, and action types declared twice fail with a coded
 * error naming the plugin. A plugin's optional `cleanup` part must have all three handlers.
 */
import { TendError } from '../errors.js';
import { isEventType } from '../events/catalog.js';
import {
  actionHandlerNames,
  actionKinds,
  cleanupHandlerNames,
  providerHandlerNames,
  type ActionKind,
  type PluginDefinition,
} from './types.js';

function invalid(plugin: string, message: string): TendError {
  return new TendError('TEND_PLUGIN_INVALID', `plugin "${plugin}": ${message}`, { plugin });
}

export function validatePlugins(plugins: readonly PluginDefinition[]): void {
  const typeOwners = new Map<string, string>();
  const names = new Set<string>();
  for (const plugin of plugins) {
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
    if (plugin.cleanup !== undefined) {
      for (const handler of cleanupHandlerNames) {
        if (typeof plugin.cleanup?.[handler] !== 'function') {
          throw invalid(plugin.name, `cleanup handler "${handler}" is missing`);
        }
      }
    }
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
        const given = Object.keys(definition.handlers);
        const missing = expected.filter((h) => !given.includes(h));
        const unknown = given.filter((h) => !expected.includes(h));
        if (missing.length > 0 || unknown.length > 0) {
          throw invalid(
            plugin.name,
            `${kind} handlers of type "${type.name}": ` +
              [
                missing.length ? `missing ${missing.join(', ')}` : '',
                unknown.length ? `unknown ${unknown.join(', ')} (expected ${expected.join(', ')})` : '',
              ]
                .filter(Boolean)
                .join('; '),
          );
        }
      }
    }
  }
}
