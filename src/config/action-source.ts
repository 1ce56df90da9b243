/**
 * An action's `source:`, the directory its files are read from: checked when the configuration is
 * read, or, when it holds `${…}` (Garden resolves `source.path` with the project's variables), once
 * the environment is chosen (resolve-templates.ts), with the same checks.
 */
import { statSync } from 'node:fs';
import path from 'node:path';
import { TendError } from '../errors.js';
import type { ActionConfig } from './project.js';
import { resolvePathTemplate, type TemplateContext } from './template.js';

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
