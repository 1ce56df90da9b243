/**
 * A step of the configuration pipeline (pipeline.ts): the documents, tend's and Garden's
 * converted, read into the project and its actions — each checked against tend's schemas and its
 * plugin's (read-action.ts), then across documents (cross-check.ts). Every problem of the load is
 * thrown at once, each with its file:line:column.
 */
import { statSync } from 'node:fs';
import { TendError, type SourceLocation } from '../errors.js';
import type { SyntaxOptions } from '../expressions/syntax.js';
import { actionKinds, type ActionKind, type PluginDefinition } from '../plugin/types.js';
import { crossCheck } from './cross-check.js';
import { configError, describeValue, sortProblems, type ConfigProblem } from './diagnostics.js';
import { isGardenFile, projectFileName } from './files.js';
import { closestName } from '../suggest.js';
import { formatLocation, inRenderedProblems, type ActionConfig, type ProjectConfig } from './project.js';
import { readProjectDocument } from './project-document.js';
import { readActionDocument, type ActionReading, type PendingAction } from './read-action.js';
import type { ConfigDocument } from './read-documents.js';
import { actionTypeIndex } from './schema.js';
import type { SourceFile } from './source.js';

const documentKinds = ['Project', ...actionKinds] as const;
/** The kinds of a Garden file: what becomes actions, and what tend reads otherwise (garden/document.ts). */
const gardenDocumentKinds = [
  ...documentKinds,
  ...['Module', 'Workflow', 'Command', 'ConfigTemplate', 'RenderTemplate'],
] as const;
/** The kinds a document's file may hold: a Garden file's Garden kinds too. */
const kindsOf = (document: ConfigDocument): readonly string[] =>
  isGardenFile(document.file.file) ? gardenDocumentKinds : documentKinds;
/** Garden's format before 0.10: a file's `project:` or `module:` mapping, with the kind that replaced it. */
const olderGardenKeys: Record<string, string> = { project: 'Project', module: 'Module' };

export class ConfigReader {
  readonly #directories = new Map<string, boolean>();
  readonly #reading: ActionReading;
  #project: ProjectConfig | undefined;
  #projectSeen: SourceLocation | undefined;
  readonly #actions: PendingAction[] = [];
  /** Actions whose document has problems of its own (`run.a`): what refers to them is no further error. */
  readonly #unreadable = new Set<string>();

  constructor(
    readonly root: string,
    readonly plugins: readonly PluginDefinition[],
    /** The files at the root that may hold the Project document (tend.yml, Garden's). */
    readonly projectFiles: readonly string[],
    /** Every problem of the load, which this adds to. */
    readonly problems: ConfigProblem[],
    /** How the project's templates read (template-syntax.ts). */
    readonly templateSyntax: SyntaxOptions,
  ) {
    this.#reading = {
      root,
      types: actionTypeIndex(plugins),
      problems,
      isDirectory: (dir) => this.#isDirectory(dir),
      templateSyntax,
    };
  }

  /** One document (tend's, or Garden's converted) read into the project or an action. */
  read(document: ConfigDocument): void {
    const { doc, value } = document;
    const garden = isGardenFile(document.file.file);
    const expectedKinds = kindsOf(document).join(', ');
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      this.#problem(
        'TEND_CONFIG_INVALID',
        `expected a mapping with a "kind" key (one of: ${expectedKinds}), got ${describeValue(value)}`,
        doc.location,
      );
      return;
    }
    const record = value as Record<string, unknown>;
    const olderKey = Object.keys(olderGardenKeys).find((key) => key in record);
    if (!('kind' in record) && olderKey !== undefined && garden) {
      this.#problem(
        'TEND_CONFIG_UNSUPPORTED',
        `a top-level \`${olderKey}:\` is Garden's format before 0.10, which tend does not read; ` +
          `write it as a \`kind: ${olderGardenKeys[olderKey]}\` document (Garden 0.12 and later)`,
        doc.location,
      );
      return;
    }
    if (!('kind' in record)) {
      this.#problem(
        'TEND_CONFIG_INVALID',
        `missing required key "kind"; expected one of: ${expectedKinds}`,
        doc.location,
      );
      return;
    }
    const before = this.problems.length;
    this.#readRecord(document, record);
    // Its lines are the template's, shared by each rendering: which one it is is said.
    inRenderedProblems(this.problems, before, document.origin?.rendered);
  }

  #readRecord(document: ConfigDocument, record: Record<string, unknown>): void {
    const { locate } = document;
    const kinds = kindsOf(document);
    const expectedKinds = kinds.join(', ');
    const kind = record.kind;
    if (kind === 'Project') {
      this.#projectDocument(document, record);
    } else if (typeof kind === 'string' && (actionKinds as readonly string[]).includes(kind)) {
      const pending = readActionDocument(document, record, kind as ActionKind, this.#reading);
      if (pending) this.#actions.push(pending);
      // Its problems say why; what refers to it is no further error.
      else if (typeof record.name === 'string') this.#unreadable.add(`${kind.toLowerCase()}.${record.name}`);
    } else {
      this.#problem(
        'TEND_CONFIG_INVALID',
        `unknown kind ${describeValue(kind)}; ${didYouMean(kind, kinds)}expected one of: ${expectedKinds}`,
        locate(['kind']),
      );
    }
  }

  #projectDocument(document: ConfigDocument, value: Record<string, unknown>): void {
    const { file, doc, locate } = document;
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
      {
        root: this.root,
        file: file.file,
        location: doc.location,
        value,
        locate,
        plugins: this.plugins,
        templateSyntax: this.templateSyntax,
      },
      this.problems,
    );
  }

  /**
   * The project and its actions once every document is read and checked across documents; throws
   * one TendError listing every problem of the load, by file (in the order of `files`), then line.
   * `checkProject` adds what a later step would find wrong with the project (its chosen
   * environment), when the Project document itself was read (readProjectDocument gives none with
   * a problem of its own), so that one `tend validate` lists it beside the actions' problems.
   */
  finish(
    files: readonly SourceFile[],
    unloaded: ReadonlySet<string>,
    checkProject?: (project: ProjectConfig) => ConfigProblem[],
  ): { project: ProjectConfig; actions: ActionConfig[] } {
    const projectFile = files[0];
    // A root file that does not parse may be where the Project is: its error says enough.
    if (
      !this.#projectSeen &&
      projectFile &&
      !this.problems.some(
        (p) => p.location.file === projectFile.file || this.projectFiles.includes(p.location.file),
      )
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
    crossCheck(this.#actions, this.#project, new Set([...unloaded, ...this.#unreadable]), this.problems);
    if (this.problems.length > 0 && this.#project && checkProject) {
      this.problems.push(...checkProject(this.#project));
    }
    if (this.problems.length > 0) {
      const rank = new Map(files.map((f, i) => [f.file, i]));
      const byFile = new Map<number, ConfigProblem[]>();
      for (const problem of this.problems) {
        const r = rank.get(problem.location.file) ?? files.length;
        byFile.set(r, [...(byFile.get(r) ?? []), problem]);
      }
      const ordered = [...byFile.entries()]
        .sort(([a], [b]) => a - b)
        .flatMap(([, list]) => sortProblems(list));
      throw configError(ordered);
    }
    if (!this.#project) throw new TendError('TEND_INTERNAL', 'the project was not loaded');
    return { project: this.#project, actions: this.#actions.map((a) => a.action) };
  }

  #problem(code: ConfigProblem['code'], message: string, location: SourceLocation): void {
    this.problems.push({ code, message, location });
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
}

/** `did you mean "Module"? ` for a misspelt kind, else nothing. */
function didYouMean(kind: unknown, kinds: readonly string[]): string {
  const similar = typeof kind === 'string' ? closestName(kind, kinds) : undefined;
  return similar ? `did you mean ${JSON.stringify(similar)}? ` : '';
}
