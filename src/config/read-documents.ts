/**
 * The documents the configuration pipeline (pipeline.ts) passes from step to step: a file's YAML
 * documents as read (this step), then as tend reads them once Garden's are converted
 * (convert-modules.ts), each with the way to locate a path in it in its file.
 */
import type { SourceLocation } from '../errors.js';
import type { ConfigProblem } from './diagnostics.js';
import type { ConfigPath, LocateTarget, RenderedFrom } from './project.js';
import type { SourceDocument, SourceFile } from './source.js';

export type Locate = (p: ConfigPath, target?: LocateTarget) => SourceLocation;

/** One document, in tend's terms or on its way to them. */
export interface ConfigDocument {
  file: SourceFile;
  /** The YAML document it comes from (a Garden document may give several). */
  doc: SourceDocument;
  value: unknown;
  /** Where a path of `value` is in the file. */
  locate: Locate;
  /** A path of `value` as the file writes it (a Garden document's keys tend renamed), for messages. */
  writtenPath?: (path: ConfigPath) => ConfigPath;
  /** A config rendered from a Garden template: its directory and what its templates read. */
  origin?: { dir: string; rendered: RenderedFrom };
  /** The action's type as its Garden document names it, where tend runs it as another (a container Run). */
  writtenType?: string;
  /** The name of the Garden 0.12 module it was converted from. */
  fromModule?: string;
}

/** What tend read and accepts without doing it (a Garden setting it ignores, a Workflow it does not run). */
export interface ConfigNote {
  message: string;
  location: SourceLocation;
  /** Said only when one of these environments is chosen (a note of a provider entry limited to them). */
  environments?: readonly string[];
}

/**
 * A note whose location is found when it is read. Only `tend validate` prints notes, and finding a
 * position once loading is done parses the file's YAML again: measured, 5 ms of every `tend
 * status` of a Garden project with one ignored provider setting.
 */
export function lazyNote(
  message: string,
  locate: () => SourceLocation,
  environments?: readonly string[],
): ConfigNote {
  let location: SourceLocation | undefined;
  return {
    message,
    ...(environments ? { environments } : {}),
    get location() {
      return (location ??= locate());
    },
  };
}

/** A file's YAML documents; its syntax problems go to `problems`. */
export function readDocuments(file: SourceFile, problems: ConfigProblem[]): ConfigDocument[] {
  const parsed = file.parse();
  problems.push(...parsed.problems);
  return parsed.documents.map((doc) => ({
    file,
    doc,
    value: doc.value,
    locate: (p, target = 'value') => file.locate(doc.index, p, target),
  }));
}
