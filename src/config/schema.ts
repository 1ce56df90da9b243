/**
 * Schemas of tend's configuration documents (docs/design.md#configuration), and the JSON Schema for editors
 * (`tend schema`), which adds every plugin's provider config and action spec schemas.
 * tend's own objects forbid unknown keys everywhere.
 */
import { Type } from 'typebox';
import type { TSchema } from 'typebox';
import { CleanupConfigSchema } from '../cleanup/policy.js';
import { repositoryPattern } from '../events/catalog.js';
import { actionKinds } from '../plugin/types.js';
import type { ActionKind, PluginDefinition } from '../plugin/types.js';
import { nameMaxLength, namePattern } from './project.js';
import { AnyKey } from '../schema-check.js';
import { numberOfText } from './convert-scalars.js';

/** `patternErrorMessage` is what editors (VS Code, yaml-language-server) show for a pattern mismatch; we do too. */
const nameMessage =
  'a name of lower-case letters, digits and "-", starting and ending with a letter or digit ' +
  `(at most ${nameMaxLength} characters)`;

export const NameSchema = Type.String({
  pattern: namePattern,
  maxLength: nameMaxLength,
  patternErrorMessage: nameMessage,
});

export const actionRefPattern = '^(build|deploy|test|run)\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?$';
export const ActionRefSchema = Type.String({
  pattern: actionRefPattern,
  patternErrorMessage: 'an action reference: lower-case kind, dot, name (e.g. build.api)',
});

export const variableNamePattern = '^[A-Za-z_][A-Za-z0-9_-]*$';

/** `500ms`, `30s`, `5m`, `1h`; a bare number is seconds. */
export const timeoutPattern = '^[0-9]+(ms|s|m|h)$';

/** Any YAML value: strings, numbers, booleans, null, lists and mappings (Garden's structured variables). */
const VariableValueSchema = Type.Union([
  Type.String(),
  Type.Number(),
  Type.Boolean(),
  Type.Null(),
  Type.Array(Type.Unknown()),
  Type.Record(AnyKey(), Type.Unknown()),
]);

/**
 * A name of `variables:`, or Garden's `$merge` (a mapping merged in at that level; the keys written
 * after it win): the only structural operator that sits among the names.
 */
export const variableKeyPattern = '^([A-Za-z_][A-Za-z0-9_-]*|\\$merge)$';

const variablesSchema = (description: string) =>
  Type.Record(AnyKey(), VariableValueSchema, {
    propertyNames: {
      pattern: variableKeyPattern,
      patternErrorMessage:
        'a variable name (letters, digits, "_" and "-", starting with a letter or "_"), or $merge (a mapping merged in)',
    },
    description,
  });

/** `varfiles:` of an environment or an action: paths, or `{ path, optional }`. */
const varfilesSchema = (pathDescription: string, description: string) =>
  Type.Array(
    Type.Union([
      Type.String({ minLength: 1 }),
      Type.Object(
        {
          path: Type.String({ minLength: 1, description: pathDescription }),
          optional: Type.Optional(
            Type.Boolean({ description: 'A missing file is skipped instead of an error (default false).' }),
          ),
        },
        { additionalProperties: false },
      ),
    ]),
    { description },
  );

export const EnvironmentSchema = Type.Object(
  {
    name: NameSchema,
    defaultNamespace: Type.Optional(
      Type.String({
        minLength: 1,
        description: 'Namespace template; default ${project.name}-${local.username}.',
      }),
    ),
    cleanup: Type.Optional(CleanupConfigSchema),
    pullRequest: Type.Optional(
      Type.Object(
        {
          repository: Type.String({
            pattern: repositoryPattern,
            patternErrorMessage: 'a GitHub repository as owner/name (e.g. acme/shop)',
            description: 'The GitHub repository, owner/name, as its pull_request webhooks name it.',
          }),
          number: Type.Union([Type.Integer({ minimum: 1 }), Type.String({ maxLength: 256 })], {
            description:
              'The pull request number, usually ${var.pr} (`tend deploy --env pr --var pr=42`); empty: no pull request.',
          }),
        },
        {
          additionalProperties: false,
          description:
            'The pull request this environment is for: when GitHub reports it closed or merged, the environment is due after cleanup.afterClose.',
        },
      ),
    ),
    variables: Type.Optional(
      variablesSchema(
        "Variables of this environment: they override the project's; its varfiles, --var-file and --var override them.",
      ),
    ),
    varfiles: Type.Optional(
      varfilesSchema(
        'The file, relative to the project root.',
        "Files of variables (YAML or JSON: name: value; dotenv when the name ends in .env) relative to the project root, read in order (a later one wins); they override this environment's variables, and --var-file and --var override them. A missing file is an error unless given as { path, optional: true }.",
      ),
    ),
  },
  { additionalProperties: false },
);

/** A provider entry's own keys; the rest is checked against the plugin's configSchema. */
export const ProviderEntryBaseSchema = Type.Object(
  {
    name: Type.String({ minLength: 1, description: 'The provider (plugin) name.' }),
    plugin: Type.Optional(
      Type.String({
        minLength: 1,
        description:
          'A third-party plugin module: a path relative to the project root (./plugins/x.js) or a package name.',
      }),
    ),
    environments: Type.Optional(
      Type.Array(NameSchema, { description: 'Environments this provider is used in (default: all).' }),
    ),
  },
  { additionalProperties: true },
);

export const ProjectSchema = Type.Object(
  {
    kind: Type.Literal('Project'),
    name: NameSchema,
    defaultEnvironment: Type.Optional(NameSchema),
    variables: Type.Optional(
      variablesSchema('Project variables, ${var.<name>} in templates; override with --var name=value.'),
    ),
    varfiles: Type.Optional(
      varfilesSchema(
        'The file, relative to the project root.',
        "Files of variables of every environment (YAML or JSON: name: value; dotenv when the name ends in .env) relative to the project root, read in order (a later one wins); they override the project's variables, and each environment's variables override them. A missing file is an error unless given as { path, optional: true }.",
      ),
    ),
    environments: Type.Array(EnvironmentSchema, { minItems: 1 }),
    providers: Type.Optional(Type.Array(ProviderEntryBaseSchema)),
    server: Type.Optional(
      Type.String({
        pattern: '^https?://',
        patternErrorMessage: 'an http:// or https:// URL',
        description: 'The tend server URL (or TEND_SERVER_URL, or `tend login`).',
      }),
    ),
  },
  { additionalProperties: false },
);

export const ActionKindSchema = Type.Enum(actionKinds);

/** What an action's `timeout:` is, in words. */
export const timeoutExpected = 'a duration: seconds as a number, or a whole number followed by ms, s, m or h';

/** An action's `timeout:` (parseTimeout reads it). */
export const TimeoutSchema = Type.Union([
  Type.Number({ exclusiveMinimum: 0 }),
  Type.String({ pattern: timeoutPattern, patternErrorMessage: timeoutExpected }),
]);

const StringList = Type.Array(Type.String({ minLength: 1 }));

export const ActionBaseSchema = Type.Object(
  {
    kind: ActionKindSchema,
    type: Type.String({ minLength: 1, description: 'The action type, declared by a provider.' }),
    name: NameSchema,
    description: Type.Optional(Type.String()),
    dependencies: Type.Optional(Type.Array(ActionRefSchema)),
    source: Type.Optional(
      Type.String({ minLength: 1, description: "Source directory, relative to the file's directory." }),
    ),
    include: Type.Optional(StringList),
    exclude: Type.Optional(StringList),
    timeout: Type.Optional(TimeoutSchema),
    cacheResult: Type.Optional(
      Type.Boolean({
        description:
          'Test and Run: skip the action when it already succeeded for its version (default: true for Test, false for Run).',
      }),
    ),
    variables: Type.Optional(
      variablesSchema(
        "Variables of this action: they override the environment's (and its varfiles them; --var overrides both).",
      ),
    ),
    varfiles: Type.Optional(
      varfilesSchema(
        "The file, relative to the action's file.",
        "Files of this action's variables (YAML or JSON), relative to the action's file, read in order; they override its variables.",
      ),
    ),
    disabled: Type.Optional(
      Type.Union(
        [
          Type.Boolean(),
          Type.String({ pattern: '\\$\\{', patternErrorMessage: 'true, false or a ${…} template' }),
        ],
        {
          description:
            'Not run in an environment where this is true (a template: `${environment.name == "prod"}`).',
        },
      ),
    ),
    environments: Type.Optional(
      Type.Array(NameSchema, {
        description: 'The only environments this action is enabled in (default: all).',
      }),
    ),
    copyFrom: Type.Optional(
      Type.Array(
        Type.Object(
          {
            build: NameSchema,
            sourcePath: Type.String({
              minLength: 1,
              description: "A file or directory (or a glob) in that Build's build directory.",
            }),
            targetPath: Type.Optional(
              Type.String({
                minLength: 1,
                description:
                  "Where it goes in this Build's build directory (default: the same path; `.` or a path ending in `/`: into that directory).",
              }),
            ),
          },
          { additionalProperties: false },
        ),
        {
          description:
            "Build only: files copied from other Builds' build directories into this Build's (staged in .tend/build/<name>) before it builds; each Build named is a dependency.",
        },
      ),
    ),
    buildAtSource: Type.Optional(
      Type.Boolean({
        description:
          'Build only: with copyFrom, build in the source directory (the copies go there) instead of .tend/build/<name>.',
      }),
    ),
    build: Type.Optional(
      Type.String({
        pattern: namePattern,
        maxLength: nameMaxLength,
        patternErrorMessage: `a Build's name: ${nameMessage}`,
        description:
          "Deploy, Test and Run: the Build whose build directory this action runs in (its files, commands' working directory); a dependency.",
      }),
    ),
    spec: Type.Optional(Type.Unknown({ description: "The action type's spec." })),
  },
  { additionalProperties: false },
);

/** The keys of an action document, for messages. */
export const actionKeys = Object.keys(ActionBaseSchema.properties);

/** A Garden timeout as its Joi schema reads it: a number written as text (`"90"`, `"9e1"`) is seconds. */
export function gardenTimeout(value: unknown): unknown {
  return typeof value === 'string' ? (numberOfText(value) ?? value) : value;
}

/** A timeout in milliseconds from `30s`, `5m`, `500ms`, `1h`, or a number of seconds. */
export function parseTimeout(value: number | string): number {
  if (typeof value === 'number') return Math.round(value * 1000);
  const match = /^([0-9]+)(ms|s|m|h)$/.exec(value);
  if (!match) throw new Error(`not a duration: ${value}`);
  const factor = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[match[2] as 'ms' | 's' | 'm' | 'h'];
  return Number(match[1]) * factor;
}

/** The plugin that declares each action type, and the kinds it supports. */
type ActionTypeIndex = Map<string, { plugin: PluginDefinition; kinds: Map<ActionKind, TSchema> }>;
const indexes = new WeakMap<readonly PluginDefinition[], ActionTypeIndex>();

/** Action types by name with their spec schema per kind; built once per plugin list (it is called per action). */
export function actionTypeIndex(plugins: readonly PluginDefinition[]): ActionTypeIndex {
  const cached = indexes.get(plugins);
  if (cached) return cached;
  const index: ActionTypeIndex = new Map();
  indexes.set(plugins, index);
  for (const plugin of plugins) {
    for (const type of plugin.actionTypes) {
      if (index.has(type.name)) continue;
      const kinds = new Map<ActionKind, TSchema>();
      for (const kind of actionKinds) {
        const declared = type.kinds[kind];
        if (declared) kinds.set(kind, declared.specSchema);
      }
      index.set(type.name, { plugin, kinds });
    }
  }
  return index;
}

/** A TypeBox schema as plain JSON Schema: no symbols, no TypeBox-only keys. */
function plain(schema: TSchema): Record<string, unknown> {
  return JSON.parse(JSON.stringify(schema)) as Record<string, unknown>;
}

/**
 * The JSON Schema (draft-07) of one configuration document, for editors: the Project document
 * or an action, discriminated by `kind`; each action type's `spec` and each provider's entry
 * through if/then on kind+type and on the provider name.
 */
export function buildJsonSchema(plugins: readonly PluginDefinition[]): Record<string, unknown> {
  const types = actionTypeIndex(plugins);

  const project = plain(ProjectSchema);
  const providerBase = plain(ProviderEntryBaseSchema);
  const providerRules = plugins.map((plugin) => {
    const config = plain(plugin.configSchema);
    const ownProperties = (config.properties as Record<string, unknown> | undefined) ?? {};
    const then: Record<string, unknown> = {
      ...config,
      type: 'object',
      properties: { ...(providerBase.properties as Record<string, unknown>), ...ownProperties },
      required: ['name', ...((config.required as string[] | undefined) ?? [])],
    };
    if (config.type !== 'object') {
      delete then.additionalProperties;
    }
    return { if: { properties: { name: { const: plugin.name } }, required: ['name'] }, then };
  });
  const providerNames = plugins.map((p) => p.name);
  project.properties = {
    ...(project.properties as Record<string, unknown>),
    providers: {
      type: 'array',
      description: 'Providers (plugins) and their configuration.',
      items: {
        ...providerBase,
        properties: {
          ...(providerBase.properties as Record<string, unknown>),
          name: { type: 'string', description: 'The provider (plugin) name.' },
        },
        required: ['name'],
        // A third-party plugin (`plugin:`) names itself; the built-in names apply otherwise.
        if: { required: ['plugin'] },
        else: { properties: { name: { enum: providerNames } } },
        allOf: providerRules,
      },
    },
  };

  const action = plain(ActionBaseSchema);
  const typeRules: Record<string, unknown>[] = [];
  for (const kind of actionKinds) {
    const kindTypes = [...types].filter(([, t]) => t.kinds.has(kind)).map(([name]) => name);
    typeRules.push({
      if: { properties: { kind: { const: kind } }, required: ['kind'] },
      then: { properties: { type: { enum: kindTypes } } },
    });
    for (const [typeName, type] of types) {
      const spec = type.kinds.get(kind);
      if (!spec) continue;
      typeRules.push({
        if: { properties: { kind: { const: kind }, type: { const: typeName } }, required: ['kind', 'type'] },
        then: { properties: { spec: plain(spec) } },
      });
    }
  }
  action.properties = {
    ...(action.properties as Record<string, unknown>),
    kind: { enum: [...actionKinds], description: 'Build, Deploy, Test or Run.' },
  };
  action.required = ['kind', 'type', 'name'];
  action.allOf = typeRules;

  return {
    $schema: 'http://json-schema.org/draft-07/schema#',
    $id: 'https://tend.dev/schemas/tend.yml.json',
    title: 'tend configuration document (tend.yml, *.tend.yml)',
    description: 'One YAML document: the Project (tend.yml only) or an action (Build, Deploy, Test, Run).',
    type: 'object',
    required: ['kind'],
    properties: { kind: { enum: ['Project', ...actionKinds] } },
    allOf: [
      { if: { properties: { kind: { const: 'Project' } }, required: ['kind'] }, then: project },
      { if: { properties: { kind: { enum: [...actionKinds] } }, required: ['kind'] }, then: action },
    ],
  };
}
