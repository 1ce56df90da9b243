/**
 * Plugin declarations are checked when a plugin is registered, not at its first call: the shape
 * of the definition (a third-party module may export anything), unknown event types, missing or
 * unknown handlers, and action types declared twice fail with a coded error naming the plugin. A
 * plugin's optional `cleanup` part must have all three handlers, a target kind no other plugin
 * declares, and a schema of its executor settings. A plugin's own event types are named in its
 * own namespace (`<plugin>.<name>`), never a core type's name, each with a usable payload schema;
 * once every plugin passed, this process knows their declarations (the outbox streams by them).
 */
import { isFrameworkCheck } from './cleanup-wrap.js';
import { TendError } from '../errors.js';
import { isEventType } from '../events/catalog.js';
import {
  isPluginEventType,
  pluginEventMetadataFields,
  registerPluginEventTypes,
  type PluginEventTypeDefinition,
} from '../events/plugin-types.js';
import { schemaCheck } from '../schema-check.js';
import { textProblem } from '../storable.js';
import {
  actionHandlerNames,
  actionKinds,
  cleanupHandlerNames,
  optionalCleanupHandlerNames,
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
  if (p.checkEnvironment !== undefined && typeof p.checkEnvironment !== 'function') {
    throw invalid(name, '"checkEnvironment" is not a function');
  }
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
      for (const hook of ['versionInputs', 'templateFiles', 'checkAction'] as const) {
        if (definition[hook] !== undefined && typeof definition[hook] !== 'function') {
          throw invalid(name, `${kind} "${hook}" of action type "${type.name}" is not a function`);
        }
      }
    }
  }
}

/** A name as an error shows it: quoted, cut to 128 characters, NUL and lone surrogates escaped. */
function shownName(value: unknown): string {
  return typeof value === 'string' ? JSON.stringify(value.slice(0, 128)) : typeof value;
}

/** An unknown type in `emits` that the plugin declares in its namespace: say so. */
function emitsHint(plugin: PluginDefinition, type: unknown): string {
  if (typeof type !== 'string' || type.length > 128) return '';
  const owned = (plugin.eventTypes ?? []).some((d) => d.name === `${plugin.name}.${type}`);
  return owned ? ` (the plugin's own types are named with its namespace: "${plugin.name}.${type}")` : '';
}

/** The plugin's own event types, checked: each in its namespace, once, with a usable schema. */
function checkEventTypes(plugin: PluginDefinition): Set<string> {
  const declared = (plugin as { eventTypes?: unknown }).eventTypes;
  const names = new Set<string>();
  if (declared === undefined) return names;
  if (!Array.isArray(declared))
    throw invalid(plugin.name, '"eventTypes" must be an array of event type declarations');
  for (const definition of declared as unknown[]) {
    if (!isObject(definition)) throw invalid(plugin.name, 'each of "eventTypes" must be an object');
    const name = checkEventTypeName(plugin.name, definition.name);
    const bad = (message: string) => invalid(plugin.name, `event type "${name}": ${message}`);
    if (names.has(name)) throw bad('declared twice');
    names.add(name);
    if (definition.description !== undefined && typeof definition.description !== 'string')
      throw bad('"description" must be a string');
    if (typeof definition.streamed !== 'boolean')
      throw bad('"streamed" must be true (sent to the server) or false (the local log only)');
    checkPayloadSchema(definition.payloadSchema, bad);
    const key = definition.dedupeKey;
    if (
      key !== undefined &&
      (!Array.isArray(key) ||
        key.length === 0 ||
        key.some((field) => typeof field !== 'string' || field.length === 0 || field.length > 128))
    ) {
      throw bad('"dedupeKey" must be a non-empty array of payload field names');
    }
  }
  registerPluginEventTypes(declared as PluginEventTypeDefinition[]);
  return names;
}

/** `<plugin>.<name>` in the plugin's own namespace; never a core type, another plugin's, or unprintable. */
function checkEventTypeName(plugin: string, name: unknown): string {
  if (typeof name !== 'string') throw invalid(plugin, 'each event type needs a string "name"');
  const problem = textProblem(name);
  if (problem) throw invalid(plugin, `event type name ${shownName(name)} ${problem}`);
  if (isEventType(name)) {
    throw invalid(
      plugin,
      `event type "${name}" is a core event type; a plugin's own types are named "${plugin}.<name>"`,
    );
  }
  const namespace = name.includes('.') ? name.slice(0, name.indexOf('.')) : undefined;
  if (namespace !== undefined && namespace !== plugin && namespace.length <= 63) {
    throw invalid(
      plugin,
      `event type ${shownName(name)} is in the namespace of plugin "${namespace}"; this plugin's types are named "${plugin}.<name>"`,
    );
  }
  if (!isPluginEventType(name) || namespace !== plugin) {
    throw invalid(
      plugin,
      `event type name ${shownName(name)} must be "${plugin}.<name>": a letter, then letters, digits, "_" or "-", at most 63 characters`,
    );
  }
  return name;
}

/** A JSON Schema object (TypeBox's are) that can check a value, and declares no metadata field. */
function checkPayloadSchema(schema: unknown, bad: (message: string) => TendError): void {
  if (!isObject(schema)) throw bad('"payloadSchema" must be a JSON Schema object (a TypeBox schema is one)');
  const properties = schema.properties;
  if (isObject(properties)) {
    const reserved = pluginEventMetadataFields.filter((field) => Object.hasOwn(properties, field));
    if (reserved.length > 0) {
      throw bad(`"payloadSchema" declares ${reserved.join(', ')}, which the router stamps on every event`);
    }
  }
  try {
    schemaCheck(schema as PluginEventTypeDefinition['payloadSchema']).Check({});
  } catch (error) {
    throw bad(`"payloadSchema" is not a usable JSON Schema: ${(error as Error).message}`);
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
    const own = checkEventTypes(plugin);
    for (const type of plugin.emits) {
      if (typeof type !== 'string' || (!isEventType(type) && !own.has(type))) {
        throw invalid(
          plugin.name,
          `declares unknown event type ${shownName(type)}${emitsHint(plugin, type)}`,
        );
      }
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
  for (const handler of optionalCleanupHandlerNames) {
    if (cleanup[handler] !== undefined && typeof cleanup[handler] !== 'function')
      throw invalid(
        plugin.name,
        `cleanup handler "${handler}" is optional, and must be a function when given`,
      );
  }
  // The checks are tend's: a plugin supplies primitives, never its own verify-and-clean.
  const own = (cleanup as { verifyAndClean?: unknown }).verifyAndClean;
  if (own !== undefined && !isFrameworkCheck(own)) {
    throw invalid(
      plugin.name,
      'cleanup.verifyAndClean is tend’s own (every check around the primitives): supply read and delete instead (docs/plugin-api.md#cleanup)',
    );
  }
  const words = cleanup.words;
  if (
    words !== undefined &&
    (typeof words?.resource !== 'string' ||
      typeof words.target !== 'string' ||
      !words.resource ||
      !words.target)
  ) {
    throw invalid(plugin.name, 'cleanup.words must name its resources and targets: { resource, target }');
  }
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
