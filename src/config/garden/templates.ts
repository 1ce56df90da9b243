/**
 * Garden's config templates (docs/garden.md#config-templates): a `ConfigTemplate` lists `configs`
 * (actions, Workflows) and the JSON Schema of its inputs (`inputsSchemaPath`, or simple `inputs`);
 * each `RenderTemplate` renders them with its `inputs` (and `matrix`) as Garden does. The keys
 * tend needs to build the graph (name, dependencies, source…) are resolved here, with `inputs`,
 * `parent` and `template` only; a spec, variables and varfile paths keep their templates, resolved
 * with those roots and all the others when the action runs (action-variables.ts actionContext). Relative paths of a rendered config are relative to the
 * RenderTemplate's directory (`path:` moves it), as in Garden; `inputsSchemaPath` is relative to
 * the template's file.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { TSchema } from 'typebox';
import { TendError, type SourceLocation } from '../../errors.js';
import type { SyntaxOptions } from '../../expressions/syntax.js';
import { typeName } from '../../expressions/evaluate.js';
import { checkSchema, type ConfigProblem } from '../diagnostics.js';
import { isGardenFile } from '../files.js';
import { formatLocation, inRenderedConfig } from '../project.js';
import {
  renderRoots,
  type ConfigPath,
  type ForEachItem,
  type LocateTarget,
  type RenderedFrom,
} from '../project.js';
import type { SourceFile } from '../source.js';
import { resolveRenderedKeys } from '../template.js';
import { isRecord, listWords, type GardenRecord } from './translation.js';

export const templateKinds = ['ConfigTemplate', 'ModuleTemplate'] as const;

/** The kinds a template renders, as in Garden. */
const templatableKinds = ['Build', 'Deploy', 'Run', 'Test', 'Workflow'];

/** A ConfigTemplate document, where it is. */
export interface TemplateDocument {
  name: string;
  value: GardenRecord;
  /** The template's file, relative to the project root. */
  file: string;
  /** Its directory, absolute: `inputsSchemaPath` is relative to it. */
  dir: string;
  locate(path: ConfigPath, target?: LocateTarget): SourceLocation;
}

/** A problem of rendering, in the RenderTemplate or in the template. */
export interface RenderProblem {
  message: string;
  location: SourceLocation;
}

/** A RenderTemplate document, where it is. */
export interface RenderDocument {
  value: GardenRecord;
  /** Its directory, absolute. */
  dir: string;
  locate(path: ConfigPath, target?: LocateTarget): SourceLocation;
}

/** One config of a template, rendered: its document as Garden would read it, and where it came from. */
export interface RenderedConfig {
  value: GardenRecord;
  /** Where it is written in the template (`configs[2]`, or the `$return` of a `$forEach` there). */
  at: ConfigPath;
  /** The directory its relative paths are relative to (absolute). */
  baseDir: string;
  rendered: RenderedFrom;
}

/** Garden's ConfigTemplates (and ModuleTemplates) of every Garden file, by name. */
export function collectTemplates(
  root: string,
  files: readonly SourceFile[],
  problem: (found: ConfigProblem) => void,
): Map<string, TemplateDocument> {
  const templates = new Map<string, TemplateDocument>();
  for (const file of files) {
    if (!isGardenFile(file.file)) continue;
    for (const doc of file.parse().documents) {
      const value = doc.value;
      if (!isRecord(value) || !(templateKinds as readonly unknown[]).includes(value.kind)) continue;
      const locate = (p: ConfigPath, target: LocateTarget = 'value') => file.locate(doc.index, p, target);
      const name = String(value.name);
      const first = templates.get(name);
      if (first) {
        problem({
          code: 'TEND_CONFIG_INVALID',
          message: `a second ConfigTemplate named ${name}; the first is at ${formatLocation(first.locate([]))}`,
          location: locate(['name'], 'key'),
        });
        continue;
      }
      templates.set(name, {
        name,
        value,
        file: file.file,
        dir: path.dirname(path.join(root, file.file)),
        locate,
      });
    }
  }
  return templates;
}

interface InputsSchema {
  schema: Record<string, unknown>;
  defaults: Record<string, unknown>;
}

/** The JSON Schema of a template's inputs; throws a RenderProblem-shaped error (in the template). */
function inputsSchema(template: TemplateDocument): InputsSchema {
  const { value } = template;
  const fail = (message: string, at: ConfigPath): never => {
    throw Object.assign(new Error(message), { at });
  };
  if (value.inputs !== undefined && value.inputsSchemaPath !== undefined) {
    fail('a ConfigTemplate takes `inputs` or `inputsSchemaPath`, not both', ['inputsSchemaPath']);
  }
  let schema: Record<string, unknown> = { type: 'object', additionalProperties: true };
  if (typeof value.inputsSchemaPath === 'string') {
    const file = path.resolve(template.dir, value.inputsSchemaPath);
    let read: unknown;
    try {
      read = JSON.parse(readFileSync(file, 'utf8'));
    } catch (error) {
      fail(
        `cannot read the inputs schema ${value.inputsSchemaPath} of ConfigTemplate ${template.name}: ${(error as Error).message}`,
        ['inputsSchemaPath'],
      );
    }
    if (!isRecord(read) || read.type !== 'object') {
      fail(
        `the inputs schema ${value.inputsSchemaPath} of ConfigTemplate ${template.name} must have "type": "object"`,
        ['inputsSchemaPath'],
      );
    }
    schema = read as Record<string, unknown>;
  } else if (value.inputsSchemaPath !== undefined) {
    fail('inputsSchemaPath must be a path (a string)', ['inputsSchemaPath']);
  } else if (isRecord(value.inputs)) {
    // Garden's simple inputs: `{ type, default, description }` each; one without a default is required.
    const required = Object.entries(value.inputs)
      .filter(([, input]) => !isRecord(input) || input.default === undefined || input.default === null)
      .map(([key]) => key);
    schema = { type: 'object', additionalProperties: false, properties: value.inputs, required };
  }
  const defaults: Record<string, unknown> = {};
  if (isRecord(schema.properties)) {
    for (const [key, property] of Object.entries(schema.properties)) {
      if (isRecord(property) && property.default !== undefined) defaults[key] = property.default;
    }
  }
  return { schema, defaults };
}

/** Each combination of a `matrix` (key → values), over the given inputs. */
function matrixInputs(inputs: GardenRecord, matrix: unknown): GardenRecord[] {
  if (!isRecord(matrix) || Object.keys(matrix).length === 0) return [inputs];
  let combinations: GardenRecord[] = [inputs];
  for (const [key, values] of Object.entries(matrix)) {
    if (!Array.isArray(values)) continue;
    combinations = combinations.flatMap((combination) =>
      values.map((item: unknown) => ({ ...combination, [key]: item })),
    );
  }
  return combinations;
}

/** The keys of a templated config that stay as written (resolved when the action runs). */
const keptKeys = new Set(['spec', 'variables', 'varfiles']);
/** A Workflow's keys resolved when it runs (`tend workflow`), with the project's contexts. */
const keptWorkflowKeys = new Set(['steps', 'envVars', 'files']);

/**
 * The configs a RenderTemplate renders. Problems go to `problem`; a config with one is left out.
 * @param locateTemplateValue where a value under the template's `configs` is, for template errors
 */
export function renderTemplate(
  document: RenderDocument,
  templates: ReadonlyMap<string, TemplateDocument>,
  problem: (found: RenderProblem) => void,
  /** How the project's templates read (template-syntax.ts). */
  syntax: SyntaxOptions,
): RenderedConfig[] {
  const render = document.value;
  const renderAt = document.locate([]);
  const inRender = (message: string, p: ConfigPath) =>
    problem({ message, location: document.locate(p, 'key') });
  const parent = String(render.name);
  // Garden 0.12's `kind: Module, type: templated` renders a template as a RenderTemplate does.
  const renderer = render.kind === 'Module' ? 'templated module' : 'RenderTemplate';
  if (typeof render.template !== 'string') {
    inRender(`${renderer} ${parent} needs template: <name>`, ['template']);
    return [];
  }
  const template = templates.get(render.template);
  if (!template) {
    const names = [...templates.keys()].sort();
    inRender(
      `${renderer} ${parent} names template "${render.template}", which is not defined; templates: ${listWords(names) || '(none)'}`,
      ['template'],
    );
    return [];
  }
  let schema: InputsSchema;
  try {
    schema = inputsSchema(template);
  } catch (error) {
    const at = (error as { at?: ConfigPath }).at;
    if (!at) throw error;
    problem({ message: (error as Error).message, location: template.locate(at, 'key') });
    return [];
  }
  if (render.inputs !== undefined && !isRecord(render.inputs)) {
    inRender('inputs must be a mapping', ['inputs']);
    return [];
  }
  const configs = template.value.configs ?? [];
  const modules = template.value.modules ?? [];
  if (!Array.isArray(configs) || !Array.isArray(modules)) {
    const key = Array.isArray(configs) ? 'modules' : 'configs';
    problem({
      message: `${key} must be a list of ${key === 'configs' ? 'actions' : 'modules'}`,
      location: template.locate([key], 'key'),
    });
    return [];
  }
  const out: RenderedConfig[] = [];
  for (const given of matrixInputs(render.inputs ?? {}, render.matrix)) {
    const inputs = { ...schema.defaults, ...given };
    const invalid = checkSchema(schema.schema as unknown as TSchema, inputs, {
      basePath: ['inputs'],
      rootLabel: 'inputs',
      skipTemplated: true,
      locate: (p, target) => document.locate(p, target),
    });
    if (invalid.length > 0) {
      for (const found of invalid) {
        problem({
          message: `${found.message} (the inputs schema of ConfigTemplate ${template.name})`,
          location: found.location,
        });
      }
      return [];
    }
    const rendered: RenderedFrom = {
      parent,
      template: template.name,
      inputs,
      // An input a matrix sets, or a default, is not written under `inputs:`.
      locateInput: (name) =>
        isRecord(render.inputs) && Object.hasOwn(render.inputs, name) && given[name] === render.inputs[name]
          ? document.locate(['inputs', name])
          : undefined,
      renderedAt: renderAt,
      ...(renderer === 'RenderTemplate' ? {} : { renderer }),
    };
    const place: RenderPlace = { template, rendered, renderDir: document.dir, syntax };
    // Its configs' lines are the template's, shared by each rendering: which one it is is said.
    const inTemplate = (found: RenderProblem) =>
      problem({ ...found, message: inRenderedConfig(found.message, rendered) });
    for (const { config, at, item } of expandConfigs(configs, place, inTemplate)) {
      const one = renderConfig(
        config,
        at,
        item ? { ...place, rendered: { ...rendered, item } } : place,
        inTemplate,
      );
      if (one) out.push(one);
    }
    modules.forEach((module: unknown, index) => {
      const one = renderModule(module, index, place, inTemplate);
      if (one) out.push(one);
    });
  }
  return out;
}

/** What a template's config is rendered with: its template, the RenderTemplate's inputs and directory. */
interface RenderPlace {
  template: TemplateDocument;
  rendered: RenderedFrom;
  /** The RenderTemplate's directory, absolute. */
  renderDir: string;
  /** How the project's templates read (template-syntax.ts). */
  syntax: SyntaxOptions;
}

/** A config of a template's `configs` once its `$concat`s are expanded: where it is written, and its `$forEach` item. */
interface ConfigItem {
  config: unknown;
  at: ConfigPath;
  item?: ForEachItem;
}

/**
 * A template's `configs` with each `$concat` spliced in, as Garden evaluates the list before it
 * reads each config (core/src/config/render-template.ts): a `$forEach` in it gives one config per
 * item, its `$filter` and the keys read when the configuration is loaded resolved with `inputs`,
 * `parent`, `template` and `item`; the rest of each config keeps its templates, `${item.*}`
 * included (resolved when the action runs, with its item). A problem leaves the entry out.
 */
function expandConfigs(
  configs: readonly unknown[],
  { template, rendered, syntax }: RenderPlace,
  problem: (found: RenderProblem) => void,
): ConfigItem[] {
  return configs.flatMap((config, index): ConfigItem[] => {
    const at: ConfigPath = ['configs', index, '$concat'];
    if (!isRecord(config) || !('$concat' in config)) return [{ config, at: ['configs', index] }];
    const fail = (message: string, p: ConfigPath): never => {
      throw new TendError('TEND_CONFIG_INVALID', message, { location: template.locate(p) });
    };
    const resolve = (value: unknown, p: ConfigPath, item?: ForEachItem) =>
      resolveRenderedKeys(
        value,
        { ...renderRoots(rendered), ...(item ? { item } : {}) },
        (below) => template.locate([...p, ...below]),
        syntax,
      );
    try {
      const concat = config.$concat;
      if (Array.isArray(concat)) return concat.map((one, i) => ({ config: one, at: [...at, i] }));
      if (!isRecord(concat) || !('$forEach' in concat)) {
        const list = resolve(concat, at);
        if (!Array.isArray(list)) return fail(`$concat needs a list (got ${typeName(list)})`, at);
        return list.map((one) => ({ config: one, at }));
      }
      const collection = resolve(concat.$forEach, [...at, '$forEach']);
      if (!Array.isArray(collection) && !isRecord(collection)) {
        return fail(`$forEach needs a list or a mapping (got ${typeName(collection)})`, [...at, '$forEach']);
      }
      const items: ForEachItem[] = Array.isArray(collection)
        ? collection.map((value, key) => ({ key, value }))
        : Object.entries(collection).map(([key, value]) => ({ key, value }));
      return items
        .filter((item) => {
          if (!('$filter' in concat)) return true;
          const keep = resolve(concat.$filter, [...at, '$filter'], item);
          if (typeof keep === 'boolean') return keep;
          return fail(`$filter needs true or false (got ${typeName(keep)})`, [...at, '$filter']);
        })
        .map((item) => ({ config: concat.$return, at: [...at, '$return'], item }));
    } catch (error) {
      if (!(error instanceof TendError)) throw error;
      problem({ message: error.message, location: error.location ?? template.locate(at) });
      return [];
    }
  });
}

function renderConfig(
  config: unknown,
  configAt: ConfigPath,
  { template, rendered, renderDir, syntax }: RenderPlace,
  problem: (found: RenderProblem) => void,
): RenderedConfig | undefined {
  const at = (...p: ConfigPath): ConfigPath => [...configAt, ...p];
  if (!isRecord(config)) {
    problem({ message: 'each of configs must be a mapping (an action)', location: template.locate(at()) });
    return undefined;
  }
  if (config.kind === undefined) {
    problem({
      location: template.locate(at()),
      message: `a config has no kind; give it kind: ${listWords(templatableKinds)}`,
    });
    return undefined;
  }
  if (typeof config.kind !== 'string' || !templatableKinds.includes(config.kind)) {
    const itself = config.kind === 'RenderTemplate' && config.template === template.name;
    problem({
      location: template.locate(at('kind')),
      message:
        `ConfigTemplate ${template.name} renders kind ${JSON.stringify(config.kind)}` +
        (itself ? ', a RenderTemplate of itself (a cycle)' : '') +
        `; a template renders ${listWords(templatableKinds)} configs only, as in Garden`,
    });
    return undefined;
  }
  const value: GardenRecord = {};
  for (const [key, item] of Object.entries(config)) {
    if (keptKeys.has(key) || (config.kind === 'Workflow' && keptWorkflowKeys.has(key))) {
      value[key] = item;
      continue;
    }
    try {
      value[key] = resolveRenderedKeys(
        item,
        renderRoots(rendered),
        (p) => template.locate(at(key, ...p)),
        syntax,
      );
    } catch (error) {
      if (!(error instanceof TendError)) throw error;
      // Dependencies that read other contexts (`deploy.${var.db}`) are resolved in the chosen
      // environment, as an action's own are (action-dependencies.ts), the template's roots included.
      if (key === 'dependencies' && isDependencyTemplates(item)) {
        value[key] = item;
        continue;
      }
      problem({
        location: error.location ?? template.locate(at(key)),
        message: `${error.message}; a templated config's ${key} is read when tend loads the configuration, so it may use inputs, parent and template only`,
      });
      return undefined;
    }
  }
  return { value, at: configAt, baseDir: movedBy(value, renderDir), rendered };
}

/** A dependency list an action may template (a string, or a list of strings), unlike `$concat` and other structures. */
const isDependencyTemplates = (value: unknown) =>
  typeof value === 'string' || (Array.isArray(value) && value.every((item) => typeof item === 'string'));

/** The directory a rendered config's relative paths are relative to: the render's, or its `path:` (taken out). */
function movedBy(value: GardenRecord, renderDir: string): string {
  if (value.path === undefined) return renderDir;
  const moved = path.resolve(renderDir, String(value.path));
  delete value.path;
  return moved;
}

/**
 * A module of a template (Garden 0.12's ModuleTemplate, or a ConfigTemplate's `modules`), rendered
 * as Garden 0.12 renders it: each key resolved with `inputs`, `parent` and `template`, where it
 * reads nothing else; a key that reads other contexts (`var`, `modules`, `runtime`) stays as
 * written and is resolved with the others, those roots included, when its actions run.
 */
function renderModule(
  module: unknown,
  index: number,
  { template, rendered, renderDir, syntax }: RenderPlace,
  problem: (found: RenderProblem) => void,
): RenderedConfig | undefined {
  const at = (...p: ConfigPath): ConfigPath => ['modules', index, ...p];
  if (!isRecord(module)) {
    problem({ message: 'each of modules must be a mapping (a module)', location: template.locate(at()) });
    return undefined;
  }
  const value: GardenRecord = { kind: 'Module' };
  for (const [key, item] of Object.entries(module)) {
    value[key] = resolvedWherePossible(item, [], (part, p) =>
      resolveRenderedKeys(part, renderRoots(rendered), (q) => template.locate(at(key, ...p, ...q)), syntax),
    );
  }
  const baseDir = movedBy(value, renderDir);
  generatedFromTemplate(value, template.dir, baseDir);
  return { value, at: ['modules', index], baseDir, rendered };
}

/**
 * A module's value resolved with the template's roots where it reads nothing else: a list or
 * mapping that does not resolve whole is resolved item by item (a task's `name` beside its
 * `command` reading `${var.…}`), a string that reads other contexts stays as written.
 */
function resolvedWherePossible(
  item: unknown,
  at: ConfigPath,
  resolve: (part: unknown, at: ConfigPath) => unknown,
): unknown {
  try {
    return resolve(item, at);
  } catch (error) {
    if (!(error instanceof TendError)) throw error;
    const again = (child: unknown, key: string | number) =>
      resolvedWherePossible(child, [...at, key], resolve);
    if (Array.isArray(item)) return item.map(again);
    // A structure (`$forEach`, `$merge`, …) is resolved whole or left as written.
    if (isRecord(item) && !Object.keys(item).some((k) => k.startsWith('$'))) {
      return Object.fromEntries(Object.entries(item).map(([k, child]) => [k, again(child, k)]));
    }
    return item;
  }
}

/**
 * A rendered module's `generateFiles` sources are read beside the template's file, not the module
 * (Garden's `sourcePath`: "relative to the ModuleTemplate configuration file if one is being
 * applied"): each is rewritten relative to the module's directory.
 */
function generatedFromTemplate(value: GardenRecord, templateDir: string, baseDir: string): void {
  if (!Array.isArray(value.generateFiles)) return;
  value.generateFiles = value.generateFiles.map((entry: unknown) => {
    if (!isRecord(entry) || typeof entry.sourcePath !== 'string') return entry;
    const source = entry.sourcePath;
    if (source.includes('${') || path.isAbsolute(source)) return entry;
    const relative = path.relative(baseDir, path.resolve(templateDir, source));
    return { ...entry, sourcePath: relative.split(path.sep).join(path.posix.sep) };
  });
}
