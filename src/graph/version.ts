/**
 * Action versions: a hash of the action's configuration as it will run (its spec with template
 * expressions resolved, its provider's configuration), its source files (after include/exclude)
 * and what its type's `versionInputs` adds (files elsewhere, rendered text), with the values of
 * the template expressions in them, and its dependencies' versions. Change any of them and the
 * action and everything that depends on it gets a new version; nothing else does. Dependency
 * outputs (`${actions.build.api.outputs.image}`) are not known before the dependency runs: they
 * stay as written, and the dependency's version, part of this one, covers them.
 */
import type { ActionConfig } from '../config/project.js';
import type { ActionGraph } from './graph.js';
import path from 'node:path';
import { sha256Hex } from '../hash.js';
import { statePaths } from '../state/files.js';
import {
  digestSources,
  expressionsIn,
  listSourceFiles,
  loadDigestCache,
  saveDigestCache,
} from './sources.js';
import { stableStringify } from '../stable-json.js';

export interface VersionedAction {
  version: string;
  /** Source files, relative to the source directory (after include/exclude). */
  files: string[];
  /** Other files the version covers (absolute): what the action type's `versionInputs` named. */
  inputFiles: string[];
}

/** What a kind's `versionInputs` said for an action, gathered before versions are computed. */
export type GatheredInputs = { files: string[]; text?: string } | { unresolved: string };

/** What a version covers besides the action's document and files; the command's context provides it. */
export interface VersionInputs {
  /** The project's `tend.yml` (absolute): configuration, not a source file of any action. */
  projectFile: string;
  /** Whether a file (absolute) is no source of any action: a Garden project's ignore files list it. */
  isIgnored?(file: string): boolean;
  /**
   * The action's configuration in this environment: its spec with every template expression
   * resolved except dependency outputs, and the configuration of the provider that runs it.
   */
  configuration(config: ActionConfig): unknown;
  /** The values of template expressions found in source files (`var.replicas` → 3); never throws. */
  expressionValues(expressions: string[]): Record<string, unknown>;
  /** What the action type's `versionInputs` said (undefined: the type has none). */
  pluginInputs?(config: ActionConfig): GatheredInputs | undefined;
}

/**
 * Versions of the given actions and their dependencies. Without `inputs` the spec is hashed as
 * written (for tests that have no environment).
 */
export function computeVersions(
  graph: ActionGraph,
  refs: string[],
  inputs?: VersionInputs,
): Map<string, VersionedAction> {
  const versions = new Map<string, VersionedAction>();
  if (inputs) loadDigestCache(statePaths(path.dirname(inputs.projectFile)).cache);
  // Actions with the same directory and files (a project's many small ones) share one digest.
  const digests = new Map<string, ReturnType<typeof digestSources>>();
  for (const ref of graph.closure(refs)) {
    const { config, dependencies } = graph.get(ref);
    const listed = listSourceFiles(config.sourceDir, config.include, config.exclude, inputs?.projectFile);
    const isIgnored = inputs?.isIgnored;
    const files = isIgnored ? listed.filter((file) => !isIgnored(path.join(config.sourceDir, file))) : listed;
    const key = `${config.sourceDir}\0${files.join('\0')}`;
    let sources = digests.get(key);
    if (!sources) digests.set(key, (sources = digestSources(config.sourceDir, files)));
    let hashed =
      stableStringify({
        kind: config.kind,
        type: config.type,
        name: config.name,
        configuration: inputs ? inputs.configuration(config) : { spec: config.spec },
        include: config.include,
        exclude: config.exclude,
        timeout: config.timeout,
        copyFrom: config.copyFrom,
        buildAtSource: config.buildAtSource,
        build: config.build,
      }) + `\0sources:${sources.hash}`;
    const expressions = new Set(sources.expressions);
    const gathered = inputs?.pluginInputs?.(config);
    let inputFiles: string[] = [];
    if (gathered && 'unresolved' in gathered) {
      hashed += `\0inputs:${stableStringify(gathered)}`;
    } else if (gathered) {
      inputFiles = gathered.files;
      // Named from the source directory, so that the version does not depend on where the project is.
      const extra = digestSources(
        config.sourceDir,
        gathered.files.map((file) => path.relative(config.sourceDir, file)),
      );
      hashed += `\0inputs:${extra.hash}`;
      for (const expression of extra.expressions) expressions.add(expression);
      if (gathered.text !== undefined) {
        hashed += `\0text:${sha256Hex(gathered.text)}`;
        for (const expression of expressionsIn(gathered.text)) expressions.add(expression);
      }
    }
    if (inputs && expressions.size > 0) {
      const sorted = [...expressions].sort();
      hashed += `\0expressions:${stableStringify(inputs.expressionValues(sorted))}`;
    }
    for (const dep of dependencies) hashed += `\0${dep}=${versions.get(dep)!.version}`;
    versions.set(ref, { version: `v-${sha256Hex(hashed).slice(0, 12)}`, files, inputFiles });
  }
  saveDigestCache();
  return versions;
}
