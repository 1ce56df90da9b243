/**
 * Where an environment's variables come from, lowest first: the project's `variables:`, the
 * environment's `variables:`, the environment's `varfiles:` (in order), `--var-file` (in order),
 * then `--var`. A varfile is one YAML mapping of names to values, lists and mappings too (JSON
 * is YAML too). Also: refusing a `--var` that no configuration reads (a typo would otherwise be
 * silently ignored).
 */
import { shownText } from '../shown-text.js';
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import fg from 'fast-glob';
import { Type } from 'typebox';
import { TendError } from '../errors.js';
import { closestName } from '../suggest.js';
import { checkSchema, configError, formatPath, type ConfigProblem } from './diagnostics.js';
import { isGardenFile } from './files.js';
import type { ActionConfig, ConfigPath, ProjectConfig, VarfileConfig, VariableValue } from './project.js';
import { variableKeyPattern, variableNamePattern } from './schema.js';
import { parseDotenv } from './dotenv.js';
import { readSingleDocument } from './single-document.js';
import { placeVariableLayer } from './variable-layers.js';
import { findVariableReferences } from './template.js';
import { varPathKeys } from './var-overrides.js';
import { AnyKey } from '../schema-check.js';

const VarfileSchema = Type.Record(AnyKey(), Type.Unknown());
const variableName = new RegExp(variableNamePattern);
/** A YAML varfile is a layer of variables like `variables:` (Garden parses both alike): `$merge` too. */
const variableKey = new RegExp(variableKeyPattern);

/**
 * The variables of one varfile, checked, or undefined when it does not exist. Errors name the
 * file as `shown` (relative to the project root, or as given to --var-file) with line and column.
 */
export function readVarfile(file: string, shown: string): Record<string, VariableValue> | undefined {
  if (isDotenvFile(file)) return readDotenvVarfile(file, shown);
  const document = readSingleDocument(file, {
    shown,
    what: `varfile ${shown}`,
    oneDocument: 'a varfile holds one YAML document (a mapping of variable names to values)',
    optional: true,
  });
  if (document === undefined) return undefined;
  if (document.empty) return {}; // an empty file sets nothing
  const { locate } = document;
  const shape = checkSchema(VarfileSchema, document.value, {
    basePath: [],
    rootLabel: `varfile ${shown}`,
    locate,
  });
  const names: ConfigProblem[] = Object.keys(
    typeof document.value === 'object' && document.value !== null ? document.value : {},
  )
    .filter((name) => !variableKey.test(name))
    .map((name) => ({
      code: 'TEND_CONFIG_INVALID',
      message: `invalid variable name "${name}"; expected letters, digits, "_" and "-", starting with a letter or "_" (or $merge, a mapping merged in)`,
      location: locate([name], 'key'),
    }));
  if (shape.length + names.length > 0) throw configError([...shape, ...names]);
  const variables = document.value as Record<string, VariableValue>;
  placeVariableLayer(variables, `varfile ${shown}`, (p) => locate(p));
  return variables;
}

/**
 * As Garden reads a varfile (core/src/config/base.ts loadVarfile): a name ending in `.json`,
 * `.yml` or `.yaml` is YAML (JSON is YAML too); any other (`.env`, `garden.dev.env`,
 * `.env.local`, `.env.example`) is dotenv.
 */
function isDotenvFile(file: string): boolean {
  return !/\.(json|ya?ml)$/i.test(path.basename(file));
}

function readDotenvVarfile(file: string, shown: string): Record<string, string> | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new TendError('TEND_CONFIG_INVALID', `cannot read varfile ${shown}: ${(error as Error).message}`);
  }
  const entries = parseDotenv(text);
  const problems: ConfigProblem[] = [...entries]
    .filter(([name]) => !variableName.test(name))
    .map(([name, { line }]) => ({
      code: 'TEND_CONFIG_INVALID',
      message: `invalid variable name "${name}"; expected letters, digits, "_" and "-", starting with a letter or "_"`,
      location: { file: shown, line, column: 1 },
    }));
  if (problems.length > 0) throw configError(problems);
  return Object.fromEntries([...entries].map(([name, { value }]) => [name, value]));
}

/** Resolves the `${…}` of a varfile path; `at` is the path's place in the Project document. */
export type VarfilePathResolver = (template: string, at: (string | number)[]) => string;

/**
 * The variables of the project's varfiles, then the environment's, then the `--var-file` files:
 * `projectLayers` (below the environment's variables) and `layers` (above them) have each file's,
 * for Garden's merge of mappings; `variables` is every file's merged (a later file wins), and
 * `files` the files read (absolute paths). A varfile path may hold `${…}`
 * (`resolvePath`). A varfile named in tend.yml that does not exist is an error unless it is
 * marked `optional: true`; a --var-file that does not exist is always one.
 */
export function readVarfiles(
  project: ProjectConfig,
  environmentIndex: number,
  flagFiles: readonly string[],
  resolvePath: VarfilePathResolver = (template) => template,
): {
  variables: Record<string, VariableValue>;
  projectLayers: Record<string, VariableValue>[];
  layers: Record<string, VariableValue>[];
  files: string[];
} {
  const variables: Record<string, VariableValue> = {};
  const files: string[] = [];
  const environment = project.environments[environmentIndex]!;
  const readAll = (varfiles: readonly VarfileConfig[], at: (string | number)[], owner: string) =>
    varfiles.flatMap((varfile, i) => {
      const given = varfile.path.includes('${') ? resolvePath(varfile.path, [...at, i]) : varfile.path;
      const file = path.resolve(project.root, given);
      const read = readVarfile(file, path.relative(project.root, file) || given);
      if (read === undefined) {
        if (varfile.optional) return [];
        throw new TendError(
          'TEND_CONFIG_NOT_FOUND',
          `varfile ${given} of ${owner} does not exist (${file})`,
          {
            location: project.locate([...at, i]),
            detail: { hint: missingVarfileHint(project, at, varfile.path) },
          },
        );
      }
      Object.assign(variables, read);
      files.push(file);
      return [read];
    });
  const projectLayers = readAll(project.varfiles, ['varfiles'], `project ${project.name}`);
  const layers = readAll(
    environment.varfiles,
    ['environments', environmentIndex, 'varfiles'],
    `environment ${environment.name}`,
  );
  for (const given of flagFiles) {
    const file = path.resolve(given);
    const read = readVarfile(file, given);
    if (read === undefined) {
      throw new TendError('TEND_USAGE', `--var-file ${given}: no such file (${file})`);
    }
    Object.assign(variables, read);
    layers.push(read);
    files.push(file);
  }
  return { variables, projectLayers, layers, files };
}

/**
 * What to do about a missing varfile: in a Garden file, what Garden allows (its `varfile` is one
 * path, and only the default one may be missing); in tend.yml, `optional: true`.
 */
function missingVarfileHint(project: ProjectConfig, at: ConfigPath, given: string): string {
  if (!isGardenFile(project.file)) {
    return `create it, or mark it optional (- { path: ${given}, optional: true }) when not everyone has one`;
  }
  const environment = at.length > 1 ? project.environments[at[1] as number] : undefined;
  const defaultPath = environment ? `garden.${environment.name}.env` : 'garden.env';
  return (
    `create it, or change or remove ${formatPath([...at.slice(0, -1), 'varfile'])}: ` +
    `(Garden's varfile is one path, which must exist unless it is the default ${defaultPath})`
  );
}

/** Files larger than this are not looked through for `${var.…}` (no manifest is this large). */
const largestScannedFile = 1024 * 1024;

/**
 * Whether a file of the project (not .git, node_modules or .tend) holds `${var.<name>}`: a
 * template in a manifest a plugin reads (`files:`, a kustomization) reads the variable too.
 * Looked for only when nothing in the configuration reads it, on the way to refusing the flag.
 */
function mentionedInProjectFiles(root: string, name: string): boolean {
  const reference = new RegExp(`\\$\\{[^}]*\\bvar\\.${name.replace(/[^A-Za-z0-9_]/g, '\\$&')}\\b`);
  const files = fg.sync('**/*', {
    cwd: root,
    ignore: ['**/.git/**', '**/node_modules/**', '**/.tend/**'],
    onlyFiles: true,
    dot: true,
    absolute: true,
    suppressErrors: true,
  });
  for (const file of files) {
    try {
      if (statSync(file).size > largestScannedFile) continue;
      if (reference.test(readFileSync(file, 'utf8'))) return true;
    } catch {
      // Unreadable: it reads nothing for tend either.
    }
  }
  return false;
}

/**
 * Refuses a `--var` that names a variable nothing reads: no `${var.<name>}` in tend.yml, any
 * action or any other file of the project (a manifest), and not declared (`variables:` of the
 * project, an environment or an action, or a varfile read for this command). A plugin that reads `environment.variables` itself finds a declared one.
 */
export function checkVarFlagsRead(
  project: ProjectConfig,
  actions: readonly ActionConfig[],
  flags: Record<string, string>,
  fromVarfiles: Record<string, VariableValue>,
): void {
  const keys = Object.keys(flags);
  if (keys.length === 0) return;
  const known = new Set([...Object.keys(project.variables), ...Object.keys(fromVarfiles)]);
  // Variables read other variables too (`a: ${var.b}`).
  findVariableReferences([project.variables, fromVarfiles], known);
  for (const environment of project.environments) {
    for (const name of Object.keys(environment.variables)) known.add(name);
    findVariableReferences(
      [environment.defaultNamespace, environment.pullRequest?.number, environment.variables],
      known,
    );
  }
  for (const provider of project.providers) findVariableReferences(provider.config, known);
  for (const action of actions) {
    for (const layer of action.variableLayers ?? []) for (const name of Object.keys(layer)) known.add(name);
    findVariableReferences([action.spec, action.variableLayers, action.disabled], known);
  }
  // A dotted --var (`db.password`) sets a key of variable `db`: that variable is the one read.
  const variableOf = (key: string) => String(varPathKeys(key)[0]);
  const flag = keys.find(
    (key) => !known.has(variableOf(key)) && !mentionedInProjectFiles(project.root, variableOf(key)),
  );
  if (flag === undefined) return;
  const unread = variableOf(flag);
  const similar = closestName(unread, known);
  const names = [...known].sort();
  throw new TendError(
    'TEND_USAGE',
    `--var ${shownText(flag)}=${shownText(flags[flag]!)}: no configuration reads variable "${shownText(unread)}"` +
      (similar ? ` (did you mean ${similar}?)` : ''),
    {
      detail: {
        hint:
          (names.length > 0
            ? `the variables the project and its actions read or declare: ${names.slice(0, 20).join(', ')}${names.length > 20 ? ', …' : ''}; `
            : 'this project reads no variables; ') +
          "a variable only a plugin reads must be declared under the Project's variables:",
      },
    },
  );
}
