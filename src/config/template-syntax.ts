/**
 * How a project's templates read a `?` right after `${…}` (docs/templates.md#optional-values):
 * the choice the expression language (src/expressions/syntax.ts) is given.
 *
 * - A tend project (tend.yml, which has no apiVersion): tend's own syntax. A value that is one
 *   `${…}?` and nothing else is optional (a key that is not there leaves the value out); after
 *   an expression within a longer string the `?` is text.
 * - A Garden project: Garden's for its Project's apiVersion, in every file of the project, as
 *   Garden decides it (the Project's apiVersion, not each document's: Garden 0.13 ignores an
 *   action's, a module's and a template's). Without one (Garden assumes garden.io/v0), with
 *   garden.io/v0 or v1: every `${…}?` is optional, within a string too (a missing key gives
 *   nothing there), as Garden 0.12 and 0.13 read it; with garden.io/v2 the `?` is text (Garden
 *   0.13 adds it to the value, and a missing key is an error; 0.14 removed the syntax).
 */
import type { SyntaxOptions } from '../expressions/syntax.js';

export const tendTemplateSyntax: SyntaxOptions = { optionalSuffix: 'whole-value' };
const gardenOptionalSyntax: SyntaxOptions = { optionalSuffix: 'every-expression' };
const gardenV2Syntax: SyntaxOptions = { optionalSuffix: 'text' };

/**
 * Whether a templated file under Garden's older key (`files`) keeps an expression naming a key
 * that is not there as written: in a Garden project of apiVersion garden.io/v0 or v1, as Garden
 * 0.13 resolves such files (legacyAllowPartial); the projects whose `${…}?` is optional everywhere.
 */
export function keepsUnknownKeysInLegacyFiles(syntax: SyntaxOptions | undefined): boolean {
  return syntax?.optionalSuffix === 'every-expression';
}

/** The template syntax of a project whose Project document is `gardenProject` (undefined: tend.yml). */
export function projectTemplateSyntax(gardenProject: Record<string, unknown> | undefined): SyntaxOptions {
  if (gardenProject === undefined) return tendTemplateSyntax;
  return gardenProject.apiVersion === 'garden.io/v2' ? gardenV2Syntax : gardenOptionalSyntax;
}
