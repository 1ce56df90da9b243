/**
 * The reference of every action type's `spec`, as Markdown for docs/configuration.md, generated
 * from the plugins' spec schemas so that the page cannot drift from what tend checks (a test
 * compares the page with this output).
 */
import type { TSchema } from 'typebox';
import { actionKinds } from '../plugin/types.js';
import type { ActionKind, PluginDefinition } from '../plugin/types.js';

export const specReferenceStart =
  '<!-- generated from the spec schemas: test/config/spec-reference.test.ts (UPDATE_DOCS=1 rewrites it) -->';
export const specReferenceEnd = '<!-- end of the generated spec reference -->';

interface Row {
  key: string;
  required: boolean;
  type: string;
  description: string;
}

type Schema = TSchema & Record<string, unknown>;

/** A value's type in words: `string`, `list of strings`, `mapping of string to string`. */
function describeType(schema: Schema, plural = false): string {
  const s = (word: string) => (plural ? `${word}s` : word);
  if (Array.isArray(schema.anyOf)) {
    return (schema.anyOf as Schema[]).map((item) => describeType(item, plural)).join(' or ');
  }
  if (schema.const !== undefined) return `\`${JSON.stringify(schema.const)}\``;
  switch (schema.type) {
    case 'string':
      return s('string');
    case 'number':
    case 'integer':
      return s('number');
    case 'boolean':
      return s('boolean');
    case 'array':
      return `list of ${describeType(schema.items as Schema, true)}`;
    case 'object': {
      const values = Object.values((schema.patternProperties as Record<string, Schema> | undefined) ?? {});
      if (schema.properties) return s('mapping');
      const value = values[0];
      if (!value || Object.keys(value).length === 0) return plural ? 'mappings' : 'mapping';
      return `${plural ? 'mappings' : 'mapping'} of name to ${describeType(value)}`;
    }
    default:
      return 'any value';
  }
}

/** The rows of an object schema: its keys, and the keys of nested mappings as `parent.key`. */
function rowsOf(schema: Schema, prefix = ''): Row[] {
  const properties = (schema.properties as Record<string, Schema> | undefined) ?? {};
  const required = new Set((schema.required as string[] | undefined) ?? []);
  const rows: Row[] = [];
  for (const [key, property] of Object.entries(properties)) {
    const name = `${prefix}${key}`;
    rows.push({
      key: name,
      required: required.has(key),
      type: describeType(property),
      description: typeof property.description === 'string' ? property.description : '',
    });
    if (property.type === 'object' && property.properties) rows.push(...rowsOf(property, `${name}.`));
  }
  return rows;
}

const cell = (text: string) => text.replaceAll('|', '\\|').replaceAll('\n', ' ');

function table(rows: Row[]): string[] {
  if (rows.length === 0) return ['No keys: `spec` is empty or left out.'];
  return [
    '| Key | Required | Type | Value |',
    '| --- | --- | --- | --- |',
    ...rows.map(
      (r) => `| \`${r.key}\` | ${r.required ? 'yes' : 'no'} | ${cell(r.type)} | ${cell(r.description)} |`,
    ),
  ];
}

/** Keys of spec schemas that have no description (a reference row would say nothing). */
export function undocumentedSpecKeys(plugins: readonly PluginDefinition[]): string[] {
  const missing: string[] = [];
  for (const plugin of plugins) {
    for (const type of plugin.actionTypes) {
      for (const kind of actionKinds) {
        const spec = type.kinds[kind]?.specSchema as Schema | undefined;
        if (!spec) continue;
        for (const row of rowsOf(spec)) {
          if (!row.description) missing.push(`${type.name} ${kind} spec.${row.key}`);
        }
      }
    }
  }
  return missing;
}

/**
 * Markdown: one section per action type (provider, kinds, description), one table per distinct
 * spec schema; kinds with the same schema share a table.
 */
export function renderSpecReference(plugins: readonly PluginDefinition[]): string {
  const lines: string[] = [specReferenceStart, ''];
  for (const plugin of plugins) {
    for (const type of plugin.actionTypes) {
      const kinds = actionKinds.filter((kind) => type.kinds[kind]);
      lines.push(`### Type \`${type.name}\``, '');
      lines.push(
        `Provider \`${plugin.name}\`; kinds: ${kinds.join(', ')}. ${type.description.charAt(0).toUpperCase()}${type.description.slice(1)}.`,
        '',
      );
      const groups = new Map<string, ActionKind[]>();
      for (const kind of kinds) {
        const key = JSON.stringify(type.kinds[kind]!.specSchema);
        groups.set(key, [...(groups.get(key) ?? []), kind]);
      }
      for (const group of groups.values()) {
        const spec = type.kinds[group[0]!]!.specSchema as Schema;
        lines.push(`\`spec\` of ${group.join(', ')}:`, '', ...table(rowsOf(spec)), '');
      }
    }
  }
  lines.push(specReferenceEnd);
  return lines.join('\n');
}
