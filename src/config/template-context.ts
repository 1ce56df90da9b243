/**
 * What `${…}` expressions read (docs/templates.md#contexts): the context a command resolves
 * templates in, and its scope for the expression language (config/expressions/): `var` (alias
 * `variables`, resolved lazily, a cycle is an error), `local.*`, `project.*`, `environment.*`,
 * `actions.*`, and Garden's `git.*`, `datetime.*`, `command.*`, `this.*` when given, and `secrets.*`.
 */
import { closestName } from '../suggest.js';
import { Missing, RecordNode, TemplateEvaluationError } from './expressions/evaluate.js';
import type { ContextNode, LookupPlace, PathNode, Scope } from './expressions/evaluate.js';

export interface TemplateContext {
  project: { name: string };
  environment: { name: string; namespace: string; fullName?: string };
  var: Record<string, unknown>;
  local: {
    username: string;
    env: Record<string, string | undefined>;
    usernameLowerCase?: string;
    platform?: string;
    arch?: string;
    projectPath?: string;
  };
  /** Outputs of actions that have run, by lower-case kind then name: `actions.build.api.outputs.image`. */
  actions?: Record<string, Record<string, { outputs: Record<string, string> }>>;
  /** `git.branch`, `git.commitHash`, `git.originUrl`: Lazy values, read from the repository when used. */
  git?: Record<string, unknown>;
  /** `datetime.now`, `datetime.today`, `datetime.timestamp` (values or Lazy values). */
  datetime?: Record<string, unknown>;
  /** The command running: `command.name`, `command.params.<option>`. */
  command?: { name: string; params: Record<string, unknown> };
  /** The action whose configuration is resolved: `this.name`, `this.kind`, `this.mode`. */
  this?: { name: string; kind: string; mode: string };
  /** `secrets.<NAME>`: loaded by the command only when its configuration reads them. */
  secrets?: SecretsContext;
}

/** The project secrets an environment reads (docs/templates.md#secrets), and where they come from. */
export interface SecretsContext {
  values: Readonly<Record<string, string>>;
  /** For messages: `on the tend server http://… (project shop, environment ci)`, or the local file. */
  source: string;
}

/** tend's roots, listed in messages; Garden's others follow. */
export const templateRoots = ['project', 'environment', 'var', 'local', 'actions'] as const;
export const gardenRoots = ['variables', 'git', 'datetime', 'command', 'this', 'item', 'secrets'] as const;
export const actionKindsLower = ['build', 'deploy', 'test', 'run'];

/** Resolves a variable's value that holds templates (in the same scope); throws plain errors. */
export type VariableResolver = (value: unknown, scope: Scope) => unknown;

/** `var.<name>`: declared variables, their own templates resolved when first read. */
class VariablesNode implements ContextNode {
  private readonly resolved = new Map<string, unknown>();
  private readonly resolving: string[] = [];
  scope!: Scope;

  constructor(
    private readonly variables: Record<string, unknown>,
    private readonly environmentName: string,
    private readonly resolve: VariableResolver,
    private readonly holdsTemplate: (value: unknown) => boolean,
  ) {}

  private names(): string[] {
    return Object.keys(this.variables).filter((k) => this.variables[k] !== undefined);
  }

  member(key: string | number, place: LookupPlace): unknown {
    const name = String(key);
    const raw = Object.hasOwn(this.variables, name) ? this.variables[name] : undefined;
    if (raw === undefined) return this.missing(name, place);
    if (!this.holdsTemplate(raw)) return raw;
    if (this.resolved.has(name)) return this.resolved.get(name);
    const start = this.resolving.indexOf(name);
    if (start >= 0) {
      const chain = [...this.resolving.slice(start), name].map((n) => `var.${n}`).join(' → ');
      throw new TemplateEvaluationError(
        `variables refer to each other in a cycle: ${chain}; break it by giving one of them a plain value`,
      );
    }
    this.resolving.push(name);
    try {
      const value = this.resolve(raw, this.scope);
      this.resolved.set(name, value);
      return value;
    } catch (error) {
      if (error instanceof TemplateEvaluationError && error.message.includes('in a cycle')) throw error;
      throw new TemplateEvaluationError(`in variable "var.${name}": ${(error as Error).message}`);
    } finally {
      this.resolving.pop();
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
        `or in tend.yml under variables: (or environment ${this.environmentName}'s variables:)`,
    );
  }

  completions(prefix: string): string[] {
    return this.names().map((k) => `${prefix}.${k}`);
  }
}

/** `local.env.<NAME>`: the process environment. */
class EnvironmentVariablesNode implements ContextNode {
  constructor(private readonly env: Record<string, string | undefined>) {}

  member(key: string | number, place: LookupPlace): unknown {
    const name = String(key);
    const value = Object.hasOwn(this.env, name) ? this.env[name] : undefined;
    if (value === undefined)
      return new Missing(`environment variable "${name}" is not set (used as "${place.text}")`);
    return value;
  }

  completions(prefix: string): string[] {
    return [`${prefix}.<NAME>`];
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

/** `actions.<kind>.<name>.outputs.<key>`: outputs of the dependencies that have run. */
class ActionOutputsNode implements PathNode {
  constructor(private readonly actions: TemplateContext['actions']) {}

  resolvePath(path: readonly (string | number)[], text: string): unknown {
    const full = ['actions', ...path].map(String);
    const problem = actionReferenceProblem(full);
    if (problem) return new Missing(problem);
    const [kind, name, , key] = full.slice(1) as [string, string, string, string];
    const outputs = own(own(this.actions, kind), name) as { outputs?: Record<string, string> } | undefined;
    if (!outputs?.outputs) {
      return new Missing(
        `outputs of ${kind}.${name} are not available for "${text}": it has not run before this action`,
      );
    }
    if (!Object.hasOwn(outputs.outputs, key)) {
      const available = Object.keys(outputs.outputs).map((k) => `actions.${kind}.${name}.outputs.${k}`);
      return new Missing(
        `action ${kind}.${name} has no output "${key}"; available: ${available.length > 0 ? available.join(', ') : '(none)'}`,
      );
    }
    return outputs.outputs[key];
  }
}

function own(record: unknown, key: string): unknown {
  if (record === null || typeof record !== 'object' || !Object.hasOwn(record, key)) return undefined;
  return (record as Record<string, unknown>)[key];
}

/** Why a path under `actions` is not an output reference, or undefined when it is one. */
export function actionReferenceProblem(path: readonly string[]): string | undefined {
  const [, kind, , outputs, , ...extra] = path;
  if (path.length < 5 || outputs !== 'outputs' || extra.length > 0) {
    return (
      `invalid action output reference "${path.join('.')}"; ` +
      'expected actions.<kind>.<name>.outputs.<key> (e.g. actions.build.api.outputs.image)'
    );
  }
  if (!actionKindsLower.includes(kind ?? '')) {
    return `unknown action kind "${kind}" in "${path.join('.')}"; expected one of: ${actionKindsLower.join(', ')}`;
  }
  return undefined;
}

/**
 * The node of a part of the context, made once per object: a command resolves every action's
 * spec in contexts that share these parts (`{ ...context, this }`).
 */
const nodes = new WeakMap<object, RecordNode>();
function nodeOf(
  record: object | undefined,
  members = () => record as Record<string, unknown>,
): RecordNode | undefined {
  if (!record) return undefined;
  let node = nodes.get(record);
  if (!node) {
    node = new RecordNode(members());
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
  const variables = new VariablesNode(context.var, context.environment.name, resolveVariable, holdsTemplate);
  const roots: Record<string, unknown> = {
    project: nodeOf(context.project),
    environment: nodeOf(context.environment),
    var: variables,
    local: nodeOf(context.local, () => ({
      ...context.local,
      env: new EnvironmentVariablesNode(context.local.env),
    })),
    actions: new ActionOutputsNode(context.actions),
    git: nodeOf(context.git),
    datetime: nodeOf(context.datetime),
    command: nodeOf(context.command),
    this: context.this && new RecordNode(context.this),
    secrets: new SecretsNode(context.secrets),
  };
  // The roots the context has, in its order; `actions` always (its outputs come as actions run).
  const listed = Object.keys(context).filter((k) => k in roots && roots[k] !== undefined);
  if (!listed.includes('actions')) listed.push('actions');
  const scope: Scope = { roots, aliases: { variables: 'var' }, listed };
  variables.scope = scope;
  return scope;
}
