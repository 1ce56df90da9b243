/**
 * The keys that tie an action to a Build's build directory, as Garden has them: a Build's
 * `copyFrom` (files of other Builds copied in before it builds) and `buildAtSource`, and the
 * `build:` of a Deploy, Test or Run (it runs in that Build's build directory). Every Build named
 * is a dependency of the action. Where each builds or runs (`buildDirectory`, `actionBuildPath`:
 * Garden's `buildPath`) is known from these keys; src/graph/build-directory.ts stages the
 * directories.
 */
import path from 'node:path';
import type { ErrorCode } from '../errors.js';
import { statePaths } from '../state/files.js';
import type { ConfigProblem } from './diagnostics.js';
import type { ActionConfig, ConfigPath, CopyFromConfig, Locate } from './project.js';
import { actionRef } from './project.js';
import { actionReferencesOf } from './template.js';
import type { ActionKind } from '../plugin/types.js';

/** The document's keys this module reads, as the schema lets them be. */
export interface RawBuildKeys {
  copyFrom?: { build: string; sourcePath: string; targetPath?: string }[];
  buildAtSource?: boolean;
  build?: string;
}

type BuildKeys = Pick<ActionConfig, 'copyFrom' | 'buildAtSource' | 'build'>;

const globCharacters = /[*?[\]{}()!]/;

/** Why a copyFrom path is refused, or undefined: Garden's POSIX sub-paths (no `..`, not absolute). */
function pathProblem(value: string, what: string, target: boolean): string | undefined {
  if (value.includes('${'))
    return `${what} with a template expression is not supported by tend; write the path`;
  if (path.posix.isAbsolute(value) || value.includes('\\')) {
    return `${what} "${value}" must be a relative POSIX path inside the build directory`;
  }
  if (value.split('/').includes('..')) return `${what} "${value}" must not leave the build directory (..)`;
  if (target && globCharacters.test(value)) return `${what} "${value}" must not contain wildcards`;
  return undefined;
}

/** The keys as an ActionConfig has them; problems (a key on the wrong kind, a bad path) are added. */
export function readBuildKeys(
  raw: RawBuildKeys,
  kind: ActionKind,
  locate: Locate,
  problems: ConfigProblem[],
): BuildKeys {
  const problem = (at: ConfigPath, message: string, code: ErrorCode = 'TEND_CONFIG_INVALID') =>
    problems.push({ code, message, location: locate(at) });
  const out: BuildKeys = {};
  if (kind === 'Build') {
    if (raw.build !== undefined) {
      problem(
        ['build'],
        '`build` applies to Deploy, Test and Run actions; a Build copies files with `copyFrom`',
      );
    }
    if (raw.buildAtSource !== undefined) out.buildAtSource = raw.buildAtSource;
    if (raw.copyFrom !== undefined && raw.copyFrom.length > 0) {
      const copies: CopyFromConfig[] = [];
      raw.copyFrom.forEach((copy, i) => {
        const targetPath = copy.targetPath ?? copy.sourcePath;
        // A targetPath left out is the sourcePath: a problem of that is the sourcePath's.
        const found =
          pathProblem(copy.sourcePath, 'copyFrom sourcePath', false) ??
          pathProblem(targetPath, 'copyFrom targetPath', true);
        if (found !== undefined) {
          const at =
            copy.targetPath !== undefined && found.includes('targetPath') ? 'targetPath' : 'sourcePath';
          problem(
            ['copyFrom', i, at],
            found,
            found.includes('template') ? 'TEND_CONFIG_UNSUPPORTED' : 'TEND_CONFIG_INVALID',
          );
        }
        copies.push({ build: copy.build, sourcePath: copy.sourcePath, targetPath });
      });
      out.copyFrom = copies;
    }
  } else {
    for (const key of ['copyFrom', 'buildAtSource'] as const) {
      if (raw[key] !== undefined) {
        problem([key], `${key} applies to Build actions, not to ${kind}; name the Build in \`build\``);
      }
    }
    if (raw.build !== undefined) out.build = raw.build;
  }
  return out;
}

/** The Builds the action names in `copyFrom` or `build`, with where each is named. */
function namedBuilds(action: ActionConfig): { ref: string; at: ConfigPath }[] {
  if (action.build !== undefined) return [{ ref: actionRef('Build', action.build), at: ['build'] }];
  return (action.copyFrom ?? []).map((copy, i) => ({
    ref: actionRef('Build', copy.build),
    at: ['copyFrom', i, 'build'],
  }));
}

/** Where a Build builds (absolute): `.tend/build/<name>` with `copyFrom` and without `buildAtSource`, else its source directory. */
export function buildDirectory(config: ActionConfig, projectRoot: string): string {
  if (!config.copyFrom || config.buildAtSource) return config.sourceDir;
  return path.join(statePaths(projectRoot).root, 'build', config.name);
}

/**
 * Garden's `buildPath` of an action, as tend has it (absolute): where a Build builds, where a
 * Deploy, Test or Run with `build:` runs (that Build's build directory: `build` finds it), else
 * its source directory.
 */
export function actionBuildPath(
  config: ActionConfig,
  projectRoot: string,
  build: (name: string) => ActionConfig | undefined,
): string {
  if (config.kind === 'Build') return buildDirectory(config, projectRoot);
  const named = config.build === undefined ? undefined : build(config.build);
  return named ? buildDirectory(named, projectRoot) : config.sourceDir;
}

/**
 * An action's direct dependencies, as the graph has them: its `dependencies:`, the actions its
 * templates (its spec and its own variables, as Garden finds them in the whole action) read the
 * outputs or version of, those they read what the configuration says of (`.buildPath`) when
 * `known` has them, and the Builds its `copyFrom` and `build` name. `readsOutputs`: some template
 * reads an action's outputs (`actions.build[var.app]…` too).
 */
export function directDependencies(
  action: ActionConfig,
  known: (ref: string) => boolean,
): { refs: string[]; readsOutputs: boolean } {
  const { refs, fieldRefs, readsOutputs } =
    action.environmentReferences ?? actionReferencesOf([action.spec, action.variableLayers ?? []]);
  const all = new Set([
    ...action.dependencies,
    ...refs,
    ...fieldRefs.filter(known),
    ...buildDependencies(action),
  ]);
  return { refs: [...all].sort(), readsOutputs };
}

/** The dependencies `copyFrom` and `build` add (Garden adds them too). */
export function buildDependencies(action: ActionConfig): string[] {
  return namedBuilds(action).map((named) => named.ref);
}

/** A problem for each Build named in `copyFrom` or `build` that is not defined. */
export function buildReferenceProblems(
  action: ActionConfig,
  defined: (ref: string) => boolean,
  builds: () => string,
): ConfigProblem[] {
  return namedBuilds(action)
    .filter((named) => named.ref === action.ref || !defined(named.ref))
    .map((named) => ({
      code: 'TEND_CONFIG_INVALID' as const,
      message:
        named.ref === action.ref
          ? `${action.ref} cannot copy from itself`
          : `unknown Build "${named.ref.slice('build.'.length)}" in ${named.at[0]} of ${action.ref}; build actions: ${builds()}`,
      location: action.locate(named.at),
    }));
}
