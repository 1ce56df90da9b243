/**
 * Which way a branch's condition (`?:`, `$if`, `${if}`, `&&`/`||`) goes in an environment, for
 * the references a template makes there: Garden follows only the branch that will be used when
 * the condition is known (core/src/template/analysis.ts getContextLookupReferences).
 */
import { evaluateExpression, isTruthy, Missing } from '../expressions/evaluate.js';
import type { BranchTest } from '../expressions/lookups.js';
import { templateScope, type TemplateContext } from './template.js';

/** Which way a condition goes in a context, when it reads only what is known before anything runs. */
export function branchTestOf(context: TemplateContext): BranchTest {
  const scope = templateScope(context);
  return (condition) => {
    try {
      const value = evaluateExpression(condition, scope);
      return value instanceof Missing ? undefined : isTruthy(value);
    } catch {
      // Not known here (or wrong): both branches count, and resolving the value says what is wrong.
      return undefined;
    }
  };
}
