/**
 * The actions an action's templates read in the chosen environment: a reference in a branch the
 * environment does not use (`?:`, `$if`/`$then`/`$else`, `${if}…${else}…${endif}`, the right of
 * `&&`/`||`) is none, as in Garden (core/src/config/references.ts getActionTemplateReferences
 * follows the active branch only). A condition that reads what is known only once an action ran
 * (its outputs), or that fails, keeps both branches; evaluation itself reads the used branch only.
 */
import { evaluateExpression, isTruthy, Missing } from '../expressions/evaluate.js';
import type { BranchTest } from '../expressions/lookups.js';
import { actionContext } from './action-variables.js';
import type { ActionConfig } from './project.js';
import { actionReferencesOf, templateScope, type TemplateContext } from './template.js';

/** Which way a condition goes in a context, when it reads only what is known before anything runs. */
function branchTestOf(context: TemplateContext): BranchTest {
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

/** The action with the references of its spec and own variables in the environment of `context`. */
export function withEnvironmentReferences(action: ActionConfig, context: TemplateContext): ActionConfig {
  const test = branchTestOf(actionContext(action, context));
  return {
    ...action,
    environmentReferences: actionReferencesOf([action.spec, action.variableLayers ?? []], test),
  };
}
