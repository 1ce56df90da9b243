/**
 * The last step of the configuration pipeline (pipeline.ts), per action: its spec once its
 * template expressions are resolved, checked against its action type's schema again.
 */
import { Value } from 'typebox/value';
import type { PluginDefinition } from '../plugin/types.js';
import { checkSchema, configError } from './diagnostics.js';
import type { ActionConfig } from './project.js';
import { actionTypeIndex } from './schema.js';
import { containsTemplate } from './template.js';

const templated = new WeakMap<ActionConfig, boolean>();

/** Whether any string of the action's spec holds a template expression (`${`). */
function hasTemplates(action: ActionConfig): boolean {
  let known = templated.get(action);
  if (known === undefined) {
    known = containsTemplate(action.spec);
    templated.set(action, known);
  }
  return known;
}

/**
 * An action's spec once its template expressions are resolved, made to fit the action type's
 * spec schema: a single-expression template keeps its value's type (`port: ${var.port}` gives a
 * number), so scalars are converted where the schema wants another one (a number where it wants a
 * string, `"8080"` where it wants a number). Then the values that were templates when loading are
 * checked. Throws TEND_CONFIG_INVALID naming the value's file:line:column.
 */
export function checkResolvedSpec(
  action: ActionConfig,
  spec: unknown,
  plugins: readonly PluginDefinition[],
): unknown {
  const specSchema = actionTypeIndex(plugins).get(action.type)?.kinds.get(action.kind);
  // Without a template the spec resolves to itself, which the load checked in full.
  if (!specSchema || !hasTemplates(action)) return spec;
  const converted = Value.Convert(specSchema, structuredClone(spec));
  const problems = checkSchema(specSchema, converted, {
    basePath: ['spec'],
    rootLabel: 'spec',
    skipTemplated: true,
    locate: (p) => action.locate(p),
  });
  if (problems.length > 0) {
    throw configError(
      problems.map((p) => ({ ...p, message: `${p.message} (after resolving template expressions)` })),
    );
  }
  return converted;
}
