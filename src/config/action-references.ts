/**
 * References to actions in templates (`${actions.<kind>.<name>.<key>}`), as Garden has them:
 * their shapes, what the configuration says of an action (name, disabled, mode, buildPath,
 * sourcePath: known before anything runs), Garden's other roots for them (`runtime.*`, and a
 * 0.12 module's `modules.<name>.*`: the Build it became) and the messages of a reference that is
 * wrong. template-context.ts answers them.
 */
import { closestName } from '../suggest.js';

export const actionKindsLower = ['build', 'deploy', 'test', 'run'];

/**
 * What the configuration says of an action, known before anything runs (Garden's
 * ActionReferenceContext): `actions.<kind>.<name>.name`, `.disabled`, `.mode`, `.buildPath`,
 * `.sourcePath`.
 */
export interface ActionFields {
  name: string;
  /** Whether its `disabled:` or `environments:` leaves it out of the environment (Garden's `isDisabled`). */
  disabled: boolean;
  /** Garden's action mode: tend deploys what is on disk, it has no `sync` or `local` mode. */
  mode: 'default';
  /**
   * Where it builds or runs (absolute): a Build's build directory (its source directory, or
   * `.tend/build/<name>` when it copies files in), a Deploy's, Test's or Run's `build:`'s, else
   * its source directory.
   */
  buildPath: string;
  /** Its source directory (absolute). */
  sourcePath: string;
}

/** The fields of ActionFields, each a key of an action reference. */
export const actionFieldNames: readonly string[] = ['name', 'disabled', 'mode', 'buildPath', 'sourcePath'];

/** Whether a key of an action reference (`actions.<kind>.<name>.<key>`) is known from the configuration. */
export function isActionField(key: unknown): key is keyof ActionFields {
  return typeof key === 'string' && actionFieldNames.includes(key);
}

/** Garden's other names of two action kinds in a reference: `services` (Deploy), `tasks` (Run). */
const kindAliases: Readonly<Record<string, string>> = { services: 'deploy', tasks: 'run' };

/**
 * A lookup as the path under `actions` it reads, for the roots that read actions: `actions`,
 * Garden's `runtime` (the same), and a 0.12 module's `modules.<name>` (the Build the module
 * became: `modules.api.outputs.x` is `actions.build.api.outputs.x`); `services` and `tasks` are
 * Garden's names of the deploy and run kinds. Undefined for the other roots.
 */
export function actionsPathOf<T>(root: string, path: readonly T[]): (T | string)[] | undefined {
  if (root === 'modules') return ['build', ...path];
  if (root !== 'actions' && root !== 'runtime') return undefined;
  const [kind, ...rest] = path;
  return typeof kind === 'string' && Object.hasOwn(kindAliases, kind)
    ? [kindAliases[kind]!, ...rest]
    : [...path];
}

/** What tend gives of a 0.12 container module without a Dockerfile: its image names. */
const imageOnlyOutputKeys = [
  'local-image-name',
  'local-image-id',
  'deployment-image-name',
  'deployment-image-id',
];

/**
 * The outputs Garden gives a 0.12 container module without a Dockerfile (which has no Build), from
 * its `image` (core/src/plugins/container/container.ts, getContainerModuleOutputs): known before
 * anything runs. What Garden computes from the module's version (`deployment-image-tag`,
 * `version`) tend does not have.
 */
export function imageOnlyModuleOutputs(image: string): Record<string, string> {
  // The tag (or digest) is what follows the last path segment's `:` (or `@`): a registry's port stays.
  const lastSegment = image.lastIndexOf('/') + 1;
  const end = image.slice(lastSegment).search(/[:@]/);
  const name = end === -1 ? image : image.slice(0, lastSegment + end);
  // The `-id`s are the image as written, the `-name`s without its tag.
  return Object.fromEntries(imageOnlyOutputKeys.map((key) => [key, key.endsWith('-id') ? image : name]));
}

/**
 * A 0.12 module that became no Build, whose outputs Garden gives before anything runs: a
 * reference to them (`modules.<name>.outputs.<key>`) is written in as the value. Why it has no
 * Build (`a helm module deploys its chart`), and its outputs — what they are, and what Garden gives
 * besides that tend does not have — or why tend has none.
 */
export type BuildlessModule = { why: string } & (
  { outputs: Readonly<Record<string, string>>; gives: string; besides?: string } | { none: string }
);

/**
 * What `modules.<name>.<keys…>` reads of a module without a Build (`keys` start with its name):
 * one of its outputs, or why the reference reads nothing.
 */
export function buildlessModuleOutput(
  module: BuildlessModule,
  keys: readonly string[],
): { value: string } | { problem: string } {
  const [name, field, key] = keys as [string, ...(string | undefined)[]];
  if (field === 'var') return { problem: moduleVariablesProblem(name, key) };
  const problem = `module ${name} has no Build (${module.why}); `;
  if ('none' in module) return { problem: problem + module.none };
  const { outputs, gives, besides = '' } = module;
  const names = Object.keys(outputs);
  // One output is its key as written (`release-name`); of several, `<a|b>` says which there are.
  const keysGiven = names.length === 1 ? names[0] : `<${names.join('|')}>`;
  return field === 'outputs' && keys.length === 3 && Object.hasOwn(outputs, key!)
    ? { value: outputs[key!]! }
    : { problem: `${problem}tend gives modules.${name}.outputs.${keysGiven} (${gives})${besides}` };
}

/**
 * `modules.<name>.var.<key>`: Garden's module variables, of any module, which tend does not read
 * through the module (docs/garden.md); the variable itself is read where it is declared.
 */
function moduleVariablesProblem(name: string, key: string | undefined): string {
  return (
    `a module's variables (modules.${name}.var) are not supported by tend; ` +
    `read the variable itself, \${var.${key ?? '<key>'}}, declared in the project's variables or the reading module's`
  );
}

/** What a 0.12 module's reference reads of it: its Build's outputs and version. */
const moduleFields = ['outputs', 'version'];

/**
 * Why a lookup of a root that reads actions (`actions`, `runtime`, `modules`; its keys, all
 * known) is not a reference to an action, or undefined when it is one. `text` is the lookup as
 * written, for messages.
 */
export function actionLookupProblem(root: string, keys: readonly string[], text: string): string | undefined {
  if (root === 'modules') {
    const [name, field, key] = keys;
    if (field === 'var') return `"${text}": ${moduleVariablesProblem(name!, key)}`;
    const shape = (field === 'outputs' && keys.length === 3) || (field === 'version' && keys.length === 2);
    if (shape) return undefined;
    const similar = field === undefined ? undefined : closestName(field, moduleFields);
    return (
      `invalid module reference "${text}"; expected modules.<name>.outputs.<key> or modules.<name>.version ` +
      `(what tend reads of a module: the Build it became)` +
      (similar !== undefined ? `; did you mean "${[root, keys[0], similar].join('.')}"?` : '')
    );
  }
  return actionReferenceProblem(['actions', ...actionsPathOf(root, keys)!.map(String)], text);
}

/**
 * The message for a template reference (`text`, as written) to an action `ref` that is not
 * defined; `ofKind` lists the actions of its kind. A 0.12 module's reference names the module.
 */
export function unknownActionReference(ref: string, text: string, ofKind: string): string {
  const kind = ref.slice(0, ref.indexOf('.'));
  if (text.startsWith('modules.')) {
    return (
      `unknown module "${ref.slice(kind.length + 1)}" in a template expression ("${text}" reads the Build ` +
      `the module became, ${ref}); build actions: ${ofKind}`
    );
  }
  return `unknown action "${ref}" in a template expression; ${kind} actions: ${ofKind}`;
}

/** The actions of a reference's kind (`build.api` → the Builds) among `refs`, for messages. */
export function refsOfKind(refs: Iterable<string>, ref: string): string {
  const prefix = ref.slice(0, ref.indexOf('.') + 1);
  const found = [...refs].filter((r) => r.startsWith(prefix)).sort();
  return found.length === 0 ? '(none)' : `${found.slice(0, 20).join(', ')}${found.length > 20 ? ', …' : ''}`;
}

/** The keys of an action reference after `actions.<kind>.<name>`, for messages and suggestions. */
const referenceKeys = ['outputs', 'version', 'var', ...actionFieldNames];

/** Why a path under `actions` is not a reference to an action, or undefined when it is one. */
export function actionReferenceProblem(path: readonly string[], text = path.join('.')): string | undefined {
  const [, kind, , field] = path;
  const shape =
    (field === 'outputs' && path.length === 5) ||
    (field === 'version' && path.length === 4) ||
    (field === 'var' && path.length >= 4) ||
    (isActionField(field) && path.length === 4);
  if (!shape) {
    const similar =
      field === undefined || referenceKeys.includes(field) ? undefined : closestName(field, referenceKeys);
    return (
      `invalid action reference "${text}"; ` +
      'expected actions.<kind>.<name>.outputs.<key> (e.g. actions.build.api.outputs.image), ' +
      `or .version, .var.<name>, ${actionFieldNames.map((f) => `.${f}`).join(', ')}` +
      (similar !== undefined ? `; did you mean ".${similar}"?` : '')
    );
  }
  if (!actionKindsLower.includes(kind ?? '')) {
    return `unknown action kind "${kind}" in "${text}"; expected one of: ${actionKindsLower.join(', ')}`;
  }
  return undefined;
}
