/**
 * An action's `source:`, the directory its files are read from, and its `include:` / `exclude:`,
 * which of them are its sources: checked when the configuration is read, or, when they hold `${…}`
 * (Garden resolves them with the project's variables), once the environment is chosen
 * (resolve-templates.ts), with the same checks.
 */
import { statSync } from 'node:fs';
import path from 'node:path';
import { TendError } from '../errors.js';
import type { SyntaxOptions } from '../expressions/syntax.js';
import { valueText } from './action-dependencies.js';
import { actionContext } from './action-variables.js';
import type { ConfigProblem } from './diagnostics.js';
import type { ActionConfig, ConfigPath, Locate, PatternKey } from './project.js';
import {
  checkTemplateSyntax,
  containsTemplate,
  resolvePathTemplate,
  resolveTemplates,
  type TemplateContext,
} from './template.js';

/** What is wrong with a source directory, or undefined: outside the project, or not a directory. */
export function sourceProblem(
  source: string,
  sourceDir: string,
  root: string,
  isDirectory: (dir: string) => boolean,
): string | undefined {
  const relative = path.relative(root, sourceDir);
  if (relative.startsWith('..') || path.isAbsolute(relative))
    return `source "${source}" is outside the project root`;
  if (!isDirectory(sourceDir)) {
    return `source directory "${source}" does not exist (resolved to ${relative || '.'} in the project)`;
  }
  return undefined;
}

/** The action with its templated `source:` resolved in the environment's context, and checked. */
export function withEnvironmentSource(
  action: ActionConfig,
  context: TemplateContext,
  root: string,
): ActionConfig {
  const { sourceTemplate, ...rest } = action;
  if (!sourceTemplate) return action;
  const at = () => action.locate(['source']);
  const given = resolvePathTemplate(sourceTemplate.path, context, at, 'source', 'a directory');
  const sourceDir = path.resolve(sourceTemplate.dir, given);
  const problem = sourceProblem(
    given,
    sourceDir,
    root,
    (dir) => statSync(dir, { throwIfNoEntry: false })?.isDirectory() === true,
  );
  if (problem) {
    throw new TendError('TEND_CONFIG_INVALID', `${problem} (from "${sourceTemplate.path}")`, {
      location: at(),
    });
  }
  return { ...rest, sourceDir };
}

export const patternKeys: readonly PatternKey[] = ['include', 'exclude'];

/**
 * Keys Garden resolves before any action runs (`include:`, `exclude:`, `timeout:`) split: the
 * value to check against the schema (without a templated one), and the templated ones as written,
 * each checked for syntax, and for what Garden cannot know there (another action's outputs), at
 * its line.
 */
export function splitEnvironmentTemplates<Key extends string>(
  value: Record<string, unknown>,
  keys: readonly Key[],
  ref: string,
  locate: Locate,
  options: { syntax: SyntaxOptions; extraRoots: readonly string[] },
  problems: ConfigProblem[],
): { checked: Record<string, unknown>; templates?: Partial<Record<Key, unknown>> } {
  const templated = keys.filter((key) => containsTemplate(value[key]));
  if (templated.length === 0) return { checked: value };
  const checked = { ...value };
  const templates: Partial<Record<Key, unknown>> = {};
  const resolvedEarly = `${keys.join(' and ')} ${keys.length > 1 ? 'are' : 'is'} resolved before any action runs`;
  for (const key of templated) {
    templates[key] = value[key];
    delete checked[key];
    const syntax = checkTemplateSyntax(value[key], [key], (p) => locate(p), {
      ...options,
      deferActionProblems: true,
    });
    problems.push(...syntax.problems);
    for (const reference of syntax.actionReferences) {
      problems.push({
        code: 'TEND_CONFIG_INVALID',
        message:
          `${key} of ${ref} reads "${reference.text}": ${resolvedEarly}, ` +
          'with the project, environment, variables, local, git, secrets and this (as Garden resolves them); use a variable',
        location: locate(reference.path),
      });
    }
  }
  return { checked, templates };
}

/**
 * The action with its templated `include:` / `exclude:` resolved in its context in the chosen
 * environment (as Garden resolves them, before any action runs), each entry a file pattern;
 * throws the first value that is not one at its line.
 */
export function withEnvironmentPatterns(action: ActionConfig, context: TemplateContext): ActionConfig {
  const { patternTemplates, ...rest } = action;
  if (!patternTemplates) return action;
  const own = actionContext(action, context);
  const resolved: ActionConfig = { ...rest };
  for (const key of patternKeys) {
    const written = patternTemplates[key];
    if (written === undefined) continue;
    // Entry by entry, so that a problem is at its entry's line (a `$concat` gives several).
    const entries: [unknown, ConfigPath][] = Array.isArray(written)
      ? written.map((entry, i) => [[entry], [key, i]])
      : [[written, [key]]];
    resolved[key] = entries.flatMap(([entry, at]) => {
      const where = (p: ConfigPath = []) =>
        action.locate(Array.isArray(written) ? [...at, ...p.slice(1)] : [...at, ...p]);
      const value = resolveTemplates(entry, own, where);
      const items = value === null || value === undefined ? [] : Array.isArray(value) ? value : [value];
      if (items.some((item) => typeof item !== 'string')) {
        const text = Array.isArray(written) ? written[at[1] as number] : written;
        const shown = Array.isArray(value) && value.length === 1 ? value[0] : value;
        throw new TendError(
          'TEND_CONFIG_INVALID',
          `${key} ${typeof text === 'string' ? `"${text}"` : valueText(text)} of ${action.ref} resolves to ` +
            `${valueText(shown).slice(0, 200)}; expected a file pattern (a string) or a list of them`,
          { location: where() },
        );
      }
      return items as string[];
    });
  }
  return resolved;
}
