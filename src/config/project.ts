/**
 * The project's configuration as the rest of tend sees it, after loading and validation
 * (docs/design.md#configuration). Values that may hold template expressions (`spec`, provider config,
 * `defaultNamespace`) are kept raw; src/config/template.ts resolves them.
 */
import type { ErrorCode, SourceLocation } from '../errors.js';
import type { CleanupPolicy } from '../cleanup/policy.js';
import type { SyntaxOptions } from '../expressions/syntax.js';
import type { ActionKind } from '../plugin/types.js';

/** A path to a value inside one YAML document: keys and sequence indexes. */
export type ConfigPath = readonly (string | number)[];
/** A mapping entry's key or its value, when locating a path in the YAML source. */
export type LocateTarget = 'key' | 'value';

export type Locate = (path: ConfigPath) => SourceLocation;

/** `environments[].cleanup` after loading: the action filled in (`delete` when absent). */
export type CleanupConfig = CleanupPolicy;

/** `environments[].pullRequest`, as written: `number` may hold template expressions. */
export interface PullRequestConfig {
  repository: string;
  number: string | number;
}

/** `environments[].varfiles[]` after loading: a path from the project root, and whether it may be missing. */
export interface VarfileConfig {
  path: string;
  optional: boolean;
}

export interface EnvironmentConfig {
  name: string;
  /** Raw, may contain template expressions. Default: `${project.name}-${local.username}`. */
  defaultNamespace?: string;
  /** This environment's variables: they override the project's (and its varfiles, `--var-file`, `--var` them). */
  variables: Record<string, VariableValue>;
  /** `varfiles:`, in order (src/config/variables.ts reads them). */
  varfiles: VarfileConfig[];
  cleanup?: CleanupConfig;
  pullRequest?: PullRequestConfig;
  /** Where the environment is declared in tend.yml. */
  location: SourceLocation;
}

/** One thing wrong in the configuration, where it is. */
export interface ConfigProblem {
  code: ErrorCode;
  message: string;
  location: SourceLocation;
}

/** An action's varfile as written: its path relative to `dir` (the action's file's directory). */
export interface ActionVarfile {
  path: string;
  optional: boolean;
  dir: string;
  /** Where it is in the action's document. */
  at: ConfigPath;
}

export interface ProviderEntry {
  name: string;
  /** The environments this provider is used in; all when absent. */
  environments?: string[];
  /** The entry minus `name` and `environments`, still with template expressions. */
  config: Record<string, unknown>;
  /**
   * A Garden entry as its file says it, in Garden's shape (`namespace: { name }`), still with
   * template expressions: what `${providers.<name>.config}` reads. Absent: `config` is.
   */
  written?: Record<string, unknown>;
  location: SourceLocation;
  /** Position of a value inside `config` (path relative to the config, e.g. `['namespace']`). */
  locate: Locate;
  /** What is wrong with an entry limited to some environments: raised only where it is used. */
  problems?: ConfigProblem[];
  /**
   * Garden's `kubernetes` provider: its entry, merged where used, must name a kubeconfig
   * `context` (or the command line, `--context`), as Garden requires.
   */
  requiresContext?: true;
}

/** A variable: a YAML value (a list or a mapping too); strings may hold templates. */
export type VariableValue =
  string | number | boolean | null | VariableValue[] | { [key: string]: VariableValue };

export interface ProjectConfig {
  name: string;
  /** An environment's name, or a template that chooses one (resolved with `local.*`, `git.*`, …). */
  defaultEnvironment: string;
  variables: Record<string, VariableValue>;
  /** `varfiles:` of the project, in order: above its variables, below every environment's. */
  varfiles: VarfileConfig[];
  environments: EnvironmentConfig[];
  providers: ProviderEntry[];
  server?: string;
  /** Absolute project root: the directory of tend.yml. */
  root: string;
  /** The file of the Project document, relative to the root (`tend.yml`). */
  file: string;
  /** How its templates read: tend's own, or Garden's of its apiVersion (template-syntax.ts); default tend's. */
  templateSyntax?: SyntaxOptions;
  /** A Garden project's ignore files (`dotIgnoreFile`): what they list is no action's source. */
  ignoreFiles?: string[];
  /** Where the Project document starts. */
  location: SourceLocation;
  /** Position of a value inside the Project document (path from the document root). */
  locate: Locate;
}

/** One templated entry of an action's `dependencies:` (or the whole key), where it is. */
export interface DependencyTemplate {
  template: string;
  at: ConfigPath;
  /** A converted module's: the reference of each name it gives (a module's service, task or build). */
  moduleName?: (name: string) => string;
}

/** An action's keys of file patterns. */
export type PatternKey = 'include' | 'exclude';

/** The actions an action's templates read (template.ts actionReferencesOf). */
export interface TemplateReferences {
  /** Those whose outputs or version it reads: the actions to run first. */
  refs: string[];
  /** Those it reads only what the configuration says of (`.buildPath`). */
  fieldRefs: string[];
  /** Some template reads an action's outputs (`actions.build[var.app]…` too). */
  readsOutputs: boolean;
}

export interface ActionConfig {
  kind: ActionKind;
  type: string;
  /** The type its Garden document names, where tend runs the action as another (a container Run as kubernetes-pod). */
  writtenType?: string;
  /** The name of the Garden 0.12 module it was converted from (one of the actions the module becomes). */
  fromModule?: string;
  name: string;
  /** `build.api`: lower-case kind, dot, name. */
  ref: string;
  description?: string;
  /** References (`build.api`) from `dependencies:`; template references are found by findActionReferences. */
  dependencies: string[];
  /**
   * `dependencies:` written as a template, or its entries that are: resolved once the environment
   * is chosen (action-dependencies.ts), which adds them to `dependencies`.
   */
  dependencyTemplates?: DependencyTemplate[];
  /**
   * The actions its templates read, in the chosen environment: without those in a branch the
   * environment does not use (environment-references.ts). Unset before the environment is chosen.
   */
  environmentReferences?: TemplateReferences;
  /** Absolute source directory (default: the directory of the file). */
  sourceDir: string;
  include?: string[];
  exclude?: string[];
  /** Milliseconds. */
  timeout?: number;
  /** Test/Run: whether a result already there for this version is reused (default: Test yes, Run no). */
  cacheResult?: boolean;
  /** Build: files copied from other Builds' build directories before it builds (src/graph/build-directory.ts). */
  copyFrom?: CopyFromConfig[];
  /** Build with copyFrom: build in the source directory instead of a staged one. */
  buildAtSource?: boolean;
  /** Deploy, Test, Run: the name of the Build whose build directory the action runs in. */
  build?: string;
  /** Raw, with template expressions. */
  spec: unknown;
  /**
   * `source:` when it holds `${…}`: resolved from `dir` once the environment is chosen
   * (action-source.ts), which sets `sourceDir` (until then the file's directory).
   */
  sourceTemplate?: { path: string; dir: string };
  /**
   * `include:` / `exclude:` when they hold `${…}` or a structural operator, as written: resolved
   * once the environment is chosen (action-source.ts), which sets `include` / `exclude`.
   */
  patternTemplates?: Partial<Record<PatternKey, unknown>>;
  /**
   * `timeout:` when it holds `${…}`, as written: resolved once the environment is chosen
   * (action-timeout.ts), which sets `timeout`.
   */
  timeoutTemplate?: unknown;
  /** Its own variables, lowest first: `variables:`, then each of `varfiles:` (absent when none). */
  variableLayers?: Record<string, VariableValue>[];
  /**
   * Its `varfiles:` when a path holds `${…}` (`config/${environment.name}.yml`): all of them, read
   * in order above `variables:` once the environment is chosen (resolve-templates.ts).
   */
  varfileTemplates?: ActionVarfile[];
  /** `disabled:` unless false: true, or a template resolved in the environment (`${environment.name == "local"}`). */
  disabled?: true | string;
  /** `environments:`: the only environments it is enabled in. */
  environments?: string[];
  /** The file of the document, relative to the project root. */
  file: string;
  /** Where the document starts. */
  location: SourceLocation;
  /** Position of a value inside the document (path from the document root, e.g. `['spec', 'image']`). */
  locate: Locate;
  /** Rendered from a Garden ConfigTemplate: what its templates read as `parent`, `template` and `inputs`. */
  rendered?: RenderedFrom;
}

/** One entry of a Build's `copyFrom`: POSIX paths inside the build directories. */
export interface CopyFromConfig {
  /** The Build copied from (a dependency). */
  build: string;
  sourcePath: string;
  /** Default: `sourcePath`. */
  targetPath: string;
}

export interface RenderedFrom {
  /** The RenderTemplate's name (`parent.name`). */
  parent: string;
  /** The ConfigTemplate's name (`template.name`). */
  template: string;
  /** The RenderTemplate's inputs, with the defaults of the template's inputs schema. */
  inputs: Record<string, unknown>;
  /** Where each of its inputs is written, for an input's own errors. */
  locateInput: (name: string) => SourceLocation | undefined;
  /** Where the RenderTemplate is, for messages. */
  renderedAt: SourceLocation;
  /** What rendered it, for messages: a `RenderTemplate` (default), or Garden 0.12's `templated module`. */
  renderer?: string;
  /** `${item.key}` and `${item.value}` of a config a `$forEach` in the template's `configs` made. */
  item?: ForEachItem;
}

/** An item of a `$forEach`: its index (or key) and value. */
export interface ForEachItem {
  key: string | number;
  value: unknown;
}

/**
 * What the templates of a config a ConfigTemplate rendered read beside the others: `inputs`,
 * `parent.name` (the RenderTemplate's), `template.name` (as Garden's TemplatableConfigContext).
 */
export function renderRoots(rendered: RenderedFrom) {
  return {
    inputs: rendered.inputs,
    locateInput: rendered.locateInput,
    parent: { name: rendered.parent },
    template: { name: rendered.template },
    ...(rendered.item ? { item: rendered.item } : {}),
  };
}

/** DNS-label-like names: projects, environments, actions. */
export const namePattern = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$';
export const nameRegExp = new RegExp(namePattern);
export const nameMaxLength = 63;

/** `build.api` from `Build` and `api`. */
export function actionRef(kind: ActionKind, name: string): string {
  return `${kind.toLowerCase()}.${name}`;
}

/** `build.api` → `{kind: 'Build', name: 'api'}`, or undefined when it is not a reference. */
export function parseActionRef(ref: string): { kind: ActionKind; name: string } | undefined {
  const dot = ref.indexOf('.');
  if (dot < 0) return undefined;
  const kind = kindFromLowerCase.get(ref.slice(0, dot));
  const name = ref.slice(dot + 1);
  if (!kind || !nameRegExp.test(name)) return undefined;
  return { kind, name };
}

const kindFromLowerCase = new Map<string, ActionKind>([
  ['build', 'Build'],
  ['deploy', 'Deploy'],
  ['test', 'Test'],
  ['run', 'Run'],
]);

/** `tend.yml:7:5`. */
export function formatLocation(location: SourceLocation): string {
  return `${location.file}:${location.line}:${location.column}`;
}

/** `RenderTemplate web at garden.yml:3:1`: what rendered a config, for messages. */
export function describeRenderer(rendered: RenderedFrom): string {
  return `${rendered.renderer ?? 'RenderTemplate'} ${rendered.parent} at ${formatLocation(rendered.renderedAt)}`;
}

/**
 * A problem of a config a template rendered, located in the template: which rendering it is of
 * (the message as it is for a config no template rendered). A templated module names a
 * ModuleTemplate (Garden 0.12) or a ConfigTemplate: "template" says both.
 */
export function inRenderedConfig(message: string, rendered: RenderedFrom | undefined): string {
  if (!rendered) return message;
  const template = rendered.renderer === undefined ? 'ConfigTemplate' : 'template';
  return `${message} (in ${template} ${rendered.template} rendered by ${describeRenderer(rendered)})`;
}

/** The problems found since `problems` had `from`, about one config: which rendering it is of, said in each. */
export function inRenderedProblems(
  problems: ConfigProblem[],
  from: number,
  rendered: RenderedFrom | undefined,
): void {
  for (const found of problems.slice(from)) found.message = inRenderedConfig(found.message, rendered);
}
