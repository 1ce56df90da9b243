/**
 * A step of the configuration pipeline (pipeline.ts): Garden's documents read as tend's — 0.12
 * modules converted to actions, Garden's actions and Project translated, RenderTemplates rendered
 * from their ConfigTemplates (src/config/garden/, docs/garden.md). What tend cannot run is a
 * problem, what it accepts and ignores a note; tend's own documents pass as they are.
 */
import type { GardenRunnable } from './garden/workflows.js';
import path from 'node:path';
import type { SyntaxOptions } from '../expressions/syntax.js';
import type { ConfigProblem } from './diagnostics.js';
import { isGardenFile } from './files.js';
import { readGardenDocument } from './garden/document.js';
import { buildlessModuleOf } from './garden/module-references.js';
import { gardenProjectIndex, type GardenProjectIndex } from './garden/project-index.js';
import {
  collectTemplates,
  renderTemplate,
  templateKinds,
  type TemplateDocument,
} from './garden/templates.js';
import { isRecord } from './garden/translation.js';
import type { ConfigPath, LocateTarget, RenderedFrom } from './project.js';
import { inRenderedConfig } from './project.js';
import type { BuildlessModules } from './template-context.js';
import { lazyNote, type ConfigDocument, type ConfigNote, type Locate } from './read-documents.js';
import type { SourceFile } from './source.js';

export class ModuleConverter {
  /** Garden actions tend cannot run (each a problem already): no second error where they are used. */
  readonly unloaded = new Set<string>();
  /** Garden's Workflows and custom Commands: not actions; `tend workflow` and `tend command` run them. */
  readonly runnables: GardenRunnable[] = [];
  /** A 0.12 module that became no Build, with the outputs Garden gives it (`modules.<name>.outputs`). */
  readonly buildlessModules: BuildlessModules = (name) => buildlessModuleOf(this.#index.modules.get(name));
  readonly #index: GardenProjectIndex;
  /** Garden ConfigTemplates by name, read before any RenderTemplate. */
  readonly #templates: Map<string, TemplateDocument>;

  constructor(
    readonly root: string,
    files: SourceFile[],
    readonly problems: ConfigProblem[],
    readonly notes: ConfigNote[],
    /** How the project's templates read (template-syntax.ts): a template's rendered keys are resolved. */
    readonly templateSyntax: SyntaxOptions,
  ) {
    // A 0.12 module's runtime dependency names a service or task of any module (garden/project-index.ts).
    this.#index = gardenProjectIndex(root, files);
    problems.push(...this.#index.problems);
    this.#templates = collectTemplates(root, files, (problem) => problems.push(problem));
  }

  /** The document as tend reads it: none (a ConfigTemplate), one, or several (a module's actions). */
  *convert(document: ConfigDocument): Generator<ConfigDocument> {
    const { file, doc, locate } = document;
    if (!isGardenFile(file.file)) {
      yield document;
      return;
    }
    const dir = path.dirname(path.join(this.root, file.file));
    const kind = isRecord(doc.value) ? doc.value.kind : undefined;
    if ((templateKinds as readonly unknown[]).includes(kind)) return; // read by collectTemplates
    // Garden reads the project from the root and leaves other Project documents out (Garden.loadResources).
    if (kind === 'Project' && file.file.includes('/')) {
      const message =
        "a Project document below the project root: ignored, as Garden ignores it (the project is the root's)";
      this.notes.push({ message, location: doc.location });
      return;
    }
    // Garden 0.12's templated module renders its ModuleTemplate, as a RenderTemplate does.
    const templatedModule = kind === 'Module' && isRecord(doc.value) && doc.value.type === 'templated';
    if (kind !== 'RenderTemplate' && !templatedModule) {
      yield* this.#gardenDocument(document, doc.value, dir, locate);
      return;
    }
    const render = doc.value as Record<string, unknown>;
    if (render.disabled === true) {
      const message = `RenderTemplate ${String(render.name)} is disabled; not rendered`;
      this.notes.push(lazyNote(message, () => locate(['disabled'], 'key')));
      return;
    }
    const rendered = renderTemplate(
      { value: render, dir, locate },
      this.#templates,
      (found) =>
        this.problems.push({ code: 'TEND_CONFIG_INVALID', message: found.message, location: found.location }),
      this.templateSyntax,
    );
    for (const config of rendered) {
      const template = this.#templates.get(config.rendered.template)!;
      const locateConfig = (p: ConfigPath, target: LocateTarget = 'value') =>
        template.locate([...config.at, ...p], target);
      yield* this.#gardenDocument(document, config.value, config.baseDir, locateConfig, config.rendered);
    }
  }

  /** A Garden document (or a config a template rendered) read as tend's. */
  *#gardenDocument(
    document: ConfigDocument,
    value: unknown,
    dir: string,
    locate: Locate,
    rendered?: RenderedFrom,
  ): Generator<ConfigDocument> {
    for (const { value: read, translation } of readGardenDocument(value, { dir, index: this.#index })) {
      const at = (p: ConfigPath) => locate(translation.documentPath(p), 'key');
      // A rendered config's lines are the template's, shared by each rendering: which one is said.
      const said = (message: string) => inRenderedConfig(message, rendered);
      for (const { code, message, path: p } of translation.problems) {
        this.problems.push({ code, message: said(message), location: at(p) });
      }
      for (const { message, path: p, environments } of translation.notes) {
        this.notes.push(lazyNote(said(message), () => at(p), environments));
      }
      for (const ref of translation.unloadedActions) this.unloaded.add(ref);
      if (translation.runnable)
        this.runnables.push({
          ...translation.runnable,
          file: document.file.file,
          locate,
          ...(rendered ? { rendered } : {}),
        });
      if (read !== undefined) {
        yield {
          file: document.file,
          doc: document.doc,
          value: read,
          locate: (p, target = 'value') => locate(translation.originalPath(p), target),
          writtenPath: (p) => translation.originalPath(p),
          ...(rendered ? { origin: { dir, rendered } } : {}),
          ...(translation.writtenType ? { writtenType: translation.writtenType } : {}),
          ...(translation.fromModule !== undefined ? { fromModule: translation.fromModule } : {}),
        };
      }
    }
  }
}
