/**
 * The actions an action's templates read in the chosen environment: a reference in a branch the
 * environment does not use (`?:`, `$if`/`$then`/`$else`, `${if}…${else}…${endif}`, the right of
 * `&&`/`||`) is none, as in Garden (core/src/config/references.ts getActionTemplateReferences
 * follows the active branch only). A condition that reads what is known only once an action ran
 * (its outputs), or that fails, keeps both branches; evaluation itself reads the used branch only.
 */
import { TendError } from '../errors.js';
import { actionsPathOf, refsOfKind, unknownActionReference } from './action-references.js';
import { actionContext } from './action-variables.js';
import { branchTestOf } from './branch-test.js';
import type { ActionConfig } from './project.js';
import { actionReferencesOf, eachValueLookup, type TemplateContext } from './template.js';

/**
 * The action with the references of its spec and own variables in the environment of `context`.
 * Throws, at its line, a reference in a branch the environment uses to an action that is not
 * among `known` (one in a branch was not an error when the configuration was read: cross-check.ts).
 */
export function withEnvironmentReferences(
  action: ActionConfig,
  context: TemplateContext,
  known: ReadonlySet<string>,
): ActionConfig {
  const test = branchTestOf(actionContext(action, context));
  eachValueLookup(
    action.spec,
    (lookup, path) => {
      const [kind, name] = actionsPathOf(lookup.root, lookup.path) ?? [];
      if (typeof kind !== 'string' || typeof name !== 'string' || known.has(`${kind}.${name}`)) return;
      const ref = `${kind}.${name}`;
      throw new TendError('TEND_TEMPLATE', unknownActionReference(ref, lookup.text, refsOfKind(known, ref)), {
        location: action.locate(['spec', ...path]),
      });
    },
    test,
  );
  return {
    ...action,
    environmentReferences: actionReferencesOf([action.spec, action.variableLayers ?? []], test),
  };
}
