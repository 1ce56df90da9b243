/**
 * Build directories, as Garden has them. A Build builds in its source directory, except one
 * with `copyFrom` (and no `buildAtSource: true`): it builds in `.tend/build/<name>`, staged
 * before it runs with its source files (after include/exclude) and then the files it copies from
 * other Builds' build directories. A Deploy, Test or Run with `build:` runs in that Build's build
 * directory. The copies follow Garden's build staging (core/src/build-staging): a file into a
 * target ending in `/` (or an existing directory) keeps its name, a directory's contents go below
 * the target, a target `.` is the source's own name, a glob copies each match by its name, and a
 * source path that is not there is a warning, not an error.
 */
import { copyFileSync, existsSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import picomatch from 'picomatch';
import { TendError } from '../errors.js';
import { actionBuildPath, buildDirectory } from '../config/build-keys.js';
import type { ActionConfig, CopyFromConfig } from '../config/project.js';
import { actionRef } from '../config/project.js';
import type { ActionGraph } from './graph.js';

/**
 * Where an action's handlers read its files: a Build's build directory, the one its `build:` names,
 * or its source (Garden's `buildPath`, `${actions.<kind>.<name>.buildPath}`).
 */
export function actionDirectory(graph: ActionGraph, config: ActionConfig, projectRoot: string): string {
  return actionBuildPath(config, projectRoot, (name) => graph.get(actionRef('Build', name)).config);
}

/** Every file below `dir` (relative, POSIX, sorted); `.tend`, `.git` and `node_modules` left out. */
export function listDirectory(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => path.relative(dir, path.join(entry.parentPath, entry.name)).split(path.sep).join('/'))
    .filter((file) => !file.split('/').some((part) => ['.tend', '.git', 'node_modules'].includes(part)))
    .sort();
}

function copyInto(from: string, to: string): void {
  mkdirSync(path.dirname(to), { recursive: true });
  copyFileSync(from, to);
}

function failed(config: ActionConfig, index: number, message: string): TendError {
  return new TendError('TEND_CONFIG_INVALID', `${config.ref}: copyFrom[${index}]: ${message}`, {
    actionRef: config.ref,
    location: config.locate(['copyFrom', index]),
  });
}

/** Each file of a glob's matches: [from, to] relative to the source root and the target. */
function globMatches(root: string, pattern: string): [string, string][] {
  const matches = picomatch(pattern, { dot: true });
  const mapped: [string, string][] = [];
  const matchedDirectories: string[] = [];
  for (const entry of readdirSync(root, { recursive: true, withFileTypes: true })) {
    const relative = path.relative(root, path.join(entry.parentPath, entry.name)).split(path.sep).join('/');
    if (entry.isDirectory()) {
      if (matches(relative)) matchedDirectories.push(relative);
      continue;
    }
    // A file in a matched directory goes below the target by the directory's name, as rsync does.
    for (const dir of matchedDirectories) {
      if (relative.startsWith(`${dir}/`))
        mapped.push([relative, relative.slice(path.posix.dirname(dir).length + 1)]);
    }
    if (matches(relative)) mapped.push([relative, path.posix.basename(relative)]);
  }
  return mapped;
}

/** One `copyFrom` entry, from the other Build's build directory into `target`; a warning when its source is not there. */
function copyOne(
  config: ActionConfig,
  index: number,
  copy: CopyFromConfig,
  from: string,
  target: string,
): string | undefined {
  const glob = picomatch.scan(copy.sourcePath).isGlob;
  let source = glob ? from : path.join(from, copy.sourcePath);
  let targetRelative = copy.targetPath;
  if (!glob && !existsSync(source)) {
    return `${config.ref}: copyFrom[${index}]: nothing at ${copy.sourcePath} in the build directory of build.${copy.build}; nothing copied`;
  }
  if (!glob) source = path.resolve(source);
  if (targetRelative === '.' || targetRelative === './') targetRelative = glob ? '' : path.basename(source);
  const targetPath = path.join(target, targetRelative);
  const targetStat = statSync(targetPath, { throwIfNoEntry: false });
  if (targetRelative.endsWith('/') && targetStat && !targetStat.isDirectory()) {
    throw failed(config, index, `the target ${copy.targetPath} is a file, not a directory`);
  }
  if (!glob && statSync(source).isFile()) {
    if (copy.sourcePath.endsWith('/')) throw failed(config, index, `${copy.sourcePath} is not a directory`);
    const intoDirectory = targetRelative.endsWith('/') || targetStat?.isDirectory() === true;
    copyInto(source, intoDirectory ? path.join(targetPath, path.basename(source)) : targetPath);
    return undefined;
  }
  if (targetStat && !targetStat.isDirectory()) {
    throw failed(config, index, `copying a directory to ${copy.targetPath}, which is a file`);
  }
  const files: [string, string][] = glob
    ? globMatches(source, copy.sourcePath)
    : listDirectory(source).map((file) => [file, file]);
  for (const [fromFile, toFile] of files)
    copyInto(path.join(source, fromFile), path.join(targetPath, toFile));
  return undefined;
}

/**
 * Prepares a Build's build directory: for a staged one, its source files and then its copies
 * (`keep`: an existing staged directory stays as it is, the Build being done for its version);
 * with `buildAtSource`, the copies go into the source directory. Returns the directory, its
 * files, and the warnings of copies with nothing to copy.
 */
export function stageBuildDirectory(
  graph: ActionGraph,
  config: ActionConfig,
  projectRoot: string,
  sourceFiles: string[],
  keep: boolean,
): { dir: string; files: string[]; warnings: string[] } {
  const dir = buildDirectory(config, projectRoot);
  const warnings: string[] = [];
  if (!config.copyFrom) return { dir, files: sourceFiles, warnings };
  const staged = dir !== config.sourceDir;
  if (!(staged && keep && existsSync(dir))) {
    if (staged) {
      rmSync(dir, { recursive: true, force: true });
      mkdirSync(dir, { recursive: true });
      for (const file of sourceFiles) copyInto(path.join(config.sourceDir, file), path.join(dir, file));
    }
    config.copyFrom.forEach((copy, index) => {
      const from = buildDirectory(graph.get(actionRef('Build', copy.build)).config, projectRoot);
      const warning = copyOne(config, index, copy, from, dir);
      if (warning) warnings.push(warning);
    });
  }
  return { dir, files: listDirectory(dir), warnings };
}
