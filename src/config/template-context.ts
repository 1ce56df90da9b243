/**
 * What `${…}` expressions read (docs/templates.md#contexts): the context a command resolves
 * templates in, and its scope for the expression language (src/expressions/): `var` (alias
 * `variables`: layers merged as Garden merges them, resolved lazily, a cycle is an error),
 * `local.*`, `project.*`, `environment.*`, `actions.*` (outputs, version, var, and what the
 * configuration says of an action: name, disabled, mode, buildPath, sourcePath), `providers.*`
 * (outputs, config), and Garden's `runtime.*` (the same as `actions.*`) and `modules.<name>.*` (the
 * Build a 0.12 module became), `git.*`, `datetime.*`, `command.*` and `this.*` when given, and
 * `secrets.*`.
 */
import { closestName } from '../suggest.js';
import {
  actionLookupProblem,
  actionsPathOf,
  buildlessModuleOutput,
  type BuildlessModule,
  isActionField,
  refsOfKind,
  unknownActionReference,
  type ActionFields,
} from './action-references.js';
import {
  followPath,
  Missing,
  NotYetKnownError,
  RecordNode,
  TemplateEvaluationError,
} from '../expressions/evaluate.js';
import type { ContextNode, LookupPlace, PathNode, Scope } from '../expressions/evaluate.js';
import type { SyntaxOptions } from '../expressions/syntax.js';
import { InputsNode, type LocateInput } from './template-inputs.js';
import { LocalNode, localMembers } from './template-local.js';
import { ProvidersNode, type ProviderConfigs, type ProviderOutputs } from './template-providers.js';
import type { ForEachItem } from './project.js';
import { expandMergeKey, hasMergeKey, isMergeable, mergeVariableValues, rawAt } from './variable-layers.js';
import { TendError } from '../errors.js';
import { withVarFlagHint } from './var-overrides.js';

/** A 0.12 module that became no Build, with the outputs Garden gives it; undefined for any other name. */
export type BuildlessModules = (name: string) => BuildlessModule | undefined;

export interface TemplateContext {
  project: { name: string };
  environment: { name: string; namespace: string; fullName?: string };
  /** The lowest layer of variables: the project's `variables:`. */
  var: Record<string, unknown>;
  /** Layers of variables above `var`, lowest first: the environment's `variables:`, its varfiles. */
  varLayers?: readonly Record<string, unknown>[];
  /** The layers of the action resolved (its `variables:`, then its varfiles), above `varLayers`. */
  actionVarLayers?: readonly Record<string, unknown>[];
  /** `--var`: above every layer. */
  varOverrides?: Record<string, unknown>;
  /** What every action's variables are resolved with, by reference (`deploy.api`), for `actions.<kind>.<name>.var`. */
  actionVariables?: ReadonlyMap<string, ActionVariablesContext>;
  /** What the configuration says of every action, by reference, for `actions.<kind>.<name>.buildPath` and the like. */
  actionFields?: ReadonlyMap<string, ActionFields>;
  /**
   * A 0.12 module that became no Build (a container module without a Dockerfile, a helm module):
   * its outputs, for `modules.<name>.outputs.<key>` in a templated file (in the configuration they
   * are written in when it is read: garden/module-references.ts).
   */
  buildlessModules?: BuildlessModules;
  local: {
    username: string;
    env: Record<string, string | undefined>;
    usernameLowerCase?: string;
    platform?: string;
    arch?: string;
    projectPath?: string;
  };
  /** Outputs and versions of dependencies, by lower-case kind then name: `actions.build.api.outputs.image`. */
  actions?: Record<string, Record<string, ActionRuntimeContext>>;
  /** `git.branch`, `git.commitHash`, `git.originUrl`: Lazy values, read from the repository when used. */
  git?: Record<string, unknown>;
  /** `datetime.now`, `datetime.today`, `datetime.timestamp` (values or Lazy values). */
  datetime?: Record<string, unknown>;
  /** The command running: `command.name`, `command.params.<option>`. */
  command?: { name: string; params: Record<string, unknown> };
  /**
   * The action whose configuration is resolved: `this.name`, `this.kind`, `this.mode`; in its spec
   * also `this.disabled`, `this.buildPath` and `this.sourcePath`, as Garden has them there.
   */
  this?: { name: string; kind: string; mode: string } & Partial<ActionFields>;
  /** An action rendered from a Garden ConfigTemplate: its RenderTemplate's name and inputs, the template's name. */
  parent?: { name: string };
  template?: { name: string };
  inputs?: Record<string, unknown>;
  locateInput?: LocateInput;
  /** Of an action a `$forEach` in the template's `configs` made: `item.key`, `item.value`. */
  item?: ForEachItem;
  /** `secrets.<NAME>`: loaded by the command only when its configuration reads them. */
  secrets?: SecretsContext;
  /** `providers.<name>.outputs.*`: what each provider's preparation gave this command (absent before it). */
  providers?: ProviderOutputs;
  /** `providers.<name>.config.*`: the configuration of each provider the environment uses. */
  providerConfigs?: ProviderConfigs;
  /** A Workflow's or custom Command's steps that ran (`steps.<name>.log`, `.outputs`); a Command's `args`, `opts`. */
  steps?: Record<string, unknown>;
  args?: Record<string, unknown>;
  opts?: Record<string, unknown>;
  /** How the configuration's templates read (the project's, template-syntax.ts); default: tend's own. */
  templateSyntax?: SyntaxOptions;
}

/**
 * What an action's variables are resolved with beside the environment's context: its own layers,
 * and the RenderTemplate's roots of an action a Garden ConfigTemplate rendered.
 */
export type ActionVariablesContext = Pick<
  TemplateContext,
  'actionVarLayers' | 'parent' | 'template' | 'inputs' | 'locateInput' | 'item'
>;

/** The project secrets an environment reads (docs/templates.md#secrets), and where they come from. */
export interface SecretsContext {
  values: Readonly<Record<string, string>>;
  /** For messages: `on the tend server http://… (project shop, environment ci)`, or the local file. */
  source: string;
}

/** What a dependency gives `actions.<kind>.<name>`: its outputs once it has run, its version. */
export interface ActionRuntimeContext {
  outputs?: Record<string, string>;
  version?: string;
}

/** Every layer of variables of a context, lowest first. */
export function variableLayersOf(context: TemplateContext): Record<string, unknown>[] {
  return [
    context.var,
    ...(context.varLayers ?? []),
    ...(context.actionVarLayers ?? []),
    ...(context.varOverrides ? [context.varOverrides] : []),
  ];
}

/** tend's roots, listed in messages; Garden's others follow. */
export const templateRoots = ['project', 'environment', 'var', 'local', 'actions'] as const;
export const gardenRoots = [
  'variables',
  'git',
  'datetime',
  'command',
  'this',
  'item',
  'secrets',
  'providers',
  'runtime',
  'modules',
] as const;
/** The roots of an action rendered from a Garden ConfigTemplate, beside the others. */
export const renderedRoots = ['inputs', 'parent', 'template'] as const;

/** Resolves a variable's value that holds templates (in the same scope); throws plain errors. */
export type VariableResolver = (value: unknown, scope: Scope) => unknown;

/**
 * How deep variables may refer to variables (`a: ${var.b}`, `b: ${var.c}`, …) before it is an
 * error: far deeper than any configuration needs, and well within the stack.
 */
export const variableDepthLimit = 200;

/**
 * The variables being resolved, across every variables node (an action's `var` may read another
 * action's through `actions.<kind>.<name>.var`): a name met again is a cycle. Resolving is
 * synchronous, so one stack serves every resolution.
 */
const resolving: string[] = [];

/** A cycle or a chain too deep: said once, not again by every variable on the way. */
class VariableChainError extends TemplateEvaluationError {}

/**
 * `var.<name>`: declared variables in layers, lowest first (project, environment, varfiles, the
 * action's own, then `--var`). A variable's templates are resolved when first read; a scalar in
 * a layer hides the layers below it, mappings and lists found in several layers are merged.
 */
export class VariablesNode implements ContextNode, PathNode {
  private readonly resolved = new Map<string, unknown>();
  /** The layers with a `$merge` in them, expanded when first read. */
  private readonly expanded = new Map<number, Record<string, unknown>>();
  scope!: Scope;

  constructor(
    private readonly layers: readonly Record<string, unknown>[],
    private readonly environmentName: string,
    private readonly resolve: VariableResolver,
    private readonly holdsTemplate: (value: unknown) => boolean,
    /** `var` or `actions.deploy.api.var`: how the variables are named in messages. */
    private readonly label = 'var',
  ) {}

  private names(): string[] {
    const names = new Set<string>();
    for (let i = 0; i < this.layers.length; i++) {
      const layer = this.layer(i);
      for (const key of Object.keys(layer)) if (layer[key] !== undefined) names.add(key);
    }
    return [...names];
  }

  /**
   * Layer `i`, a `$merge` written directly in it expanded (variable-layers.ts): its value reads
   * `var` of the layers below, as Garden merges in variables of a lower precedence level.
   */
  private layer(i: number): Record<string, unknown> {
    const raw = this.layers[i]!;
    if (!hasMergeKey(raw)) return raw;
    let layer = this.expanded.get(i);
    if (!layer) {
      const below = new VariablesNode(
        this.layers.slice(0, i),
        this.environmentName,
        this.resolve,
        this.holdsTemplate,
        this.label,
      );
      below.scope = { ...this.scope, roots: { ...this.scope.roots, var: below } };
      layer = expandMergeKey(raw, (value) =>
        this.holdsTemplate(value)
          ? this.resolveTemplated(`$merge of layer ${i + 1}`, value, below.scope)
          : value,
      );
      this.expanded.set(i, layer);
    }
    return layer;
  }

  member(key: string | number, place: LookupPlace): unknown {
    const name = String(key);
    if (this.resolved.has(name)) return this.resolved.get(name);
    // The layers that set it, highest first, down to the first scalar (it hides those below).
    const found: unknown[] = [];
    for (let i = this.layers.length - 1; i >= 0; i--) {
      const layer = this.layer(i);
      const raw = Object.hasOwn(layer, name) ? layer[name] : undefined;
      if (raw === undefined) continue;
      const value = this.holdsTemplate(raw) ? this.resolveTemplated(name, raw) : raw;
      found.push(value);
      if (!isMergeable(value)) break;
    }
    if (found.length === 0) return this.missing(name, place);
    const value = found.reduceRight((merged, higher) => mergeVariableValues(merged, higher));
    this.resolved.set(name, value);
    return value;
  }

  /**
   * `var.postgres.user`: only that key is resolved, as Garden resolves variables key by key (so
   * `url: "postgres://${var.postgres.user}@…"` beside `user:` is no cycle), when every layer's
   * mapping leads to it without a template on the way. Any other lookup reads the whole variable.
   */
  resolvePath(keys: readonly (string | number)[], text: string): unknown {
    const root = text.split(/[\s.[]/)[0]!;
    const [name, ...below] = keys.map(String);
    if (name !== undefined && below.length > 0 && !this.resolved.has(name)) {
      const part = this.partOf(name, below);
      if (part !== undefined) return part;
    }
    const found = followPath(this, keys, root, text);
    return found instanceof Missing ? withVarFlagHint(found, keys, this.resolved.get(name!)) : found;
  }

  /** The value at `below` under variable `name`, merged across the layers; undefined when a template is on the way. */
  private partOf(name: string, below: readonly string[]): unknown {
    const found: unknown[] = [];
    for (let i = this.layers.length - 1; i >= 0; i--) {
      const layer = this.layer(i);
      const at = rawAt(Object.hasOwn(layer, name) ? layer[name] : undefined, below, this.holdsTemplate);
      if (at === 'template') return undefined;
      if (at === 'hidden') break;
      if (at === undefined) continue;
      const value = this.holdsTemplate(at.raw)
        ? this.resolveTemplated([name, ...below].join('.'), at.raw)
        : at.raw;
      found.push(value);
      if (!isMergeable(value)) break;
    }
    // Not there: reading the whole variable says what is.
    if (found.length === 0) return undefined;
    return found.reduceRight((merged, higher) => mergeVariableValues(merged, higher));
  }

  private resolveTemplated(name: string, raw: unknown, scope = this.scope): unknown {
    const label = `${this.label}.${name}`;
    const start = resolving.indexOf(label);
    if (start >= 0) {
      const chain = [...resolving.slice(start), label].join(' → ');
      throw new VariableChainError(
        `variables refer to each other in a cycle: ${chain}; break it by giving one of them a plain value`,
      );
    }
    if (resolving.length >= variableDepthLimit) {
      throw new VariableChainError(
        `variables refer to variables more than ${variableDepthLimit} levels deep (${resolving[0]} → … → ${label}); ` +
          'give one of them a plain value',
      );
    }
    resolving.push(label);
    try {
      return this.resolve(raw, scope);
    } catch (error) {
      // A cycle is said once; a located error (a `$merge` not a mapping) is said at its place.
      if (error instanceof VariableChainError || error instanceof TendError) throw error;
      const message = `in variable "${label}": ${(error as Error).message}`;
      throw error instanceof NotYetKnownError
        ? new NotYetKnownError(message)
        : new TemplateEvaluationError(message);
    } finally {
      resolving.pop();
    }
  }

  private missing(name: string, place: LookupPlace): Missing {
    const names = this.names();
    const available = names.length > 0 ? names.map((k) => `${place.prefix}.${k}`).join(', ') : '(none)';
    // A typo of a declared variable is that variable misspelt, not a new one to pass.
    const similar = closestName(name, names);
    if (similar !== undefined) {
      return new Missing(
        `unknown variable "${place.text}"; did you mean "${place.prefix}.${similar}"? available: ${available}`,
      );
    }
    return new Missing(
      `unknown variable "${place.text}"; available: ${available}; set it with --var ${name}=<value>, ` +
        `or under the Project's variables: (or environment ${this.environmentName}'s variables:)`,
      false,
      name,
    );
  }

  completions(prefix: string): string[] {
    return this.names().map((k) => `${prefix}.${k}`);
  }

  /** `${var}`: every variable, resolved (`${var contains "x"}`, `${jsonEncode(var)}`), as Garden gives it. */
  whole(place: LookupPlace): unknown {
    const all: Record<string, unknown> = {};
    for (const name of this.names()) {
      const value = this.member(name, { prefix: place.prefix, text: `${place.text}.${name}` });
      if (value instanceof Missing) return value;
      all[name] = value;
    }
    return all;
  }
}

/** `secrets.<NAME>`: the values the command loaded; a missing one names where it was looked for. */
class SecretsNode implements ContextNode {
  constructor(private readonly secrets: SecretsContext | undefined) {}

  member(key: string | number, place: LookupPlace): unknown {
    const name = String(key);
    if (!this.secrets) {
      return new Missing(
        `secret "${name}" (${place.text}) is not loaded: tend reads secrets only for a configuration ` +
          '(tend.yml, garden.yml: variables, providers, action specs) that uses ${secrets.…}',
      );
    }
    const { values, source } = this.secrets;
    if (Object.hasOwn(values, name)) return values[name];
    const similar = closestName(name, Object.keys(values));
    return new Missing(
      `secret "${name}" is not set ${source}` +
        (similar !== undefined ? `; did you mean "${place.prefix}.${similar}"?` : '') +
        `; set it with \`tend secrets set ${name}\` (an admin token), or in the local secrets file`,
    );
  }

  completions(prefix: string): string[] {
    return [`${prefix}.<NAME>`];
  }
}

/**
 * `actions.<kind>.<name>.outputs.<key>` and `.version` of the dependencies that have run;
 * `.var.<name>`: any action's variables, as that action sees it; and `.name`, `.disabled`,
 * `.mode`, `.buildPath`, `.sourcePath`: what the configuration says of any action (those known
 * before anything runs). Garden's `runtime.*` and a 0.12 module's `modules.<name>.*` read the same
 * (actionsPathOf).
 */
class ActionsNode implements PathNode {
  private readonly variables = new Map<string, ContextNode>();

  constructor(
    private readonly context: TemplateContext,
    private readonly resolve: VariableResolver,
    private readonly holdsTemplate: (value: unknown) => boolean,
    /** The root it answers: `actions`, `runtime` or `modules`. */
    private readonly root = 'actions',
  ) {}

  resolvePath(rootPath: readonly (string | number)[], text: string): unknown {
    const { root } = this;
    const keys = rootPath.map(String);
    const buildless = root === 'modules' ? this.context.buildlessModules?.(keys[0]!) : undefined;
    if (buildless) {
      const read = buildlessModuleOutput(buildless, keys);
      return 'value' in read ? read.value : new Missing(read.problem);
    }
    const problem = actionLookupProblem(root, keys, text);
    if (problem) return new Missing(problem);
    const path = actionsPathOf(root, keys)!;
    const [kind, name, field, key] = path as [string, string, string, string];
    // The keys below `var`, as given (an index stays a number); `modules` adds the kind.
    const below = () => rootPath.slice(3 - (path.length - keys.length));
    if (field === 'var') return this.variablesOf(kind, name, below(), text);
    if (isActionField(field)) {
      const known = this.context.actionFields;
      const fields = known?.get(`${kind}.${name}`);
      if (fields) return fields[field];
      const ref = `${kind}.${name}`;
      return new Missing(
        known
          ? unknownActionReference(ref, text, refsOfKind(known.keys(), ref))
          : `no action ${ref} for "${text}"`,
      );
    }
    const ran = own(own(this.context.actions, kind), name) as ActionRuntimeContext | undefined;
    if (field === 'version') {
      return (
        ran?.version ??
        new Missing(
          `the version of ${kind}.${name} is not available for "${text}": it is not a dependency of this action`,
          true,
        )
      );
    }
    if (!ran?.outputs) {
      return new Missing(
        `outputs of ${kind}.${name} are not available for "${text}": it has not run before this action`,
        true,
      );
    }
    if (!Object.hasOwn(ran.outputs, key)) {
      const available = Object.keys(ran.outputs).map((k) => `actions.${kind}.${name}.outputs.${k}`);
      return new Missing(
        `action ${kind}.${name} has no output "${key}"; available: ${available.length > 0 ? available.join(', ') : '(none)'}`,
      );
    }
    return ran.outputs[key];
  }

  private variablesOf(kind: string, name: string, rest: readonly (string | number)[], text: string): unknown {
    const ref = `${kind}.${name}`;
    let node = this.variables.get(ref);
    if (!node) {
      const owned = this.context.actionVariables?.get(ref);
      if (owned === undefined) return new Missing(`no action ${ref} for "${text}"`);
      const mode = 'default';
      // The other action's variables read its own layers and RenderTemplate, not the reader's.
      const {
        actionVarLayers: _layers,
        parent: _parent,
        template: _template,
        inputs: _inputs,
        locateInput: _locateInput,
        item: _item,
        ...shared
      } = this.context;
      const other: TemplateContext = {
        ...shared,
        this: { name, kind: kindNames[kind] ?? kind, mode },
        ...owned,
      };
      node = variablesScope(other, this.resolve, this.holdsTemplate, `actions.${ref}.var`).variables;
      this.variables.set(ref, node);
    }
    return followPath(node, rest, `actions.${ref}.var`, text);
  }
}

const kindNames: Record<string, string> = { build: 'Build', deploy: 'Deploy', test: 'Test', run: 'Run' };

function own(record: unknown, key: string): unknown {
  if (record === null || typeof record !== 'object' || !Object.hasOwn(record, key)) return undefined;
  return (record as Record<string, unknown>)[key];
}

/**
 * The node of a part of the context, made once per object: a command resolves every action's
 * spec in contexts that share these parts (`{ ...context, this }`).
 */
const nodes = new WeakMap<object, RecordNode>();
function nodeOf(
  record: object | undefined,
  members = () => record as Record<string, unknown>,
  Node: new (members: Record<string, unknown>) => RecordNode = RecordNode,
): RecordNode | undefined {
  if (!record) return undefined;
  let node = nodes.get(record);
  if (!node) {
    node = new Node(members());
    nodes.set(record, node);
  }
  return node;
}

/** The scope of the expression language for a context. */
export function scopeOf(
  context: TemplateContext,
  resolveVariable: VariableResolver,
  holdsTemplate: (value: unknown) => boolean,
): Scope {
  return variablesScope(context, resolveVariable, holdsTemplate, 'var').scope;
}

/** A context's scope and its `var` node (named `label` in messages). */
function variablesScope(
  context: TemplateContext,
  resolveVariable: VariableResolver,
  holdsTemplate: (value: unknown) => boolean,
  label: string,
): { scope: Scope; variables: VariablesNode } {
  const variables = new VariablesNode(
    variableLayersOf(context),
    // A defaultEnvironment template is resolved before there is an environment.
    (context.environment as TemplateContext['environment'] | undefined)?.name ?? '(none)',
    resolveVariable,
    holdsTemplate,
    label,
  );
  const roots: Record<string, unknown> = {
    project: nodeOf(context.project),
    environment: nodeOf(context.environment),
    var: variables,
    local: nodeOf(context.local, () => localMembers(context.local), LocalNode),
    actions: new ActionsNode(context, resolveVariable, holdsTemplate),
    runtime: new ActionsNode(context, resolveVariable, holdsTemplate, 'runtime'),
    modules: new ActionsNode(context, resolveVariable, holdsTemplate, 'modules'),
    git: nodeOf(context.git),
    datetime: nodeOf(context.datetime),
    command: nodeOf(context.command),
    this: context.this && new RecordNode(context.this),
    parent: context.parent && new RecordNode(context.parent),
    template: context.template && new RecordNode(context.template),
    inputs:
      context.inputs && new InputsNode(context.inputs, resolveVariable, holdsTemplate, context.locateInput),
    item: context.item,
    secrets: new SecretsNode(context.secrets),
    providers: new ProvidersNode(context.providers, context.providerConfigs),
    steps: nodeOf(context.steps),
    args: nodeOf(context.args),
    opts: nodeOf(context.opts),
  };
  // The roots the context has, in its order; `actions` too (its outputs come as actions run),
  // but not in a Workflow's or Command's steps: they read actions through a step's outputs.
  const listed = Object.keys(context).filter((k) => k in roots && roots[k] !== undefined);
  if (!listed.includes('actions') && !context.steps) listed.push('actions');
  const scope: Scope = { roots, aliases: { variables: 'var' }, listed };
  variables.scope = scope;
  if (roots.inputs instanceof InputsNode) roots.inputs.scope = scope;
  return { scope, variables };
}
