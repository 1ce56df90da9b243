/**
 * A Garden 0.12 kubernetes module's `generateFiles`: Garden writes each `sourcePath` (its
 * templates resolved, unless `resolveTemplates: false`) to `targetPath` in the module's build
 * directory, and the module's `files` name the targets. tend reads the manifests where the module
 * is, so a target its `files` name is read from its source instead: templated
 * (`manifestTemplates`, as `files` are) or, with `resolveTemplates: false`, as written
 * (`manifestFiles`). A generated file nothing in `files` names (a Dockerfile, a script), or an
 * inline `value`, is not supported: each is the error at its line.
 */
import path from 'node:path';
import { isRecord, type GardenRecord, type Translation } from './translation.js';

/** The kubernetes module's `files` split as tend reads them, generated targets read from their sources. */
export function manifestsOfFiles(
  module: GardenRecord,
  translation: Translation,
): { manifestTemplates?: unknown; manifestFiles?: string[] } {
  const files = module.files;
  if (module.generateFiles === undefined) return files !== undefined ? { manifestTemplates: files } : {};
  const named = new Set((Array.isArray(files) ? files : []).map((file) => normalized(file)));
  const sources = new Map<string, { sourcePath: string; templated: boolean }>();
  const entries: unknown[] = Array.isArray(module.generateFiles)
    ? module.generateFiles
    : [module.generateFiles];
  entries.forEach((entry, i) => {
    const why = unsupportedEntry(entry, named);
    if (why) {
      translation.unsupported(['generateFiles', i], `generateFiles: ${why}`);
      return;
    }
    const { sourcePath, targetPath, resolveTemplates } = entry as GardenRecord;
    sources.set(normalized(targetPath), {
      sourcePath: String(sourcePath),
      templated: resolveTemplates !== false,
    });
  });
  // `files` that are no list are the schema's error, as written.
  if (!Array.isArray(files)) return files !== undefined ? { manifestTemplates: files } : {};
  const manifestTemplates: unknown[] = [];
  const manifestFiles: string[] = [];
  for (const file of files) {
    const source = sources.get(normalized(file));
    if (!source) manifestTemplates.push(file);
    else if (source.templated) manifestTemplates.push(source.sourcePath);
    else manifestFiles.push(source.sourcePath);
  }
  return {
    ...(manifestTemplates.length > 0 ? { manifestTemplates } : {}),
    ...(manifestFiles.length > 0 ? { manifestFiles } : {}),
  };
}

/** Why tend cannot read a `generateFiles` entry from its source, or undefined. */
function unsupportedEntry(entry: unknown, named: ReadonlySet<string>): string | undefined {
  if (!isRecord(entry) || typeof entry.targetPath !== 'string') return 'an entry needs targetPath';
  if (entry.value !== undefined || typeof entry.sourcePath !== 'string') {
    return 'an inline value is not written by tend; put it in a file the module names under files';
  }
  if (!named.has(normalized(entry.targetPath))) {
    return `${entry.targetPath} is not one of the module's files, and tend writes no generated file; name it under files`;
  }
  return undefined;
}

function normalized(file: unknown): string {
  return typeof file === 'string' ? path.posix.normalize(file) : '';
}
