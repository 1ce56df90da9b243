/**
 * An action's `timeout:` when it holds `${…}` (`timeout: ${var.timeout}`, as in Garden's own
 * e2e.garden.yml): resolved once the environment is chosen (resolve-templates.ts) with the
 * action's variables, and checked then, as Garden resolves its built-in keys before checking them.
 */
import { TendError } from '../errors.js';
import { schemaCheck } from '../schema-check.js';
import { valueText } from './action-dependencies.js';
import { actionContext } from './action-variables.js';
import type { ActionConfig, ConfigPath } from './project.js';
import { gardenTimeout, parseTimeout, TimeoutSchema, timeoutExpected } from './schema.js';
import { resolveTemplates, type TemplateContext } from './template.js';

/** The action with its templated `timeout:` resolved in its context in the chosen environment. */
export function withEnvironmentTimeout(action: ActionConfig, context: TemplateContext): ActionConfig {
  const { timeoutTemplate, ...rest } = action;
  if (timeoutTemplate === undefined) return action;
  const at = (p: ConfigPath = []) => action.locate(['timeout', ...p]);
  const value = resolveTemplates(timeoutTemplate, actionContext(action, context), at);
  // An optional `${…}?` not there: the action type's default, as when no timeout is written.
  if (value === undefined || value === null) return rest;
  // --var gives text: seconds as text are seconds, as Garden's schema converts them.
  const duration = gardenTimeout(value);
  if (!schemaCheck(TimeoutSchema).Check(duration)) {
    throw new TendError(
      'TEND_CONFIG_INVALID',
      `timeout ${valueText(timeoutTemplate)} of ${action.ref} resolves to ${valueText(value).slice(0, 200)}; ` +
        `expected ${timeoutExpected}`,
      { location: at() },
    );
  }
  return { ...rest, timeout: parseTimeout(duration as number | string) };
}
