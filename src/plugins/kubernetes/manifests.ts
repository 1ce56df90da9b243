/**
 * Where a kubernetes Deploy's manifests come from, in the order they are applied: the rendered
 * `kustomize:` kustomization, the `manifestFiles:`, the `manifestTemplates:` and `files:` (its
 * older name) — paths and glob patterns, relative to the action source — and the inline
 * `manifests:`. As in Garden, template expressions are resolved in `manifestTemplates` and
 * `files` only, in the file's text before it is parsed (inline ones are resolved by the framework
 * with the rest of the spec): a kustomization's output and `manifestFiles` are applied as
 * written, so a `${HOME}` in a shell script of a ConfigMap stays. `versionInputs` reads the same files and renders the same
 * kustomization, so the action's version covers what a deploy applies.
 */
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { TendError } from '../../errors.js';
import type {
  ActionVersionInputs,
  PluginContext,
  ResolvedAction,
  TemplateFiles,
  VersionInputsParams,
} from '../../plugin/types.js';
import type { KubeObject } from './client/index.js';
import type { KubernetesDeploySpec } from './config.js';
import { renderedDocuments, renderKustomization } from './kustomize.js';
import { applyPatch, PatchError } from './patch.js';

export interface Manifest {
  object: KubeObject;
  /** `k8s/api.yaml#2`, `kustomize overlays/dev#3` or `manifests[0]`, for messages. */
  origin: string;
}

type Invalid = (message: string, detail?: Record<string, unknown>) => TendError;

export function invalid(
  action: ResolvedAction,
  message: string,
  detail: Record<string, unknown> = {},
): TendError {
  return new TendError('TEND_K8S_MANIFEST_INVALID', `${action.ref}: ${message}`, {
    actionRef: action.ref,
    detail,
  });
}

/** A `files:` entry with a wildcard (a glob pattern), as against one path. */
const globCharacters = /[*?[\]{}()!+@]/;

/**
 * The files `files:` names, relative to the source directory: a path as it is (it must exist), a
 * glob pattern's matches in path order (it must match something); patterns in the order written, a
 * file named twice once; `!pattern` leaves out what it matches from every pattern's matches. The
 * glob machinery (fast-glob, picomatch: ~25 ms to load) is loaded only for a pattern.
 */
export async function manifestFiles(
  sourceDir: string,
  entries: readonly string[],
  fail: Invalid,
): Promise<string[]> {
  return (await manifestFileEntries(sourceDir, entries, fail)).map(({ file }) => file);
}

/** As manifestFiles, each file with the index of the entry that named it first. */
async function manifestFileEntries(
  sourceDir: string,
  entries: readonly string[],
  fail: Invalid,
): Promise<{ file: string; entry: number }[]> {
  const globs = entries.some((entry) => globCharacters.test(entry))
    ? await import('./manifest-globs.js')
    : undefined;
  const leftOut = entries.filter((entry) => entry.startsWith('!')).map((entry) => entry.slice(1));
  const files: { file: string; entry: number }[] = [];
  const seen = new Set<string>();
  for (const [index, entry] of entries.entries()) {
    if (entry.startsWith('!')) continue;
    let matched: string[];
    if (globs && globCharacters.test(entry)) {
      matched = globs.globMatches(sourceDir, entry, leftOut);
      if (matched.length === 0) {
        const without = leftOut.length > 0 ? ` (after leaving out ${leftOut.join(', ')})` : '';
        throw fail(`files: ${entry} matches no file${without} (looked in ${sourceDir})`, { pattern: entry });
      }
    } else {
      const full = path.resolve(sourceDir, entry);
      if (!statSync(full, { throwIfNoEntry: false })?.isFile()) {
        throw fail(`manifest file ${entry} not found (looked in ${sourceDir})`, { file: full });
      }
      matched = [entry];
    }
    for (const file of matched) {
      const key = path.resolve(sourceDir, file);
      if (seen.has(key)) continue;
      seen.add(key);
      files.push({ file, entry: index });
    }
  }
  return files;
}

/** What the Deploy's version covers beyond its source files: every manifest file, and the rendered kustomization. */
export async function versionInputs(params: VersionInputsParams): Promise<ActionVersionInputs> {
  const spec = params.spec as KubernetesDeploySpec;
  const fail: Invalid = (message, detail) =>
    new TendError('TEND_K8S_MANIFEST_INVALID', message, detail ? { detail } : {});
  const named = [...(spec.manifestFiles ?? []), ...templateFiles(spec)];
  const files = (await manifestFiles(params.sourceDir, named, fail)).map((file) =>
    path.resolve(params.sourceDir, file),
  );
  if (!spec.kustomize) return { files };
  const text = await renderKustomization(params.sourceDir, spec.kustomize, {
    invalid: fail,
    projectRoot: params.projectRoot,
  });
  return { files, text };
}

/** The manifest files whose template expressions are resolved: `manifestTemplates`, and `files` by its older name. */
export function templateFiles(spec: Pick<KubernetesDeploySpec, 'manifestTemplates' | 'files'>): string[] {
  return [...(spec.manifestTemplates ?? []), ...(spec.files ?? [])];
}

/** What to do instead when a templated file's text is not meant as a template, for its problems. */
const asWrittenHint =
  'manifestTemplates and files are templated; list the file under `manifestFiles` to apply it as written, or write `$${` for a literal `${`';

/** The files whose text is templated (not also listed as `manifestFiles`), for `tend validate` to check. */
export async function templateFilesOf(params: VersionInputsParams): Promise<TemplateFiles> {
  const spec = params.spec as KubernetesDeploySpec;
  const fail: Invalid = (message, detail) =>
    new TendError('TEND_K8S_MANIFEST_INVALID', message, detail ? { detail } : {});
  const asWritten = new Set(await manifestFiles(params.sourceDir, spec.manifestFiles ?? [], fail));
  const templated = await templatedFiles(params.sourceDir, spec, asWritten, fail);
  const full = (file: string) => path.resolve(params.sourceDir, file);
  return {
    files: templated.map(({ file }) => full(file)),
    hint: asWrittenHint,
    legacy: templated.filter(({ legacy }) => legacy).map(({ file }) => full(file)),
  };
}

/**
 * The templated files not also listed as `manifestFiles`; `legacy` those named by `files` only,
 * Garden's older key, which Garden 0.13 resolves leniently in an apiVersion v0/v1 project
 * (fileText.legacy): a file `manifestTemplates` names too is strict.
 */
async function templatedFiles(
  sourceDir: string,
  spec: Pick<KubernetesDeploySpec, 'manifestTemplates' | 'files'>,
  asWritten: ReadonlySet<string>,
  fail: Invalid,
): Promise<{ file: string; legacy: boolean }[]> {
  // templateFiles lists manifestTemplates first: a file it names is matched by one of those first.
  const strictEntries = spec.manifestTemplates?.length ?? 0;
  return (await manifestFileEntries(sourceDir, templateFiles(spec), fail))
    .filter(({ file }) => !asWritten.has(file))
    .map(({ file, entry }) => ({ file, legacy: entry >= strictEntries }));
}

/** A templated file's text with its expressions resolved, as Garden does before parsing it. */
function resolveText(
  ctx: PluginContext,
  action: ResolvedAction<KubernetesDeploySpec>,
  text: string,
  file: string,
  legacy: boolean,
): string {
  return ctx.resolveTemplates(text, {
    location: { file: path.relative(ctx.projectRoot, file), line: 1, column: 1 },
    dependencyOutputs: action.dependencyOutputs,
    dependencyVersions: action.dependencyVersions,
    actionRef: action.ref,
    fileText: { hint: asWrittenHint, ...(legacy ? { legacy } : {}) },
  });
}

/** The value of each YAML document of a text; TEND_K8S_MANIFEST_INVALID for one that is not YAML. */
function documentValues(
  action: ResolvedAction<KubernetesDeploySpec>,
  text: string,
  name: string,
  file: string,
  { templated = false } = {},
): unknown[] {
  return parseAllDocuments(text).map((doc) => {
    if (doc.errors.length > 0) {
      const e = doc.errors[0]!;
      const line = e.linePos?.[0];
      const resolved = templated ? ' (its text once template expressions are resolved)' : '';
      throw invalid(
        action,
        `${name}${line ? `:${line.line}:${line.col}` : ''}: invalid YAML${resolved}: ${e.message.split('\n')[0]}`,
        { file },
      );
    }
    return doc.toJS() as unknown;
  });
}

/** The manifests of documents' values, an empty document none. */
function manifestsOf(values: unknown[], name: string): Manifest[] {
  const out: Manifest[] = [];
  values.forEach((value, index) => {
    if (value === null || value === undefined) return;
    out.push({ object: value as KubeObject, origin: `${name}#${index + 1}` });
  });
  return out;
}

/** The API group and kind of an object with its name: two manifests with the same one are the same object. */
function identity(object: KubeObject): string {
  const apiVersion = object.apiVersion ?? '';
  const group = apiVersion.includes('/') ? apiVersion.slice(0, apiVersion.indexOf('/')) : '';
  return `${object.kind}${group ? `.${group}` : ''} ${object.metadata?.name}`;
}

/** The manifests of the action, checked for shape (apiVersion, kind, metadata.name) and defined once each. */
export async function loadManifests(
  ctx: PluginContext,
  action: ResolvedAction<KubernetesDeploySpec>,
): Promise<Manifest[]> {
  const spec = action.spec;
  const templates = templateFiles(spec);
  if (!spec.manifestFiles?.length && !templates.length && !spec.kustomize && !spec.manifests?.length) {
    throw invalid(
      action,
      'the spec names no manifests; set `manifestFiles:`, `manifestTemplates:`, `kustomize:` or `manifests:`',
    );
  }
  const fail: Invalid = (message, detail) => invalid(action, message, detail);
  const out: Manifest[] = [];
  if (spec.kustomize) {
    const text = await renderKustomization(action.sourceDir, spec.kustomize, {
      invalid: fail,
      actionRef: action.ref,
      signal: ctx.signal,
      projectRoot: ctx.projectRoot,
    });
    const dir = path.resolve(action.sourceDir, spec.kustomize.path);
    const name = `kustomize ${spec.kustomize.path}`;
    const values = renderedDocuments(text, ctx.projectRoot, () => documentValues(action, text, name, dir));
    out.push(...manifestsOf(values, name));
  }
  const asWritten = new Set(await manifestFiles(action.sourceDir, spec.manifestFiles ?? [], fail));
  const files = [
    ...[...asWritten].map((file) => ({ file, templated: false, legacy: false })),
    ...(await templatedFiles(action.sourceDir, spec, asWritten, fail)).map((f) => ({
      ...f,
      templated: true,
    })),
  ];
  for (const { file, templated, legacy } of files) {
    const full = path.resolve(action.sourceDir, file);
    const text = readFileSync(full, 'utf8');
    const resolved = templated ? resolveText(ctx, action, text, full, legacy) : text;
    // Kept parsed as a rendering's are: an unchanged file's text is not parsed again.
    const values = renderedDocuments(resolved, ctx.projectRoot, () =>
      documentValues(action, resolved, file, full, { templated }),
    );
    out.push(...manifestsOf(values, file));
  }
  (spec.manifests ?? []).forEach((m, index) =>
    out.push({ object: m as KubeObject, origin: `manifests[${index}]` }),
  );
  const flat = checkManifests(action, out);
  applyPatches(ctx, action, flat);
  if (spec.image) for (const { object } of flat) setDefaultImage(object, spec.image);
  return flat;
}

/**
 * The manifests with `List` items as manifests of their own, checked for shape (apiVersion, kind,
 * metadata.name) and defined once each. A Namespace stays, for deploy.ts to adopt (or refuse).
 */
export function checkManifests(action: ResolvedAction, out: Manifest[]): Manifest[] {
  const flat: Manifest[] = [];
  for (const m of out) {
    const items =
      (m.object as { kind?: unknown; items?: unknown }).kind === 'List'
        ? (m.object as { items?: unknown }).items
        : undefined;
    if (Array.isArray(items))
      items.forEach((item, i) =>
        flat.push({ ...m, object: item as KubeObject, origin: `${m.origin} items[${i}]` }),
      );
    else flat.push(m);
  }
  const origins = new Map<string, string>();
  for (const { object, origin } of flat) {
    if (!object || typeof object !== 'object' || Array.isArray(object)) {
      throw invalid(action, `${origin}: a manifest must be a mapping (apiVersion, kind, metadata…)`);
    }
    const missing = [
      typeof object.apiVersion === 'string' ? undefined : 'apiVersion',
      typeof object.kind === 'string' ? undefined : 'kind',
      typeof object.metadata?.name === 'string' && object.metadata.name ? undefined : 'metadata.name',
    ].filter(Boolean);
    if (missing.length > 0) throw invalid(action, `${origin}: missing ${missing.join(', ')}`);
    // Applied twice, the later would silently win: say which two instead.
    const key = identity(object);
    const first = origins.get(key);
    if (first) throw invalid(action, `${origin}: ${key} is already defined by ${first}`);
    origins.set(key, origin);
  }
  return flat;
}

/**
 * `patchResources`, as Garden applies them: each object gets the first patch of its kind and
 * name; a patch that matches no object is a warning.
 */
function applyPatches(
  ctx: PluginContext,
  action: ResolvedAction<KubernetesDeploySpec>,
  manifests: Manifest[],
): void {
  const patches = action.spec.patchResources ?? [];
  if (patches.length === 0) return;
  const used = new Set<number>();
  for (const manifest of manifests) {
    const { kind, metadata } = manifest.object;
    const index = patches.findIndex((p) => p.kind === kind && p.name === metadata?.name);
    if (index < 0) continue;
    used.add(index);
    try {
      manifest.object = applyPatch(manifest.object, patches[index]!) as KubeObject;
    } catch (error) {
      if (!(error instanceof PatchError)) throw error;
      throw invalid(
        action,
        `spec.patchResources[${index}] on ${kind} ${metadata?.name} (${manifest.origin}): ${error.message}`,
      );
    }
  }
  patches.forEach((patch, index) => {
    if (used.has(index)) return;
    ctx.log.warn(
      `${action.ref}: spec.patchResources[${index}] is for a ${patch.kind} named ${patch.name}, but no manifest is one; nothing patched`,
    );
  });
}

function podSpecOf(
  object: KubeObject,
): { containers?: { image?: string }[]; initContainers?: { image?: string }[] } | undefined {
  const spec = object.spec as Record<string, unknown> | undefined;
  if (!spec) return undefined;
  if (object.kind === 'Pod') return spec as never;
  if (object.kind === 'CronJob') {
    return (spec.jobTemplate as { spec?: { template?: { spec?: unknown } } } | undefined)?.spec?.template
      ?.spec as never;
  }
  return (spec.template as { spec?: unknown } | undefined)?.spec as never;
}

/** `image` of the spec for every container that has none of its own. */
function setDefaultImage(object: KubeObject, image: string): void {
  const pod = podSpecOf(object);
  for (const c of [...(pod?.containers ?? []), ...(pod?.initContainers ?? [])]) {
    if (c && typeof c === 'object' && !c.image) c.image = image;
  }
}
