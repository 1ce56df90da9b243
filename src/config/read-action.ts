/**
 * Part of the configuration pipeline's reading of documents (read-config.ts): one action
 * document checked against tend's schema and its action type's, its source directory, variables,
 * enablement and build keys read, into the action's configuration.
 */
import path from 'node:path';
import type { SourceLocation } from '../errors.js';
import type { SyntaxOptions } from '../expressions/syntax.js';
import type { ActionKind } from '../plugin/types.js';
import {
  readActionEnablement,
  readActionVariableLayers,
  type RawActionVariables,
} from './action-variables.js';
import { patternKeys, sourceProblem, splitEnvironmentTemplates } from './action-source.js';
import { dependencyTemplateProblems, splitDependencies } from './action-dependencies.js';
import { readBuildKeys, type RawBuildKeys } from './build-keys.js';
import { checkSchema, type ConfigProblem } from './diagnostics.js';
import { convertScalars } from './convert-scalars.js';
import { placeVariableLayer } from './variable-layers.js';
import { actionRef, type ActionConfig } from './project.js';
import type { ConfigDocument } from './read-documents.js';
import { ActionBaseSchema, parseTimeout, type actionTypeIndex } from './schema.js';
import { checkTemplateSyntax, type TemplateActionReference } from './template.js';
import { renderedRoots } from './template-context.js';

/** An action read, waiting for the checks across documents (cross-check.ts). */
export interface PendingAction {
  action: ActionConfig;
  /** The plugin of its type ('' when the type is unknown). */
  plugin: string;
  templateReferences: TemplateActionReference[];
}

/** What reading an action needs of the load. */
export interface ActionReading {
  root: string;
  types: ReturnType<typeof actionTypeIndex>;
  /** Every problem of the load, which this adds to. */
  problems: ConfigProblem[];
  isDirectory(dir: string): boolean;
  /** The project's template syntax (template-syntax.ts). */
  templateSyntax: SyntaxOptions;
}

export function readActionDocument(
  document: ConfigDocument,
  value: Record<string, unknown>,
  kind: ActionKind,
  reading: ActionReading,
): PendingAction | undefined {
  const { file, doc, locate, origin, writtenType, writtenPath, fromModule } = document;
  const problem = (code: ConfigProblem['code'], message: string, location: SourceLocation) =>
    reading.problems.push({ code, message, location });
  const name = typeof value.name === 'string' ? value.name : undefined;
  const rootLabel = name !== undefined ? `action ${actionRef(kind, name)}` : `the ${kind} document`;
  // Templated dependencies are resolved once the environment is chosen (action-dependencies.ts).
  const dependencies = splitDependencies(value.dependencies);
  const withoutTemplatedDependencies =
    dependencies.templates.length > 0 ? { ...value, dependencies: dependencies.checked } : value;
  // A rendered action's templates read its RenderTemplate's, as in Garden.
  const templateRoots = { extraRoots: origin ? renderedRoots : [], syntax: reading.templateSyntax };
  // Templated include/exclude (action-source.ts) and timeout (action-timeout.ts) are resolved
  // once the environment is chosen.
  const split = <Key extends string>(from: Record<string, unknown>, keys: readonly Key[]) =>
    splitEnvironmentTemplates(
      from,
      keys,
      name !== undefined ? actionRef(kind, name) : `the ${kind} document`,
      locate,
      templateRoots,
      reading.problems,
    );
  const patterns = split(withoutTemplatedDependencies, patternKeys);
  const timeout = split(patterns.checked, ['timeout']);
  const problems = checkSchema(ActionBaseSchema, timeout.checked, {
    basePath: [],
    rootLabel,
    locate,
    writtenPath,
  });
  if (problems.length > 0) {
    reading.problems.push(...problems);
    return undefined;
  }
  const raw = value as unknown as {
    type: string;
    name: string;
    description?: string;
    source?: string;
    include?: string[];
    exclude?: string[];
    timeout?: number | string;
    cacheResult?: boolean;
    spec?: unknown;
  } & RawActionVariables &
    RawBuildKeys;
  const ref = actionRef(kind, raw.name);
  const before = reading.problems.length;

  const { type, specSchema } = actionTypeOf(kind, raw, reading, locate);
  const written = raw.spec === undefined || raw.spec === null ? {} : raw.spec;
  let spec: unknown = written;
  if (specSchema) {
    const checkOptions = { basePath: ['spec'], rootLabel: 'spec', skipTemplated: true, locate, writtenPath };
    let problems = checkSchema(specSchema, written, checkOptions);
    // A number or boolean written as a string is one, as Garden's Joi schemas convert it: looked
    // for only when the spec fails as written (converting every spec costs every load).
    if (problems.length > 0) {
      const converted = convertScalars(specSchema, written);
      if (converted !== written) {
        spec = converted;
        problems = checkSchema(specSchema, converted, checkOptions);
      }
    }
    reading.problems.push(...problems);
  }
  // A malformed reference is the cross-check's to report: not when it reads an action tend does not load.
  const templates = checkTemplateSyntax(spec, ['spec'], (p) => locate(p), {
    ...templateRoots,
    deferActionProblems: true,
  });
  reading.problems.push(...templates.problems);

  const fileDir = origin?.dir ?? path.dirname(path.join(reading.root, file.file));
  // A templated source is resolved, and checked, once the environment is chosen (action-source.ts).
  const sourceTemplate =
    raw.source !== undefined && raw.source.includes('${') ? { path: raw.source, dir: fileDir } : undefined;
  const sourceDir = path.resolve(fileDir, sourceTemplate ? '.' : (raw.source ?? '.'));
  if (sourceTemplate) {
    reading.problems.push(
      ...checkTemplateSyntax(raw.source, ['source'], (p) => locate(p), { syntax: reading.templateSyntax })
        .problems,
    );
  } else if (raw.source !== undefined) {
    const found = sourceProblem(raw.source, sourceDir, reading.root, reading.isDirectory);
    if (found) problem('TEND_CONFIG_INVALID', found, locate(['source']));
  }

  const { variableLayers, varfileTemplates } = readActionVariableLayers(
    raw,
    fileDir,
    reading.root,
    (p) => locate(p),
    reading.problems,
    templateRoots,
  );
  if (raw.variables) placeVariableLayer(raw.variables, `action ${ref}`, (p) => locate(['variables', ...p]));
  const enablement = readActionEnablement(raw, (p) => locate(p), reading.problems, reading.templateSyntax);
  const buildKeys = readBuildKeys(raw, kind, (p) => locate(p), reading.problems);
  reading.problems.push(
    ...dependencyTemplateProblems(dependencies.templates, (p) => locate(p), templateRoots),
  );
  if (reading.problems.length > before) return undefined;
  return {
    plugin: type?.plugin.name ?? '',
    templateReferences: templates.actionReferences,
    action: {
      kind,
      type: raw.type,
      name: raw.name,
      ref,
      ...(writtenType ? { writtenType } : {}),
      ...(fromModule !== undefined ? { fromModule } : {}),
      ...(raw.description !== undefined ? { description: raw.description } : {}),
      dependencies: dependencies.written,
      ...(dependencies.templates.length > 0 ? { dependencyTemplates: dependencies.templates } : {}),
      sourceDir,
      ...(sourceTemplate ? { sourceTemplate } : {}),
      ...(raw.include ? { include: raw.include } : {}),
      ...(raw.exclude ? { exclude: raw.exclude } : {}),
      ...(patterns.templates ? { patternTemplates: patterns.templates } : {}),
      ...(timeout.templates
        ? { timeoutTemplate: timeout.templates.timeout }
        : raw.timeout !== undefined
          ? { timeout: parseTimeout(raw.timeout) }
          : {}),
      ...(raw.cacheResult !== undefined ? { cacheResult: raw.cacheResult } : {}),
      spec,
      ...(variableLayers ? { variableLayers } : {}),
      ...(varfileTemplates ? { varfileTemplates } : {}),
      ...enablement,
      ...buildKeys,
      file: file.file,
      location: doc.location,
      locate: (p) => locate(p),
      ...(origin ? { rendered: origin.rendered } : {}),
    },
  };
}

/**
 * The action's type and its spec schema for the kind, or a problem saying which types there are;
 * `cacheResult` on a kind that has no result to keep is one too.
 */
function actionTypeOf(
  kind: ActionKind,
  raw: { type: string; cacheResult?: boolean },
  reading: ActionReading,
  locate: ConfigDocument['locate'],
) {
  const problem = (message: string, location: SourceLocation) =>
    reading.problems.push({ code: 'TEND_CONFIG_INVALID', message, location });
  const type = reading.types.get(raw.type);
  const typesOfKind = [...reading.types].filter(([, t]) => t.kinds.has(kind)).map(([n]) => n);
  const typeList = typesOfKind.join(', ') || '(none)';
  const specSchema = type?.kinds.get(kind);
  if (!type) {
    problem(
      `unknown action type "${raw.type}" for kind ${kind}; expected one of: ${typeList}`,
      locate(['type']),
    );
  } else if (!specSchema) {
    problem(
      `action type "${raw.type}" does not support kind ${kind} (it supports: ${[...type.kinds.keys()].join(', ')}); ` +
        `types for ${kind}: ${typeList}`,
      locate(['type']),
    );
  }
  if (raw.cacheResult !== undefined && kind !== 'Test' && kind !== 'Run') {
    problem(
      `cacheResult applies to Test and Run actions, not to ${kind} (a ${kind} is always reused for its version)`,
      locate(['cacheResult'], 'key'),
    );
  }
  return { type, specSchema };
}
