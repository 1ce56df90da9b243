/**
 * From what `tend init` found to the actions it writes, each with the reason it was chosen, and
 * the files that hold them: the Project document and the root's actions in tend.yml, each other
 * directory's actions in `<dir>/<name>.tend.yml` (their source is that directory, the default).
 */
import path from 'node:path';
import { clusterScopedKinds } from '../../cluster-scoped-kinds.js';
import { nameMaxLength } from '../project.js';
import { type Detection, type Kustomization, type LeftOut, type ManifestFile } from './detect.js';

export interface PlannedAction {
  kind: 'Build' | 'Deploy';
  type: 'container' | 'kubernetes' | 'exec';
  name: string;
  /** The directory whose file holds it (its source), relative, `` for the top. */
  dir: string;
  dependencies: string[];
  spec: Record<string, unknown>;
  /** Why init chose it, for people. */
  because: string;
  /** What the user should know about it (an image a manifest keeps, …). */
  notes: string[];
}

export interface InitPlan {
  project: string;
  actions: PlannedAction[];
  /** Files to write, relative to the directory, each with the actions it holds. */
  files: { path: string; actions: PlannedAction[] }[];
  providers: ('exec' | 'kubernetes')[];
  leftOut: LeftOut[];
}

/**
 * The project name is the directory's, made a name: at most 30 characters, so that the dev
 * namespace `<project>-<username>` stays within 63 for any Linux user name (at most 32).
 */
export const projectNameMaxLength = 30;

/** `My_Service.v2` → `my-service-v2`; `fallback` when nothing is left. */
export function toName(raw: string, fallback: string, max = nameMaxLength): string {
  const name = raw
    .normalize('NFKD') // `Ü` → `U` and a combining mark, which is dropped
    .replace(/\p{M}/gu, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .slice(0, max)
    .replace(/^-+|-+$/g, '');
  return name === '' ? fallback : name;
}

/** Directory names that say "manifests live here", not what they deploy: `api/k8s` is api's. */
const genericDirs = new Set([
  'k8s',
  'kube',
  'kustomize',
  'kubernetes',
  'manifests',
  'manifest',
  'deploy',
  'deployment',
  'deployments',
  'base',
  'overlays',
  'yaml',
]);

const parentOf = (dir: string) => (path.posix.dirname(dir) === '.' ? '' : path.posix.dirname(dir));
const dirOf = (file: string) => parentOf(file);
const under = (file: string, dir: string) => dir === '' || file === dir || file.startsWith(`${dir}/`);

function componentOf(dir: string): string {
  let at = dir;
  // An overlay (`k8s/overlays/dev`) belongs where its overlays are.
  if (path.posix.basename(parentOf(at)) === 'overlays') at = parentOf(at);
  while (at !== '' && genericDirs.has(path.posix.basename(at))) at = parentOf(at);
  return at;
}

/** The name of an image's repository: `registry:5000/shop/api:1.2@sha256:…` → `api`. */
function repositoryName(image: string): string {
  const withoutDigest = image.split('@')[0]!;
  const last = withoutDigest.split('/').pop()!;
  return last.split(':')[0]!;
}

/** Overlay names preferred for the dev environment, best first. */
const devOverlays = ['dev', 'development', 'local', 'default'];

class Names {
  private readonly taken = new Set<string>();
  unique(kind: string, name: string): string {
    let candidate = name;
    for (let i = 2; this.taken.has(`${kind}.${candidate}`); i++) {
      const suffix = `-${i}`;
      candidate = `${name.slice(0, nameMaxLength - suffix.length)}${suffix}`;
    }
    this.taken.add(`${kind}.${candidate}`);
    return candidate;
  }
}

interface DeployFromManifests {
  dir: string;
  spec: Record<string, unknown>;
  files: ManifestFile[];
  because: string;
  notes: string[];
}

/** The kustomizations to deploy: those no other one builds on, one overlay per overlays directory. */
function kustomizeDeploys(detection: Detection, leftOut: LeftOut[]): DeployFromManifests[] {
  const all = detection.kustomizations;
  const referenced = new Set(all.flatMap((k) => k.references));
  const tops = all.filter((k) => !referenced.has(k.dir));
  const byParent = new Map<string, Kustomization[]>();
  for (const k of tops) byParent.set(parentOf(k.dir), [...(byParent.get(parentOf(k.dir)) ?? []), k]);
  const chosen: { k: Kustomization; why: string }[] = [];
  for (const [, siblings] of byParent) {
    if (siblings.length === 1) {
      chosen.push({ k: siblings[0]!, why: `the kustomization ${siblings[0]!.path}` });
      continue;
    }
    const pick =
      devOverlays.map((n) => siblings.find((k) => path.posix.basename(k.dir) === n)).find(Boolean) ??
      siblings[0]!;
    chosen.push({
      k: pick,
      why: `the kustomization ${pick.path}, the overlay for development among ${siblings.map((k) => path.posix.basename(k.dir)).join(', ')}`,
    });
    for (const other of siblings.filter((k) => k !== pick)) {
      leftOut.push({
        path: other.path,
        because: `another overlay: deploy it with kustomize: { path: ${other.dir} } in an environment of its own`,
      });
    }
  }
  return chosen.map(({ k, why }) => {
    // What the kustomization reaches: its directory, the files and kustomizations it names.
    const reached = new Set<string>();
    const walk = (dir: string) => {
      if (reached.has(dir)) return;
      reached.add(dir);
      for (const ref of all.find((x) => x.dir === dir)?.references ?? []) {
        if (all.some((x) => x.dir === ref)) walk(ref);
        else reached.add(ref);
      }
    };
    walk(k.dir);
    const kustomizations = all.filter((x) => reached.has(x.dir));
    const files = detection.manifests.filter((m) =>
      [...reached].some((r) => m.path === r || (all.some((x) => x.dir === r) && under(m.path, r))),
    );
    const dir = componentOf(k.dir);
    const relative = path.posix.relative(dir === '' ? '.' : dir, k.dir) || '.';
    const notes: string[] = [];
    const sets = kustomizations.find((x) => x.namespace !== undefined);
    const spec: Record<string, unknown> = { kustomize: { path: relative } };
    if (sets) {
      spec.overrideNamespace = true;
      notes.push(
        `${sets.path} sets namespace: ${sets.namespace}; overrideNamespace: true deploys into each environment's namespace instead`,
      );
    }
    const clusterScoped = files.flatMap((f) =>
      f.objects
        .filter((o) => clusterScopedKinds.has(o.kind))
        .map((o) => `${o.kind} ${o.name ?? ''} (${f.path})`),
    );
    if (clusterScoped.length > 0) {
      notes.push(
        `it renders ${clusterScoped.join(', ')}: tend refuses cluster-scoped objects (it creates each environment's namespace itself); leave them out of this kustomization`,
      );
    }
    return { dir, spec, files, because: `${why} (kustomize build, or kubectl kustomize)`, notes };
  });
}

/** Manifest files no kustomization covers, one Deploy per directory they belong to. */
function fileDeploys(detection: Detection, covered: Set<string>, leftOut: LeftOut[]): DeployFromManifests[] {
  const kustomizationDirs = detection.kustomizations.map((k) => k.dir);
  const byDir = new Map<string, ManifestFile[]>();
  for (const file of detection.manifests) {
    if (covered.has(file.path) || kustomizationDirs.some((d) => under(file.path, d))) continue;
    const clusterScoped = file.objects.filter((o) => clusterScopedKinds.has(o.kind));
    if (clusterScoped.length > 0) {
      leftOut.push({
        path: file.path,
        because: `holds ${clusterScoped.map((o) => `${o.kind} ${o.name ?? ''}`.trim()).join(', ')}: cluster-scoped, and tend creates each environment's namespace itself (apply what else it needs once, with kubectl)`,
      });
      continue;
    }
    const dir = componentOf(dirOf(file.path));
    byDir.set(dir, [...(byDir.get(dir) ?? []), file]);
  }
  return [...byDir].map(([dir, files]) => {
    const paths = files.map((f) => path.posix.relative(dir === '' ? '.' : dir, f.path));
    const spec: Record<string, unknown> = { files: paths };
    const notes: string[] = [];
    const namespaced = files.flatMap((f) => f.objects.filter((o) => o.namespace !== undefined));
    if (namespaced.length > 0) {
      spec.overrideNamespace = true;
      notes.push(
        `metadata.namespace is ${[...new Set(namespaced.map((o) => o.namespace))].join(', ')} in ${namespaced.map((o) => `${o.kind} ${o.name ?? ''}`.trim()).join(', ')}; overrideNamespace: true deploys into each environment's namespace instead`,
      );
    }
    const objects = files.flatMap((f) => f.objects.map((o) => `${o.kind} ${o.name ?? ''}`.trim()));
    return {
      dir,
      spec,
      files,
      because: `Kubernetes manifests: ${files.map((f) => f.path).join(', ')} (${objects.join(', ')})`,
      notes,
    };
  });
}

/**
 * A deploy of manifests with the builds it deploys: a build goes with it when a manifest names its
 * image, or when a container names no image and the build is in the same directory.
 */
function withBuilds(
  deploy: DeployFromManifests,
  builds: PlannedAction[],
): Pick<PlannedAction, 'dependencies' | 'spec' | 'because' | 'notes'> {
  const objects = deploy.files.flatMap((f) => f.objects);
  const images = [...new Set(objects.flatMap((o) => o.images))];
  const without = objects.flatMap((o) => o.containersWithoutImage);
  const notes = [...deploy.notes];
  const namesImageOf = (b: PlannedAction, image: string) =>
    repositoryName(image) === b.name || repositoryName(image) === path.posix.basename(b.dir);
  const paired = builds.filter(
    (b) => images.some((image) => namesImageOf(b, image)) || (without.length > 0 && b.dir === deploy.dir),
  );
  const spec = { ...deploy.spec };
  let because = deploy.because;
  if (paired.length > 0) {
    because += `; it deploys what ${paired.map((b) => `build.${b.name}`).join(' and ')} builds`;
  }
  if (paired.length === 1) {
    const output = `\${actions.build.${paired[0]!.name}.outputs.image}`;
    spec.image = output;
    const named = images.filter((image) => namesImageOf(paired[0]!, image));
    if (named.length > 0) {
      notes.push(
        `a container names image ${named.join(', ')}: it keeps it; to run the image tend builds, remove that image: line (the Deploy's image: fills containers that have none) or write image: ${output} there`,
      );
    }
  } else if (without.length > 0) {
    const one = without.length === 1;
    notes.push(
      `container${one ? '' : 's'} ${without.join(', ')} name${one ? 's' : ''} no image: give ${one ? 'it' : 'them'} one, or set image: in this Deploy's spec`,
    );
  }
  return { dependencies: paired.map((b) => `build.${b.name}`), spec, because, notes };
}

/** What init writes for what it found. */
export function planInit(detection: Detection, directoryName: string): InitPlan {
  const project = toName(directoryName, 'project', projectNameMaxLength);
  const leftOut = [...detection.leftOut];
  const names = new Names();
  const actions: PlannedAction[] = [];
  const nameFor = (kind: string, dir: string, suffix = '') =>
    names.unique(kind, toName(`${dir === '' ? project : path.posix.basename(dir)}${suffix}`, project));

  const builds = detection.dockerfiles.map((file) => {
    const dir = dirOf(file);
    const base = path.posix.basename(file);
    const variant =
      /^(?:Dockerfile|Containerfile)\.(.+)$/.exec(base)?.[1] ?? /^(.+)\.[Dd]ockerfile$/.exec(base)?.[1];
    const name = nameFor('build', dir, variant ? `-${variant}` : '');
    const action: PlannedAction = {
      kind: 'Build',
      type: 'container',
      name,
      dir,
      dependencies: [],
      spec: base === 'Dockerfile' ? {} : { dockerfile: base },
      because: `${file}: an image built from ${dir === '' ? 'the top directory' : `${dir}/`} (the build context) and pushed to the deployment registry`,
      notes: [],
    };
    actions.push(action);
    return action;
  });

  const fromKustomize = kustomizeDeploys(detection, leftOut);
  const covered = new Set(fromKustomize.flatMap((d) => d.files.map((f) => f.path)));
  for (const k of detection.kustomizations) for (const r of k.references) covered.add(r);
  const manifestDeploys = [...fromKustomize, ...fileDeploys(detection, covered, leftOut)];
  const deployDirs = new Set(manifestDeploys.map((d) => d.dir));

  for (const deploy of manifestDeploys) {
    const { dependencies, spec, because, notes } = withBuilds(deploy, builds);
    actions.push({
      kind: 'Deploy',
      type: 'kubernetes',
      name: nameFor('deploy', deploy.dir),
      dir: deploy.dir,
      dependencies,
      spec,
      because,
      notes,
    });
  }

  for (const pkg of detection.packages) {
    const dir = dirOf(pkg.path);
    if (deployDirs.has(dir)) {
      leftOut.push({
        path: pkg.path,
        because: `its start script: ${dir === '' ? 'the project' : `${dir}/`} deploys to Kubernetes (add an exec Deploy to run it as a local process too)`,
      });
      continue;
    }
    actions.push({
      kind: 'Deploy',
      type: 'exec',
      name: nameFor('deploy', dir),
      dir,
      dependencies: [],
      spec: { command: ['npm', 'start'], persistent: true },
      because: `${pkg.path} has a start script (${pkg.start}): run as a local background process`,
      notes: [
        'ready as soon as it started: add readiness: { url: http://127.0.0.1:<port>/ } to wait until it answers',
      ],
    });
  }

  const providers = new Set<'exec' | 'kubernetes'>();
  for (const action of actions) providers.add(action.type === 'exec' ? 'exec' : 'kubernetes');
  if (providers.size === 0) providers.add('exec');

  const byDir = new Map<string, PlannedAction[]>([['', []]]);
  for (const action of actions) byDir.set(action.dir, [...(byDir.get(action.dir) ?? []), action]);
  const files = [...byDir].map(([dir, held]) => ({
    path: dir === '' ? 'tend.yml' : `${dir}/${held[0]!.name}.tend.yml`,
    actions: held,
  }));
  return {
    project,
    actions,
    files,
    providers: (['exec', 'kubernetes'] as const).filter((p) => providers.has(p)),
    leftOut,
  };
}
