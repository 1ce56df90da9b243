/**
 * A YAML file that holds one document, read on its own (a varfile, the server's roles file):
 * read, parsed, and every YAML problem and a second document refused with file, line and column.
 * What the document must look like is each caller's schema.
 */
import { readFileSync } from 'node:fs';
import { TendError, type SourceLocation } from '../errors.js';
import { configError } from './diagnostics.js';
import type { ConfigPath, LocateTarget } from './project.js';
import { SourceFile } from './source.js';

export interface SingleDocument {
  /** The file holds no document (it is empty, or only comments). */
  empty: boolean;
  /** The document as plain data (undefined when empty). */
  value: unknown;
  /** Where a key or value of the document is, for the caller's own checks. */
  locate(path: ConfigPath, target?: LocateTarget): SourceLocation;
}

export interface SingleDocumentOptions {
  /** How errors name the file (default: `file`). */
  shown?: string;
  /** What the file is, after "cannot read " (`varfile dev.yml`, `the roles file /etc/roles.yaml`). */
  what: string;
  /** The error for a second document: "a varfile holds one YAML document (…)". */
  oneDocument: string;
  /** A file that does not exist gives undefined instead of an error. */
  optional?: boolean;
}

export function readSingleDocument(
  file: string,
  options: SingleDocumentOptions & { optional: true },
): SingleDocument | undefined;
export function readSingleDocument(file: string, options: SingleDocumentOptions): SingleDocument;
export function readSingleDocument(file: string, options: SingleDocumentOptions): SingleDocument | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    if (options.optional && (error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new TendError('TEND_CONFIG_INVALID', `cannot read ${options.what}: ${(error as Error).message}`);
  }
  const source = new SourceFile(options.shown ?? file, text);
  const { documents, problems } = source.parse();
  if (problems.length > 0) throw configError(problems);
  const [document, second] = documents;
  if (second) {
    throw configError([
      { code: 'TEND_CONFIG_INVALID', message: options.oneDocument, location: second.location },
    ]);
  }
  return {
    empty: document === undefined,
    value: document?.value,
    locate: (path, target) => source.locate(document?.index ?? 0, path, target),
  };
}
