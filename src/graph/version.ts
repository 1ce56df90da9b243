/**
 * Action versions: a hash of the action's configuration, its source files (after
 * include/exclude) and its dependencies' versions. Change any of them and the action and
 * everything that depends on it gets a new version; nothing else does.
 */
import { createHash } from 'node:crypto';
import type { ActionGraph } from './graph.js';
import { hashSources, listSourceFiles } from './sources.js';

export interface VersionedAction {
  version: string;
  files: string[];
}

/** Deterministic JSON: object keys sorted, so equal configs hash equally. */
export function stableStringify(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(stableStringify).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stableStringify(v)}`).join(',')}}`;
}

export function computeVersions(graph: ActionGraph, refs: string[]): Map<string, VersionedAction> {
  const versions = new Map<string, VersionedAction>();
  for (const ref of graph.closure(refs)) {
    const { config, dependencies } = graph.get(ref);
    const files = listSourceFiles(config.sourceDir, config.include, config.exclude);
    const hash = createHash('sha256');
    hash.update(
      stableStringify({
        kind: config.kind,
        type: config.type,
        name: config.name,
        spec: config.spec,
        include: config.include,
        exclude: config.exclude,
        timeout: config.timeout,
      }),
    );
    hash.update('\0sources:').update(hashSources(config.sourceDir, files));
    for (const dep of dependencies) hash.update(`\0${dep}=${versions.get(dep)!.version}`);
    versions.set(ref, { version: `v-${hash.digest('hex').slice(0, 12)}`, files });
  }
  return versions;
}
