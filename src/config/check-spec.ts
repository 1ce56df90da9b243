/**
 * The last step of the configuration pipeline (pipeline.ts), per action: its spec once its
 * template expressions are resolved, checked against its action type's schema again, and the
 * files its type resolves as templated text checked before anything runs.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Type, type TSchema } from 'typebox';
import { Value } from 'typebox/value';
import type {
  ActionWarning,
  CheckActionParams,
  EnvironmentProblem,
  PluginDefinition,
  TemplateFiles,
} from '../plugin/types.js';
import { checkSchema, configError, type ConfigProblem } from './diagnostics.js';
import { convertScalars } from './convert-scalars.js';
import { actionContext } from './action-variables.js';
import type { TemplateContext } from './template-context.js';
import { checkTemplateText } from './template-text.js';
import type { SourceLocation } from '../errors.js';
import { inRenderedConfig, type ActionConfig, type ProviderEntry } from './project.js';
import type { ConfigNote } from './read-documents.js';
import { actionTypeIndex } from './schema.js';
import { containsTemplate } from './template.js';
import { directDependencies } from './build-keys.js';
import { varPathKeys } from './var-overrides.js';

const templated = new WeakMap<ActionConfig, boolean>();

/** The definition of an action's kind of its type (the first plugin's that declares the type). */
function kindOf(action: ActionConfig, plugins: readonly PluginDefinition[]) {
  return plugins.flatMap((p) => p.actionTypes).find((t) => t.name === action.type)?.kinds[action.kind];
}

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
 * string; `"8080"` where it wants a number, as Garden's Joi converts it: convert-scalars.ts). Then the values that were templates when loading are
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
  const converted = convertScalars(specSchema, spec, { numbersToText: true });
  const problems = checkSchema(specSchema, converted, {
    basePath: ['spec'],
    rootLabel: 'spec',
    skipTemplated: true,
    locate: (p) => action.locate(p),
  });
  if (problems.length > 0) {
    throw configError(
      problems.map((p) => ({
        ...p,
        message: inRenderedConfig(`${p.message} (after resolving template expressions)`, action.rendered),
      })),
    );
  }
  return converted;
}

/**
 * The problems of the files an action's handlers resolve as templated text (manifest templates),
 * found before anything runs. A file its type cannot list (missing, say) is left to the handler,
 * which reports it when the action runs.
 */
export async function templateFileProblems(
  root: string,
  action: ActionConfig,
  spec: unknown,
  context: TemplateContext,
  plugins: readonly PluginDefinition[],
): Promise<{ problems: ConfigProblem[]; notes: ConfigNote[] }> {
  const none = { problems: [], notes: [] };
  const templateFiles = kindOf(action, plugins)?.templateFiles;
  if (!templateFiles) return none;
  let listed: TemplateFiles;
  try {
    listed = await templateFiles({
      sourceDir: action.sourceDir,
      projectRoot: root,
      spec: structuredClone(spec),
    });
  } catch {
    return none;
  }
  const own = actionContext(action, context);
  // What runs before the action, as the graph has it: what its files may read the outputs of.
  const refs = new Set(directDependencies(action, () => true).refs);
  const legacy = new Set(listed.legacy ?? []);
  const checked = listed.files.map((file) =>
    checkTemplateText(readFileSync(file, 'utf8'), own, {
      file: path.relative(root, file),
      hint: listed.hint,
      dependencies: { of: action.ref, refs },
      ...(legacy.has(file) ? { legacy: true } : {}),
    }),
  );
  return {
    // A rendered action's files may be another rendering's too: which one it is is said.
    problems: checked.flatMap((c) =>
      c.problems.map((found) => ({ ...found, message: inRenderedConfig(found.message, action.rendered) })),
    ),
    notes: checked.flatMap((c) => [
      ...c.kept.map(({ message, location }) => ({ message, location })),
      ...c.undeclared.map(({ variable, location }) => undeclaredVariableNote(action, variable, location)),
    ]),
  };
}

/**
 * An action reading a variable nothing declares, or a key its declared variable does not hold
 * (`creds.user`), in its spec or its templated files: a note, not a problem. As Garden resolves
 * both only to run the action, it is one run with `--var` (`tend run propose --var node=…`), and
 * fails without it.
 */
export function undeclaredVariableNote(
  action: ActionConfig,
  variable: string,
  location: SourceLocation,
): ConfigNote {
  const [declared, ...inside] = varPathKeys(variable);
  const unheld =
    inside.length > 0 ? `which variable "${String(declared)}" does not hold` : 'which nothing declares';
  const message = `${action.ref} reads variable "${variable}", ${unheld}: it runs only when given one (--var ${variable}=…)`;
  return { message, location };
}

/**
 * A plugin check's answer (`checkAction`, `checkEnvironment`): its items that fit `schema`. What
 * does not fit is left out and does not cost the others; a rejection, or an answer that is not a
 * list, is none (the handler or `init` meets the same problem when it runs).
 */
async function pluginAnswer<T>(ask: () => Promise<unknown>, schema: TSchema): Promise<T[]> {
  let found: unknown;
  try {
    found = await ask();
  } catch {
    return [];
  }
  return Array.isArray(found) ? found.filter((item): item is T => Value.Check(schema, item)) : [];
}

const ActionWarningSchema = Type.Object({
  message: Type.String({ minLength: 1, maxLength: 4096 }),
  specPath: Type.Optional(
    Type.Array(Type.Union([Type.String({ maxLength: 256 }), Type.Integer({ minimum: 0 })]), { maxItems: 64 }),
  ),
  file: Type.Optional(Type.String({ minLength: 1, maxLength: 4096 })),
  line: Type.Optional(Type.Integer({ minimum: 1 })),
  column: Type.Optional(Type.Integer({ minimum: 1 })),
});

/**
 * What an action's type warns of (`checkAction`: what its handlers will refuse), located in the
 * action's file or in the file it names. A rejection is left to the handler, which reports it when
 * the action runs.
 */
export async function actionWarnings(
  action: ActionConfig,
  plugins: readonly PluginDefinition[],
  params: CheckActionParams,
): Promise<ConfigNote[]> {
  const checkAction = kindOf(action, plugins)?.checkAction;
  if (!checkAction) return [];
  const warnings = await pluginAnswer<ActionWarning>(
    () => checkAction({ ...params, spec: structuredClone(params.spec) }),
    ActionWarningSchema,
  );
  return warnings.map((warning) => ({
    message: `${action.ref}: ${warning.message}`,
    location: warning.specPath
      ? action.locate(['spec', ...warning.specPath])
      : warning.file
        ? {
            file: path.relative(params.projectRoot, path.resolve(params.sourceDir, warning.file)),
            line: warning.line ?? 1,
            column: warning.column ?? 1,
          }
        : action.location,
  }));
}

const EnvironmentProblemSchema = Type.Object({
  message: Type.String({ minLength: 1, maxLength: 4096 }),
  configPath: Type.Optional(
    Type.Array(Type.Union([Type.String({ maxLength: 256 }), Type.Integer({ minimum: 0 })]), { maxItems: 64 }),
  ),
});

/**
 * What a provider's `init` would refuse for the environment (`checkEnvironment`), as configuration
 * errors: in the provider's entry, or at the environment's namespace. A rejection, or an answer
 * that is not a list of problems, is left to `init`, which meets the same problem when it runs.
 */
export async function environmentProblems(
  plugin: PluginDefinition,
  entry: ProviderEntry,
  params: { providerConfig: Record<string, unknown>; environment: { name: string; namespace: string } },
  locateNamespace: () => SourceLocation,
): Promise<ConfigProblem[]> {
  if (!plugin.checkEnvironment) return [];
  const checkEnvironment = plugin.checkEnvironment;
  const problems = await pluginAnswer<EnvironmentProblem>(
    () => checkEnvironment(structuredClone(params)),
    EnvironmentProblemSchema,
  );
  return problems.map((problem) => ({
    code: 'TEND_CONFIG_INVALID',
    message: `provider ${plugin.name}: ${problem.message}`,
    location: problem.configPath ? entry.locate(problem.configPath) : locateNamespace(),
  }));
}
