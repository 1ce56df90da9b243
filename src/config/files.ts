/**
 * Which files hold a project's configuration: tend's own (`tend.yml` at the root, `*.tend.yml`
 * below it) and Garden's, found the way Garden finds them (docs/garden.md): `garden.yml`,
 * `garden.yaml`, `*.garden.yml` and `*.garden.yaml` anywhere in the project, minus what the
 * project's `scan.include` / `scan.exclude` (or 0.12's `modules.include` / `modules.exclude`)
 * leave out and what its ignore files (`dotIgnoreFile`, default `.gardenignore`, in any
 * directory, gitignore syntax; they leave files out of actions' sources too) list. A Garden file
 * at the root they leave out is still read for its Project document, as Garden reads it. The
 * project root is the nearest directory, from the working directory up, with a `tend.yml` or a
 * Garden file that declares `kind: Project`.
 */
import { existsSync, readdirSync, readFileSync, statSync, type Dirent } from 'node:fs';
import path from 'node:path';
import type Picomatch from 'picomatch';
import { TendError } from '../errors.js';
import { unreadDirectories } from '../state/files.js';

export const projectFileName = 'tend.yml';
/** Directories never searched, at any depth (`.garden`: Garden keeps its own state there). */
const skippedDirectories: ReadonlySet<string> = new Set([...unreadDirectories, '.garden']);
export const defaultGardenIgnoreFile = '.gardenignore';

/** Whether a configuration file (its path from the project root) is one of Garden's. */
export function isGardenFile(file: string): boolean {
  return isGardenFileName(path.posix.basename(file));
}

/** Whether a file name (no directory) is one Garden reads configuration from. */
export function isGardenFileName(name: string): boolean {
  return (
    name === 'garden.yml' ||
    name === 'garden.yaml' ||
    name.endsWith('.garden.yml') ||
    name.endsWith('.garden.yaml')
  );
}

/** Whether a path relative to the project root is a tend or Garden configuration file. */
export function isConfigFile(relative: string): boolean {
  const name = path.posix.basename(relative);
  return relative === projectFileName || name.endsWith('.tend.yml') || isGardenFileName(name);
}

/** A Project document in a Garden file, seen without parsing: a top-level `kind: Project`. */
const gardenProjectKind = /^kind:[ \t]*["']?Project["']?[ \t]*(#.*)?$/m;

/** The Garden files at the top of a directory that declare a Project, in name order. */
export function gardenProjectFiles(dir: string): string[] {
  return gardenFilesMatching(dir, gardenProjectKind);
}

/** Garden 0.9's project file: a top-level `project:` mapping instead of a `kind: Project` document. */
const olderGardenProject = /^project:[ \t]*(#.*)?$/m;

/** A Garden file of the directory written in Garden's format before 0.10, if there is one. */
function olderGardenProjectFile(dir: string): string | undefined {
  const [name] = gardenFilesMatching(dir, olderGardenProject);
  return name === undefined ? undefined : path.join(dir, name);
}

/** The Garden files at the top of a directory whose text matches, in name order. */
function gardenFilesMatching(dir: string, pattern: RegExp): string[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  return names
    .filter(isGardenFileName)
    .sort()
    .filter((name) => {
      try {
        return pattern.test(readFileSync(path.join(dir, name), 'utf8'));
      } catch {
        return false;
      }
    });
}

/** Whether a directory is a project root: it has a tend.yml, or a Garden file with a Project. */
function isProjectRoot(dir: string): boolean {
  return existsSync(path.join(dir, projectFileName)) || gardenProjectFiles(dir).length > 0;
}

/** The project root: the given one, or the nearest one from cwd upwards. */
export function findProjectRoot(options: { root?: string; cwd: string }): string {
  if (options.root !== undefined) {
    const root = path.resolve(options.cwd, options.root);
    const kind = existsSync(root) ? (statSync(root).isDirectory() ? 'directory' : 'file') : undefined;
    if (kind !== 'directory') {
      throw new TendError(
        'TEND_CONFIG_NOT_FOUND',
        kind === undefined
          ? `the --root directory ${root} does not exist`
          : `--root ${root} is a file, not a directory`,
        { detail: { hint: `pass --root the project's directory (the one with its ${projectFileName})` } },
      );
    }
    if (!isProjectRoot(root)) {
      throw new TendError(
        'TEND_CONFIG_NOT_FOUND',
        `no ${projectFileName} in ${root} (the --root directory)`,
        {
          detail: {
            hint: `create ${path.join(root, projectFileName)} with a "kind: Project" document (or a Garden project.garden.yml)`,
          },
        },
      );
    }
    return root;
  }
  const searched: string[] = [];
  for (let dir = path.resolve(options.cwd); ; dir = path.dirname(dir)) {
    if (isProjectRoot(dir)) return dir;
    searched.push(dir);
    if (path.dirname(dir) === dir) break;
  }
  // Only once no project was found (not on every command's way up): a Garden file of the old format.
  const olderGarden = searched.map(olderGardenProjectFile).find((file) => file !== undefined);
  if (olderGarden) {
    throw new TendError(
      'TEND_CONFIG_UNSUPPORTED',
      `${olderGarden} declares its project in Garden's format before 0.10 (a top-level \`project:\`), which tend does not read`,
      {
        detail: {
          hint: 'write the project as a `kind: Project` document and each module as a `kind: Module` document (Garden 0.12 and later), or start from `tend init`',
        },
      },
    );
  }
  throw new TendError(
    'TEND_CONFIG_NOT_FOUND',
    `no ${projectFileName} or Garden project file found in ${path.resolve(options.cwd)} or any parent directory`,
    {
      detail: {
        hint: `create a ${projectFileName} with a "kind: Project" document, or pass --root <dir> (a Garden project's garden.yml is read too)`,
      },
    },
  );
}

/** The files that may hold the Project document: tend.yml, then the root's Garden files. */
export function projectFileCandidates(root: string): string[] {
  const gardenFiles = readdirSync(root).filter(isGardenFileName).sort();
  return [...(existsSync(path.join(root, projectFileName)) ? [projectFileName] : []), ...gardenFiles];
}

/** What a Garden Project says about where its configuration is. */
export interface GardenScanSettings {
  include?: string[];
  exclude?: string[];
  /** Ignore files (gitignore syntax) read in every directory. */
  ignoreFiles: string[];
}

/** The scan settings of a Garden Project document (`scan`, 0.12's `modules`, `dotIgnoreFile(s)`). */
export function gardenScanSettings(project: Record<string, unknown> | undefined): GardenScanSettings {
  const strings = (value: unknown) =>
    Array.isArray(value) && value.every((v) => typeof v === 'string') ? (value as string[]) : undefined;
  const scan = project?.scan as { include?: unknown; exclude?: unknown } | undefined;
  const modules = project?.modules as { include?: unknown; exclude?: unknown } | undefined;
  // Key by key, `scan` first, as Garden 0.13 moves `modules.include` / `modules.exclude` into `scan`.
  const include = strings(scan?.include) ?? strings(modules?.include);
  const exclude = strings(scan?.exclude) ?? strings(modules?.exclude);
  const ignoreFiles =
    typeof project?.dotIgnoreFile === 'string'
      ? [project.dotIgnoreFile]
      : (strings(project?.dotIgnoreFiles) ?? [defaultGardenIgnoreFile]);
  return { ...(include ? { include } : {}), ...(exclude ? { exclude } : {}), ignoreFiles };
}

/** The project's configuration files, and which of the root's Garden files are read for the Project alone. */
export interface ConfigFiles {
  /** Every configuration file, relative to the root with `/` separators: the project files first. */
  files: string[];
  /**
   * The project files of Garden's that the scan leaves out: Garden reads the Project document of
   * the root's files whatever the scan says (findProjectConfig), their other documents only when
   * the scan keeps them, as any other Garden file.
   */
  projectDocumentOnly: string[];
}

/**
 * Every configuration file of the project: the `projectFiles` first (as given), then the others
 * in path order.
 */
export async function findConfigFiles(
  root: string,
  projectFiles: readonly string[],
  garden: GardenScanSettings,
): Promise<ConfigFiles> {
  const found = configFilesBelow(root);
  const gardenFiles = [...new Set([...projectFiles, ...found])].filter(isGardenFile);
  const kept = new Set(await keptGardenFiles(root, gardenFiles, garden));
  const others = found
    .filter((file) => !projectFiles.includes(file))
    .filter((file) => !isGardenFile(file) || kept.has(file))
    .sort();
  return {
    files: [...projectFiles, ...others],
    projectDocumentOnly: projectFiles.filter((file) => isGardenFile(file) && !kept.has(file)),
  };
}

/**
 * The `*.tend.yml` and Garden files below the root, dot directories included, skipped directories
 * and symbolic links not followed. A walk that matches names by their ending: fast-glob, given the
 * same five patterns, took 6 ms of every command on a two-file project (its pattern machinery) and
 * 11 ms on Garden's examples, the walk 0.3 and 4.5 ms (Node 24).
 */
function configFilesBelow(root: string): string[] {
  const found: string[] = [];
  const directories = [''];
  for (let dir = directories.pop(); dir !== undefined; dir = directories.pop()) {
    let entries: Dirent[];
    try {
      entries = readdirSync(path.join(root, dir), { withFileTypes: true });
    } catch (error) {
      // Removed while the walk ran: as if it had not been there.
      if ((error as NodeJS.ErrnoException).code === 'ENOENT' && dir !== '') continue;
      throw new TendError(
        'TEND_CONFIG_NOT_FOUND',
        `cannot read the directory ${path.join(root, dir)}: ${(error as Error).message}`,
        { cause: error, detail: { hint: 'make it readable, or move it out of the project' } },
      );
    }
    for (const entry of entries) {
      const relative = dir === '' ? entry.name : `${dir}/${entry.name}`;
      if (entry.isDirectory()) {
        if (!skippedDirectories.has(entry.name)) directories.push(relative);
      } else if (entry.isFile() && (entry.name.endsWith('.tend.yml') || isGardenFileName(entry.name))) {
        found.push(relative);
      }
    }
  }
  return found;
}

/** The Garden files that `scan` and the ignore files leave in. */
async function keptGardenFiles(root: string, files: string[], garden: GardenScanSettings): Promise<string[]> {
  if (files.length === 0) return [];
  const { default: picomatch } = await import('picomatch');
  const includes = garden.include?.map((pattern) => includePatternMatcher(pattern, picomatch));
  // Matched against each file's path as they are, as Garden's scan matches them (git-sub-tree.ts).
  const excluded = picomatch([...(garden.exclude ?? []).map(withoutDotSegments), ...fixedGardenExcludes], {
    dot: true,
  });
  const included = (file: string) => !includes || includes.some((matches) => matches(file));
  const ignored = await ignoreFilesMatcher(root, garden.ignoreFiles);
  return files.filter((file) => included(file) && !excluded(file) && !ignored(file));
}

/** What Garden's scan leaves out in every project (fixedProjectExcludes; `.garden` is never walked). */
const fixedGardenExcludes = ['debug-info*/**'];

/** `./apps/../lib/` as `lib/`: Garden normalizes its patterns so. */
const withoutDotSegments = (pattern: string) => path.posix.normalize(pattern);

/**
 * Whether a file is one an include pattern covers, as Garden finds its files (findConfigPathsInPath):
 * a last segment `*` or `**` becomes `*garden.y*ml`, and the pattern is a git glob pathspec: a
 * pattern with no wildcard covers the file or directory it names, one with a wildcard must match
 * the whole path, `*` within one directory, `**` across any number of them.
 */
function includePatternMatcher(pattern: string, picomatch: typeof Picomatch): (file: string) => boolean {
  const segments = withoutDotSegments(pattern).split('/');
  const last = segments.length - 1;
  if (segments[last] === '*' || segments[last] === '**') segments[last] = '*garden.y*ml';
  const pathspec = segments.join('/');
  if (/[*?[]/.test(pathspec)) return picomatch(pathspec, { dot: true });
  const named = pathspec.replace(/\/+$/, '');
  return named === '.' ? () => true : (file) => file === named || file.startsWith(`${named}/`);
}

/**
 * Whether a path (relative to the root, `/` separators) is listed by one of the ignore files (their
 * names: `dotIgnoreFile`) of its own directory or of one above it up to the root, each read as a
 * `.gitignore` is, relative to its directory: as Garden leaves files out of both the configuration
 * it scans and an action's sources. A path outside the root is never ignored.
 */
export async function ignoreFilesMatcher(
  root: string,
  ignoreFiles: readonly string[],
): Promise<(relative: string) => boolean> {
  if (ignoreFiles.length === 0) return () => false;
  const { default: ignore } = await import('ignore');
  const ignoresByDir = new Map<string, ((relative: string) => boolean) | undefined>();
  const ignoresIn = (dir: string) => {
    if (!ignoresByDir.has(dir)) {
      let rules: ReturnType<typeof ignore> | undefined;
      for (const name of ignoreFiles) {
        let text: string;
        try {
          text = readFileSync(path.join(root, dir, name), 'utf8');
        } catch {
          continue;
        }
        // One file's whole text: `add` splits a string into lines (an array's items are one pattern each).
        rules = (rules ?? ignore()).add(text);
      }
      ignoresByDir.set(dir, rules ? (relative) => rules.ignores(relative) : undefined);
    }
    return ignoresByDir.get(dir);
  };
  return (file) => {
    if (file === '' || file === '..' || file.startsWith('../') || path.posix.isAbsolute(file)) return false;
    // Every directory from the root down to the file's own may ignore it.
    const parts = file.split('/');
    for (let depth = 0; depth < parts.length; depth++) {
      const ignores = ignoresIn(parts.slice(0, depth).join('/'));
      if (ignores?.(parts.slice(depth).join('/'))) return true;
    }
    return false;
  };
}
