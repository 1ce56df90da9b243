/**
 * What `tend init` finds in a directory: Dockerfiles, Kubernetes manifests, kustomizations,
 * package.json start scripts, Garden and tend configuration. Read-only: it lists and parses files
 * and never runs anything (no kustomize, no npm), so it works on any checkout.
 */
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import fg from 'fast-glob';
import { isMap, isSeq, parseAllDocuments } from 'yaml';

/** A Kubernetes object of a manifest file, as far as init needs it. */
export interface ManifestObject {
  apiVersion: string;
  kind: string;
  name: string | undefined;
  namespace: string | undefined;
  /** Images its containers name (`nginx:1.27`, `registry.example.com/shop/api`). */
  images: string[];
  /** Names of its containers that name no image (filled by a Deploy's `image:`). */
  containersWithoutImage: string[];
}

export interface ManifestFile {
  /** Relative to the directory, with `/`. */
  path: string;
  objects: ManifestObject[];
}

export interface Kustomization {
  /** The kustomization file, relative, with `/`. */
  path: string;
  /** Its directory (`` for the top directory). */
  dir: string;
  /** Its `namespace:`, when it sets one. */
  namespace: string | undefined;
  /** Local `resources`, `bases` and `components`, resolved to paths relative to the top directory. */
  references: string[];
}

export interface PackageScript {
  path: string;
  /** The package's `name`, when it has one. */
  name: string | undefined;
  start: string;
}

export interface LeftOut {
  path: string;
  because: string;
}

export interface Detection {
  dockerfiles: string[];
  manifests: ManifestFile[];
  kustomizations: Kustomization[];
  packages: PackageScript[];
  /** Garden configuration files (garden.yml, project.garden.yml, *.garden.yml). */
  garden: string[];
  /** tend configuration already there (tend.yml, *.tend.yml). */
  tendFiles: string[];
  /** Files that looked relevant and are not used, with why. */
  leftOut: LeftOut[];
}

/** Files read to tell what they are; a larger one is not a hand-written manifest. */
const maxFileBytes = 1024 * 1024;
/** Files looked at, at most: a checkout with more YAML than this is not read whole. */
const maxFiles = 5000;
/** How deep below the directory init looks. */
const maxDepth = 8;

/** apiVersions of YAML that has apiVersion and kind but is a tool's configuration, not an object. */
const toolApiVersion =
  /^(garden\.io\/|skaffold\/|kustomize\.config\.k8s\.io\/|kpt\.dev\/|config\.kubernetes\.io\/)/;

const kustomizationNames = new Set(['kustomization.yaml', 'kustomization.yml', 'Kustomization']);

function isDockerfile(base: string): boolean {
  return (
    base === 'Dockerfile' ||
    base === 'Containerfile' ||
    base.startsWith('Dockerfile.') ||
    base.endsWith('.Dockerfile') ||
    base.endsWith('.dockerfile')
  );
}

function isGardenFile(base: string): boolean {
  return /^(garden|project\.garden|.+\.garden)\.ya?ml$/.test(base);
}

function isTendFile(base: string): boolean {
  return base === 'tend.yml' || base.endsWith('.tend.yml');
}

function readSmall(root: string, file: string): string | undefined {
  const full = path.join(root, file);
  try {
    if (statSync(full).size > maxFileBytes) return undefined;
    return readFileSync(full, 'utf8');
  } catch {
    return undefined;
  }
}

/** The containers of an object wherever its kind keeps them (Pod, Deployment, CronJob's job…). */
function containersOf(value: unknown, out: { images: string[]; without: string[] }): void {
  if (Array.isArray(value)) {
    for (const item of value) containersOf(item, out);
    return;
  }
  if (typeof value !== 'object' || value === null) return;
  for (const [key, child] of Object.entries(value)) {
    if ((key === 'containers' || key === 'initContainers') && Array.isArray(child)) {
      for (const container of child as unknown[]) {
        if (typeof container !== 'object' || container === null) continue;
        const { image, name } = container as { image?: unknown; name?: unknown };
        if (typeof image === 'string' && image !== '') out.images.push(image);
        else out.without.push(typeof name === 'string' ? name : '(unnamed)');
      }
    } else {
      containersOf(child, out);
    }
  }
}

/** The Kubernetes objects of a YAML file, or why it is not a manifest file (undefined: not one at all). */
function manifestObjects(text: string): ManifestObject[] | { notManifest: string } | undefined {
  const documents = parseAllDocuments(text);
  if (!Array.isArray(documents)) return undefined; // an empty stream
  const objects: ManifestObject[] = [];
  let others = 0;
  for (const document of documents) {
    if (document.errors.length > 0) {
      return /^\s*apiVersion:/m.test(text)
        ? { notManifest: `not valid YAML (${document.errors[0]!.message.split('\n')[0]}); a template?` }
        : undefined;
    }
    if (document.contents === null) continue;
    const value: unknown = document.toJS({ maxAliasCount: 100 });
    const object = value as { apiVersion?: unknown; kind?: unknown; metadata?: unknown };
    if (
      !isMap(document.contents) ||
      typeof object.apiVersion !== 'string' ||
      typeof object.kind !== 'string' ||
      toolApiVersion.test(object.apiVersion)
    ) {
      others++;
      continue;
    }
    const metadata = (
      typeof object.metadata === 'object' && object.metadata !== null ? object.metadata : {}
    ) as {
      name?: unknown;
      namespace?: unknown;
    };
    const containers = { images: [] as string[], without: [] as string[] };
    containersOf((value as { spec?: unknown }).spec, containers);
    objects.push({
      apiVersion: object.apiVersion,
      kind: object.kind,
      name: typeof metadata.name === 'string' ? metadata.name : undefined,
      namespace: typeof metadata.namespace === 'string' ? metadata.namespace : undefined,
      images: containers.images,
      containersWithoutImage: containers.without,
    });
  }
  if (objects.length === 0) return undefined;
  if (others > 0) return { notManifest: 'mixes Kubernetes objects with other YAML documents' };
  return objects;
}

function kustomization(file: string, text: string): Kustomization | LeftOut {
  const dir = path.posix.dirname(file) === '.' ? '' : path.posix.dirname(file);
  const documents = parseAllDocuments(text);
  const first = Array.isArray(documents) ? documents[0] : undefined;
  if (!first || first.errors.length > 0 || !isMap(first.contents)) {
    return { path: file, because: 'a kustomization that is not a YAML mapping' };
  }
  const spec = first.toJS() as Record<string, unknown>;
  const references: string[] = [];
  for (const key of ['resources', 'bases', 'components']) {
    const list = first.get(key);
    if (!isSeq(list)) continue;
    for (const entry of spec[key] as unknown[]) {
      // Remote bases (a URL, github.com/…) are kustomize's to fetch.
      if (typeof entry !== 'string' || /:\/\/|^github\.com\/|^git@/.test(entry)) continue;
      const resolved = path.posix.normalize(path.posix.join(dir, entry));
      if (!resolved.startsWith('..')) references.push(resolved === '.' ? '' : resolved.replace(/\/$/, ''));
    }
  }
  const namespace = typeof spec.namespace === 'string' ? spec.namespace : undefined;
  return { path: file, dir, namespace, references };
}

function packageScript(file: string, text: string): PackageScript | LeftOut | undefined {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return { path: file, because: 'not valid JSON' };
  }
  if (typeof json !== 'object' || json === null) return undefined;
  const { name, scripts } = json as { name?: unknown; scripts?: unknown };
  const start =
    typeof scripts === 'object' && scripts !== null ? (scripts as { start?: unknown }).start : undefined;
  if (typeof start !== 'string' || start.trim() === '') return undefined;
  return { path: file, name: typeof name === 'string' ? name : undefined, start };
}

/** Looks through `root` (not `.git`, `node_modules`, `.tend`, dot directories; at most 8 deep). */
export function detect(root: string): Detection {
  const found: Detection = {
    dockerfiles: [],
    manifests: [],
    kustomizations: [],
    packages: [],
    garden: [],
    tendFiles: [],
    leftOut: [],
  };
  const files = fg
    .sync(
      [
        '**/{Dockerfile,Dockerfile.*,*.Dockerfile,*.dockerfile,Containerfile}',
        '**/*.{yaml,yml}',
        '**/Kustomization',
        '**/package.json',
      ],
      {
        cwd: root,
        onlyFiles: true,
        dot: false,
        followSymbolicLinks: false,
        deep: maxDepth,
        ignore: ['**/node_modules/**', '**/.git/**', '**/.tend/**'],
      },
    )
    .sort();
  if (files.length > maxFiles) {
    found.leftOut.push({
      path: '.',
      because: `more than ${maxFiles} candidate files: only the first ${maxFiles} (in path order) were read`,
    });
  }
  // Helm charts are templates, not manifests: their directories are left out whole.
  const charts = files
    .filter((f) => path.posix.basename(f) === 'Chart.yaml')
    .map((f) => path.posix.dirname(f));
  for (const chart of charts) {
    found.leftOut.push({ path: chart, because: 'a Helm chart: tend has no helm action type yet' });
  }
  const inChart = (file: string) => charts.some((c) => c === '.' || file.startsWith(`${c}/`));
  for (const file of files.slice(0, maxFiles)) {
    const base = path.posix.basename(file);
    if (isTendFile(base)) found.tendFiles.push(file);
    else if (isGardenFile(base)) found.garden.push(file);
    else if (inChart(file)) continue;
    else if (isDockerfile(base)) found.dockerfiles.push(file);
    else if (base === 'package.json') {
      const text = readSmall(root, file);
      const script = text === undefined ? undefined : packageScript(file, text);
      if (script && 'start' in script) found.packages.push(script);
      else if (script) found.leftOut.push(script);
    } else if (kustomizationNames.has(base)) {
      const text = readSmall(root, file);
      if (text === undefined) continue;
      const k = kustomization(file, text);
      if ('dir' in k) found.kustomizations.push(k);
      else found.leftOut.push(k);
    } else if (base === 'skaffold.yaml' || base === 'skaffold.yml') {
      found.leftOut.push({
        path: file,
        because:
          'a Skaffold configuration: not read (tend init looks at the Dockerfiles and manifests themselves)',
      });
    } else {
      const text = readSmall(root, file);
      const objects = text === undefined ? undefined : manifestObjects(text);
      if (Array.isArray(objects)) found.manifests.push({ path: file, objects });
      else if (objects) found.leftOut.push({ path: file, because: objects.notManifest });
    }
  }
  return found;
}
