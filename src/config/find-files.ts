/**
 * The first step of the configuration pipeline (pipeline.ts): the project root, and every file
 * that holds its configuration read — tend's (`tend.yml`, `*.tend.yml`) and Garden's
 * (files.ts says which) — each with the documents the parse cache kept of it when it is unchanged
 * since the last load (parse-cache.ts).
 */
import { readFile } from 'node:fs';
import { promisify } from 'node:util';
import path from 'node:path';
import type { SyntaxOptions } from '../expressions/syntax.js';
import { sha256Hex } from '../hash.js';
import { statePaths } from '../state/files.js';
import {
  findConfigFiles,
  findProjectRoot,
  gardenScanSettings,
  isGardenFileName,
  projectFileCandidates,
} from './files.js';
import { ParseCache } from './parse-cache.js';
import { isProjectDocument, SourceFile } from './source.js';
import { projectTemplateSyntax } from './template-syntax.js';

/** Not node:fs/promises: loading it loads readline too, ~2 ms of every start. */
const readFileAsync = promisify(readFile);

export interface FoundFiles {
  root: string;
  /** The files at the root that may hold the Project document (tend.yml, Garden's). */
  projectFiles: SourceFile[];
  /** The one of them that holds the Project document (else the first). */
  projectFile: SourceFile;
  /** Every configuration file, the project files first. */
  files: SourceFile[];
  /** How the project's templates read (the Project's: template-syntax.ts). */
  templateSyntax: SyntaxOptions;
  /** A Garden project's ignore files (`dotIgnoreFile`), which leave out sources too; none for tend's. */
  ignoreFiles: string[];
  /** Keeps every file's documents for the next load (after a load without problems). */
  remember(): void;
}

/** The project's configuration files, read. */
export async function findFiles(options: { root?: string; cwd: string }): Promise<FoundFiles> {
  const root = findProjectRoot(options);
  const cache = new ParseCache(statePaths(root).cache);
  const hashes = new Map<SourceFile, string>();
  const source = (name: string, text: string, projectDocumentOnly = false) => {
    const sha256 = sha256Hex(text);
    const file = new SourceFile(name, text, cache.lookup(name, text, sha256), projectDocumentOnly);
    hashes.set(file, sha256);
    return file;
  };
  const read = (names: readonly string[]) =>
    Promise.all(names.map(async (name) => source(name, await readFileAsync(path.join(root, name), 'utf8'))));
  // The Project document says where a Garden project's other files are (scan, dotIgnoreFile).
  const candidates = await read(projectFileCandidates(root));
  const projectCandidate = candidates.find((file) => projectDocumentOf(file) !== undefined) ?? candidates[0]!;
  const gardenProject = isGardenFileName(projectCandidate.file)
    ? projectDocumentOf(projectCandidate)
    : undefined;
  const scan = gardenScanSettings(gardenProject);
  // A Project document that does not parse leaves the scan settings unknown: scanning without them
  // reports files the project leaves out, burying its one real error (Garden stops at it).
  const projectUnread =
    projectDocumentOf(projectCandidate) === undefined &&
    candidates.some((file) => file.parseAll().problems.length > 0);
  const found = projectUnread
    ? { files: candidates.map((file) => file.file), projectDocumentOnly: [] as string[] }
    : await findConfigFiles(
        root,
        candidates.map((file) => file.file),
        scan,
      );
  const projectFiles = candidates.map((file) =>
    found.projectDocumentOnly.includes(file.file) ? source(file.file, file.text, true) : file,
  );
  const projectFile = projectFiles[candidates.indexOf(projectCandidate)]!;
  const files = [...projectFiles, ...(await read(found.files.slice(projectFiles.length)))];
  return {
    root,
    projectFiles,
    projectFile,
    files,
    templateSyntax: projectTemplateSyntax(gardenProject),
    ignoreFiles: gardenProject ? scan.ignoreFiles : [],
    remember() {
      for (const file of files) cache.store(file.file, hashes.get(file)!, file.parseAll().documents);
      cache.save();
    },
  };
}

/** A file's Project document, if it has one (the first). */
function projectDocumentOf(file: SourceFile): Record<string, unknown> | undefined {
  return file.parseAll().documents.find((doc) => isProjectDocument(doc.value))?.value as
    Record<string, unknown> | undefined;
}
