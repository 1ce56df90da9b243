/**
 * Loads a project's configuration (docs/design.md#configuration): `tend.yml` at the root (the Project document, and
 * maybe actions) and every `*.tend.yml` below it. Every document is checked against tend's
 * schemas and its plugin's schemas; every problem of a load is reported at once, each with its
 * file:line:column.
 */
import { Value } from 'typebox/value';
import { readFile, statSync } from 'node:fs';
import { promisify } from 'node:util';
import path from 'node:path';
import { TendError } from '../errors.js';
import { statePaths } from '../state/files.js';
import type { SourceLocation } from '../errors.js';
import { actionKinds } from '../plugin/types.js';
import type { ActionKind, PluginDefinition } from '../plugin/types.js';
import { checkSchema, configError, describeValue, sortProblems } from './diagnostics.js';
import type { ConfigProblem } from './diagnostics.js';
import { actionRef, formatLocation } from './project.js';
import type { ActionConfig, ConfigPath, LocateTarget, ProjectConfig, RenderedFrom } from './project.js';
import { ActionBaseSchema, actionTypeIndex, parseTimeout } from './schema.js';
import { loadProjectPlugins } from './plugin-modules.js';
import { readProjectDocument } from './project-document.js';
import { sha256Hex } from '../hash.js';
import { ParseCache } from './parse-cache.js';
import { SourceFile } from './source.js';
import {
  findConfigFiles,
  findProjectRoot,
  gardenScanSettings,
  isGardenFileName,
  projectFileCandidates,
  projectFileName,
} from './files.js';
import { readGardenDocument } from './garden/document.js';
import {
  collectTemplates,
  renderTemplate,
  templateKinds,
  type TemplateDocument,
} from './garden/templates.js';
import { isRecord } from './garden/translation.js';
import type { GardenRunnable } from './garden/workflows.js';
import { renderedRoots } from './template-context.js';
import {
  environmentsDisjoint,
  environmentsProblems,
  readActionEnablement,
  readActionVariableLayers,
  type RawActionVariables,
} from './action-variables.js';
import { emptyGardenIndex, gardenProjectIndex, type GardenProjectIndex } from './garden/project-index.js';
import type { SourceDocument } from './source.js';
import { checkTemplateSyntax, containsTemplate } from './template.js';
import { buildReferenceProblems, readBuildKeys, type RawBuildKeys } from './build-keys.js';
import type { TemplateActionReference } from './template.js';

/** Not node:fs/promises: loading it loads readline too, ~2 ms of every start. */
const readFileAsync = promisify(readFile);

export { actionFilePattern, findProjectRoot, ignoredDirectories, projectFileName } from './files.js';

export interface LoadOptions {
  /** The project root (absolute, or relative to cwd); default: the nearest directory with a tend.yml. */
  root?: string;
  cwd: string;
  plugins: readonly PluginDefinition[];
}

/** What tend read and accepts without doing it (a Garden setting it ignores, a Workflow it does not run). */
export interface ConfigNote {
  message: string;
  location: SourceLocation;
}

export interface LoadedConfig {
  project: ProjectConfig;
  actions: ActionConfig[];
  notes: ConfigNote[];
  runnables: GardenRunnable[];
  /** The given plugins, then the third-party plugins tend.yml names (`providers[].plugin`). */
  plugins: PluginDefinition[];
}

const documentKinds = ['Project', ...actionKinds] as const;

/** Loads and validates the project; throws one TendError listing every problem. */
export async function loadProjectConfig(options: LoadOptions): Promise<LoadedConfig> {
  const root = findProjectRoot(options);
  const cache = new ParseCache(statePaths(root).cache);
  const hashes = new Map<SourceFile, string>();
  const read = (names: readonly string[]) =>
    Promise.all(
      names.map(async (name) => {
        const text = await readFileAsync(path.join(root, name), 'utf8');
        const sha256 = sha256Hex(text);
        const file = new SourceFile(name, text, cache.lookup(name, text, sha256));
        hashes.set(file, sha256);
        return file;
      }),
    );
  // The Project document says where a Garden project's other files are (scan, dotIgnoreFile).
  const projectFiles = await read(projectFileCandidates(root));
  const projectFile = projectFiles.find((file) => projectDocumentOf(file) !== undefined) ?? projectFiles[0]!;
  const gardenProject = isGardenFileName(projectFile.file) ? projectDocumentOf(projectFile) : undefined;
  const names = await findConfigFiles(
    root,
    projectFiles.map((file) => file.file),
    gardenScanSettings(gardenProject),
  );
  const files = [...projectFiles, ...(await read(names.slice(projectFiles.length)))];
  const projectPlugins = await loadProjectPlugins(projectFile, root, options.plugins);
  if (projectPlugins.problems.length > 0) {
    for (const file of files) file.release();
    throw configError(projectPlugins.problems);
  }
  const plugins = [...options.plugins, ...projectPlugins.plugins];
  const loader = new Loader(
    root,
    plugins,
    projectFiles.map((file) => file.file),
  );
  try {
    const loaded = { ...loader.load(files), plugins };
    // Only a load without problems is remembered: a file with an error is parsed again next time.
    for (const file of files) cache.store(file.file, hashes.get(file)!, file.parse().documents);
    cache.save();
    return loaded;
  } finally {
    for (const file of files) file.release();
  }
}

/** A file's Project document, if it has one (the first). */
function projectDocumentOf(file: SourceFile): Record<string, unknown> | undefined {
  const document = file
    .parse()
    .documents.find((doc) => (doc.value as { kind?: unknown } | null)?.kind === 'Project');
  return document?.value as Record<string, unknown> | undefined;
}

interface PendingAction {
  action: ActionConfig;
  plugin: string;
  templateReferences: TemplateActionReference[];
}

class Loader {
  readonly #problems: ConfigProblem[] = [];
  readonly #types: ReturnType<typeof actionTypeIndex>;
  readonly #directories = new Map<string, boolean>();
  #project: ProjectConfig | undefined;
  #projectSeen: SourceLocation | undefined;
  readonly #actions: PendingAction[] = [];
  readonly #notes: ConfigNote[] = [];
  readonly #runnables: GardenRunnable[] = [];
  /** Garden actions tend cannot run (each a problem already): no second error where they are used. */
  readonly #unloaded = new Set<string>();
  #gardenIndex: GardenProjectIndex = emptyGardenIndex;
  /** Garden ConfigTemplates by name, read before any RenderTemplate. */
  #templates = new Map<string, TemplateDocument>();

  constructor(
    readonly root: string,
    readonly plugins: readonly PluginDefinition[],
    /** The files at the root that may hold the Project document (tend.yml, Garden's). */
    readonly projectFiles: readonly string[],
  ) {
    this.#types = actionTypeIndex(plugins);
  }

  load(files: SourceFile[]): Omit<LoadedConfig, 'plugins'> {
    // A 0.12 module's runtime dependency names a service or task of any module (garden/project-index.ts).
    this.#gardenIndex = gardenProjectIndex(this.root, files);
    this.#templates = collectTemplates(this.root, files, (problem) => this.#problems.push(problem));
    for (const file of files) {
      const { documents, problems } = file.parse();
      this.#problems.push(...problems);
      for (const doc of documents) this.#document(file, doc);
      // Positions found later (errors only) parse the file again; holding every AST costs memory and GC.
      file.release();
    }
    const projectFile = files[0];
    if (
      !this.#projectSeen &&
      projectFile &&
      !this.#problems.some((p) => p.location.file === projectFile.file)
    ) {
      this.#problem(
        'TEND_CONFIG_INVALID',
        `${projectFile.file} has no Project document; expected one with "kind: Project"`,
        {
          file: projectFile.file,
          line: 1,
          column: 1,
        },
      );
    }
    this.#crossCheck();
    if (this.#problems.length > 0) {
      const rank = new Map(files.map((f, i) => [f.file, i]));
      const byFile = new Map<number, ConfigProblem[]>();
      for (const problem of this.#problems) {
        const r = rank.get(problem.location.file) ?? files.length;
        byFile.set(r, [...(byFile.get(r) ?? []), problem]);
      }
      const ordered = [...byFile.entries()]
        .sort(([a], [b]) => a - b)
        .flatMap(([, list]) => sortProblems(list));
      throw configError(ordered);
    }
    if (!this.#project) throw new TendError('TEND_INTERNAL', 'the project was not loaded');
    const actions = this.#actions.map((a) => a.action);
    return { project: this.#project, actions, notes: this.#notes, runnables: this.#runnables };
  }

  #problem(code: ConfigProblem['code'], message: string, location: SourceLocation): void {
    this.#problems.push({ code, message, location });
  }

  #document(file: SourceFile, doc: SourceDocument): void {
    const locate = (p: ConfigPath, target: LocateTarget = 'value') => file.locate(doc.index, p, target);
    if (!isGardenFileName(path.posix.basename(file.file))) return this.#read(file, doc, doc.value, locate);
    const dir = path.dirname(path.join(this.root, file.file));
    const kind = isRecord(doc.value) ? doc.value.kind : undefined;
    if ((templateKinds as readonly unknown[]).includes(kind)) return; // read by #collectTemplates
    if (kind !== 'RenderTemplate') return this.#gardenDocument(file, doc, doc.value, dir, locate);
    const render = doc.value as Record<string, unknown>;
    if (render.disabled === true) {
      const message = `RenderTemplate ${String(render.name)} is disabled; not rendered`;
      this.#notes.push({ message, location: locate(['disabled'], 'key') });
      return;
    }
    const rendered = renderTemplate({ value: render, dir, locate }, this.#templates, (found) =>
      this.#problem('TEND_CONFIG_INVALID', found.message, found.location),
    );
    for (const config of rendered) {
      const template = this.#templates.get(config.rendered.template)!;
      const locateConfig = (p: ConfigPath, target: LocateTarget = 'value') =>
        template.locate(['configs', config.index, ...p], target);
      this.#gardenDocument(file, doc, config.value, config.baseDir, locateConfig, config.rendered);
    }
  }

  /** A Garden document (or a config a template rendered) read as tend's. */
  #gardenDocument(
    file: SourceFile,
    doc: SourceDocument,
    value: unknown,
    dir: string,
    locate: (p: ConfigPath, target?: LocateTarget) => SourceLocation,
    rendered?: RenderedFrom,
  ): void {
    for (const { value: read, translation } of readGardenDocument(value, {
      dir,
      index: this.#gardenIndex,
    })) {
      const at = (p: ConfigPath) => locate(translation.documentPath(p), 'key');
      for (const { message, path: p } of translation.problems) {
        this.#problem('TEND_CONFIG_UNSUPPORTED', message, at(p));
      }
      for (const { message, path: p } of translation.notes) this.#notes.push({ message, location: at(p) });
      if (translation.unloadedAction) this.#unloaded.add(translation.unloadedAction);
      if (translation.runnable) this.#runnables.push({ ...translation.runnable, file: file.file, locate });
      if (read !== undefined) {
        const origin = rendered ? { dir, rendered } : undefined;
        this.#read(
          file,
          doc,
          read,
          (p, target = 'value') => locate(translation.originalPath(p), target),
          origin,
        );
      }
    }
  }

  #read(
    file: SourceFile,
    doc: SourceDocument,
    value: unknown,
    locate: (p: ConfigPath, target?: 'key' | 'value') => SourceLocation,
    /** A config rendered from a Garden template: its directory and what its templates read. */
    origin?: { dir: string; rendered: RenderedFrom },
  ): void {
    const expectedKinds = documentKinds.join(', ');
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      this.#problem(
        'TEND_CONFIG_INVALID',
        `expected a mapping with a "kind" key (one of: ${expectedKinds}), got ${describeValue(value)}`,
        doc.location,
      );
      return;
    }
    const record = value as Record<string, unknown>;
    if (!('kind' in record)) {
      this.#problem(
        'TEND_CONFIG_INVALID',
        `missing required key "kind"; expected one of: ${expectedKinds}`,
        doc.location,
      );
      return;
    }
    const kind = record.kind;
    if (kind === 'Project') {
      this.#projectDocument(file, doc, record, locate);
    } else if (typeof kind === 'string' && (actionKinds as readonly string[]).includes(kind)) {
      this.#actionDocument(file, doc, record, kind as ActionKind, locate, origin);
    } else {
      this.#problem(
        'TEND_CONFIG_INVALID',
        `unknown kind ${describeValue(kind)}; expected one of: ${expectedKinds}`,
        locate(['kind']),
      );
    }
  }

  #projectDocument(
    file: SourceFile,
    doc: SourceDocument,
    value: Record<string, unknown>,
    locate: (p: ConfigPath, target?: 'key' | 'value') => SourceLocation,
  ): void {
    if (!this.projectFiles.includes(file.file)) {
      this.#problem(
        'TEND_CONFIG_INVALID',
        `a Project document belongs in ${projectFileName} at the project root, not in ${file.file}`,
        doc.location,
      );
      return;
    }
    if (this.#projectSeen) {
      const both = this.#projectSeen.file !== file.file;
      this.#problem(
        'TEND_CONFIG_INVALID',
        both
          ? `a second Project document, beside the one at ${formatLocation(this.#projectSeen)}: ` +
              `${this.#projectSeen.file} and ${file.file} both declare the project; keep one of them`
          : `a second Project document; the first is at ${formatLocation(this.#projectSeen)}`,
        doc.location,
      );
      return;
    }
    this.#projectSeen = doc.location;
    this.#project = readProjectDocument(
      { root: this.root, file: file.file, location: doc.location, value, locate, plugins: this.plugins },
      this.#problems,
    );
  }

  #actionDocument(
    file: SourceFile,
    doc: SourceDocument,
    value: Record<string, unknown>,
    kind: ActionKind,
    locate: (p: ConfigPath, target?: 'key' | 'value') => SourceLocation,
    origin?: { dir: string; rendered: RenderedFrom },
  ): void {
    const name = typeof value.name === 'string' ? value.name : undefined;
    const rootLabel = name !== undefined ? `action ${actionRef(kind, name)}` : `the ${kind} document`;
    const problems = checkSchema(ActionBaseSchema, value, { basePath: [], rootLabel, locate });
    if (problems.length > 0) {
      this.#problems.push(...problems);
      return;
    }
    const raw = value as unknown as {
      type: string;
      name: string;
      description?: string;
      dependencies?: string[];
      source?: string;
      include?: string[];
      exclude?: string[];
      timeout?: number | string;
      cacheResult?: boolean;
      spec?: unknown;
    } & RawActionVariables &
      RawBuildKeys;
    const ref = actionRef(kind, raw.name);
    const before = this.#problems.length;

    const type = this.#types.get(raw.type);
    const typesOfKind = [...this.#types].filter(([, t]) => t.kinds.has(kind)).map(([n]) => n);
    const typeList = typesOfKind.join(', ') || '(none)';
    const specSchema = type?.kinds.get(kind);
    if (!type) {
      this.#problem(
        'TEND_CONFIG_INVALID',
        `unknown action type "${raw.type}" for kind ${kind}; expected one of: ${typeList}`,
        locate(['type']),
      );
    } else if (!specSchema) {
      this.#problem(
        'TEND_CONFIG_INVALID',
        `action type "${raw.type}" does not support kind ${kind} (it supports: ${[...type.kinds.keys()].join(', ')}); ` +
          `types for ${kind}: ${typeList}`,
        locate(['type']),
      );
    }
    if (raw.cacheResult !== undefined && kind !== 'Test' && kind !== 'Run') {
      this.#problem(
        'TEND_CONFIG_INVALID',
        `cacheResult applies to Test and Run actions, not to ${kind} (a ${kind} is always reused for its version)`,
        locate(['cacheResult'], 'key'),
      );
    }
    const spec = raw.spec === undefined || raw.spec === null ? {} : raw.spec;
    if (specSchema) {
      this.#problems.push(
        ...checkSchema(specSchema, spec, {
          basePath: ['spec'],
          rootLabel: 'spec',
          skipTemplated: true,
          locate,
        }),
      );
    }
    const templates = checkTemplateSyntax(spec, ['spec'], (p) => locate(p), origin ? renderedRoots : []);
    this.#problems.push(...templates.problems);

    const fileDir = origin?.dir ?? path.dirname(path.join(this.root, file.file));
    const sourceDir = path.resolve(fileDir, raw.source ?? '.');
    if (raw.source !== undefined) {
      const relative = path.relative(this.root, sourceDir);
      if (relative.startsWith('..') || path.isAbsolute(relative)) {
        this.#problem(
          'TEND_CONFIG_INVALID',
          `source "${raw.source}" is outside the project root`,
          locate(['source']),
        );
      } else if (!this.#isDirectory(sourceDir)) {
        this.#problem(
          'TEND_CONFIG_INVALID',
          `source directory "${raw.source}" does not exist (resolved to ${relative || '.'} in the project)`,
          locate(['source']),
        );
      }
    }

    const variableLayers = readActionVariableLayers(
      raw,
      fileDir,
      this.root,
      (p) => locate(p),
      this.#problems,
    );
    const enablement = readActionEnablement(raw, (p) => locate(p), this.#problems);
    const buildKeys = readBuildKeys(raw, kind, (p) => locate(p), this.#problems);
    const dependencies = [...new Set(raw.dependencies ?? [])];
    if (this.#problems.length > before) return;
    this.#actions.push({
      plugin: type?.plugin.name ?? '',
      templateReferences: templates.actionReferences,
      action: {
        kind,
        type: raw.type,
        name: raw.name,
        ref,
        ...(raw.description !== undefined ? { description: raw.description } : {}),
        dependencies,
        sourceDir,
        ...(raw.include ? { include: raw.include } : {}),
        ...(raw.exclude ? { exclude: raw.exclude } : {}),
        ...(raw.timeout !== undefined ? { timeout: parseTimeout(raw.timeout) } : {}),
        ...(raw.cacheResult !== undefined ? { cacheResult: raw.cacheResult } : {}),
        spec,
        ...(variableLayers ? { variableLayers } : {}),
        ...enablement,
        ...buildKeys,
        file: file.file,
        location: doc.location,
        locate: (p) => locate(p),
        ...(origin ? { rendered: origin.rendered } : {}),
      },
    });
  }

  #isDirectory(dir: string): boolean {
    let known = this.#directories.get(dir);
    if (known === undefined) {
      try {
        known = statSync(dir).isDirectory();
      } catch {
        known = false;
      }
      this.#directories.set(dir, known);
    }
    return known;
  }

  /** Checks across documents: duplicate actions, dependencies, template references, providers. */
  #crossCheck(): void {
    const byRef = new Map<string, ActionConfig>();
    const copies = new Map<string, ActionConfig[]>();
    for (const { action } of this.#actions) {
      const earlier = copies.get(action.ref) ?? [];
      copies.set(action.ref, [...earlier, action]);
      // One name per environment, as in Garden (selectActionCopies keeps the one in use).
      if (earlier.length === 0) byRef.set(action.ref, action);
      else if (!earlier.every((other) => environmentsDisjoint(other, action))) {
        this.#problem(
          'TEND_CONFIG_DUPLICATE_ACTION',
          `duplicate action ${action.ref}; first defined at ${formatLocation(earlier[0]!.locate(['name']))}`,
          action.locate(['name']),
        );
      }
    }
    const defined = (ref: string) => byRef.has(ref) || this.#unloaded.has(ref);
    const refsOfKind = (kind: string) => {
      const refs = [...byRef.keys()].filter((r) => r.startsWith(`${kind}.`));
      return refs.length === 0 ? '(none)' : `${refs.slice(0, 20).join(', ')}${refs.length > 20 ? ', …' : ''}`;
    };
    const configured = new Set(this.#project?.providers.map((p) => p.name));
    for (const { action, plugin, templateReferences } of this.#actions) {
      action.dependencies.forEach((dependency, i) => {
        const where = () => action.locate(['dependencies', i]);
        if (dependency === action.ref) {
          this.#problem('TEND_CONFIG_INVALID', `${action.ref} cannot depend on itself`, where());
        } else if (!defined(dependency)) {
          const kind = dependency.slice(0, dependency.indexOf('.'));
          this.#problem(
            'TEND_CONFIG_INVALID',
            `unknown dependency "${dependency}" of ${action.ref}; ${kind} actions: ${refsOfKind(kind)}`,
            where(),
          );
        }
      });
      this.#problems.push(...buildReferenceProblems(action, defined, () => refsOfKind('build')));
      for (const reference of templateReferences) {
        if (reference.ref === action.ref) {
          this.#problem(
            'TEND_TEMPLATE',
            `${action.ref} cannot use its own outputs`,
            action.locate(reference.path),
          );
        } else if (!defined(reference.ref)) {
          const kind = reference.ref.slice(0, reference.ref.indexOf('.'));
          this.#problem(
            'TEND_TEMPLATE',
            `unknown action "${reference.ref}" in a template expression; ${kind} actions: ${refsOfKind(kind)}`,
            action.locate(reference.path),
          );
        }
      }
      if (this.#project) {
        this.#problems.push(
          ...environmentsProblems(action, new Set(this.#project.environments.map((e) => e.name))),
        );
      }
      if (this.#project && plugin && !configured.has(plugin)) {
        this.#problem(
          'TEND_PROVIDER_NOT_FOUND',
          `action type "${action.type}" comes from provider "${plugin}", which is not listed under providers in ${this.#project.file}`,
          action.locate(['type']),
        );
      }
    }
  }
}

const templated = new WeakMap<ActionConfig, boolean>();

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
 * string, `"8080"` where it wants a number). Then the values that were templates when loading are
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
  const converted = Value.Convert(specSchema, structuredClone(spec));
  const problems = checkSchema(specSchema, converted, {
    basePath: ['spec'],
    rootLabel: 'spec',
    skipTemplated: true,
    locate: (p) => action.locate(p),
  });
  if (problems.length > 0) {
    throw configError(
      problems.map((p) => ({ ...p, message: `${p.message} (after resolving template expressions)` })),
    );
  }
  return converted;
}
