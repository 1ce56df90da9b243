/**
 * What `tend validate` warns of in a kubernetes Deploy's manifests before anything runs, which
 * `tend deploy` refuses (deploy.ts `prepare`), named at its file:line: each object of a kind the
 * cluster keeps outside namespaces (a ClusterRole: tend deploys only into the environment's
 * namespace), and each object whose `metadata.namespace` is not the one tend deploys into. The
 * same exceptions as the deploy's: `overrideNamespace: true`, and a Namespace among the manifests
 * (adopted: it stands for the environment's namespace). One written by hand (a file or inline) is
 * noted, saying so; one of the cluster's own (`kube-system`) is noted as refused. The kinds known
 * without a cluster are in src/cluster-scoped-kinds.ts; the deploy asks the cluster about the rest. The Deploy's own `namespace` key is checked as every
 * action's is (namespace-key.ts). A namespace written as a template expression, and a file that cannot be read
 * or parsed, are left to the deploy, which sees them resolved and reports them.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { LineCounter, parseAllDocuments } from 'yaml';
import { clusterScopedKinds } from '../../cluster-scoped-kinds.js';
import { clusterNamespaceRefusal } from './app-namespace.js';
import { TendError } from '../../errors.js';
import type { ActionWarning, CheckActionParams } from '../../plugin/types.js';
import type { KubernetesDeploySpec } from './config.js';
import type { KubeObject } from './client/index.js';
import { renderedDocuments, renderKustomization } from './kustomize.js';
import { manifestFiles, templateFiles } from './manifests.js';
import { appNamespaceOf, namespaceKeyProblems } from './namespace-key.js';

/** An object as written, and where its namespace is. */
interface Written {
  object: KubeObject;
  /** Its `metadata.namespace`, when it sets one. */
  namespace: string | undefined;
  where: Pick<ActionWarning, 'specPath' | 'file' | 'line' | 'column'>;
  /** For the message: `kustomize overlays/dev` or `manifests[0]`; none for a file, which the location names. */
  origin: string;
  /** Rendered by kustomize, not written by hand: a Namespace among them is adopted without a note. */
  rendered?: true;
}

export async function namespaceProblems(params: CheckActionParams): Promise<ActionWarning[]> {
  const spec = params.spec as KubernetesDeploySpec;
  const target = appNamespaceOf(params);
  const rendered = spec.kustomize ? await kustomizeObjects(params, spec) : [];
  const written = [...rendered, ...(await fileObjects(params, spec)), ...inlineObjects(spec)];
  // The Namespaces stand for the app namespace (deploy.ts adoptedNamespaces), but the cluster's own.
  const adopted = new Set(
    written
      .filter(
        (w) => w.object.kind === 'Namespace' && !clusterNamespaceRefusal(w.object.metadata?.name, target),
      )
      .map((w) => w.object.metadata?.name),
  );
  const override = spec.overrideNamespace === true;
  const objectProblems = written.flatMap((w) => {
    const origin = w.origin ? `${w.origin}: ` : '';
    const what = `${origin}${w.object.kind} ${w.object.metadata?.name}`;
    if (w.object.kind === 'Namespace') {
      const refusal = clusterNamespaceRefusal(w.object.metadata?.name, target);
      if (refusal) return [{ ...w.where, message: `${origin}${refusal}` }];
      // One a kustomization renders is adopted as silently as before; one written by hand is said.
      if (w.rendered) return [];
      return [
        {
          ...w.where,
          message:
            `${what}: tend deploy adopts it: it stands for the environment's namespace ("${target}"), ` +
            `so it is left out and the objects that name it go into "${target}"`,
        },
      ];
    }
    if (clusterScopedKinds.has(String(w.object.kind))) {
      return [
        {
          ...w.where,
          message:
            `${what} is cluster-scoped: tend deploy refuses it, as it deploys only into the environment's namespace ("${target}"), ` +
            'which it can record and clean up; apply it to the cluster once, outside tend (`kubectl apply`), and leave it out of the Deploy',
        },
      ];
    }
    const { namespace } = w;
    if (override || namespace === undefined || namespace === target || adopted.has(namespace)) return [];
    return [
      {
        ...w.where,
        message:
          `${what} sets namespace ${JSON.stringify(namespace)}: ` +
          `tend deploy refuses it (it deploys into "${target}"); remove metadata.namespace, or set \`overrideNamespace: true\``,
      },
    ];
  });
  return [...namespaceKeyProblems(spec.namespace, target), ...objectProblems];
}

/** The literal namespace of an object, if it sets one (a template expression is the deploy's to read). */
function writtenNamespace(object: unknown): string | undefined {
  const namespace = (object as KubeObject | null)?.metadata?.namespace;
  return typeof namespace === 'string' && namespace !== '' && !namespace.includes('${')
    ? namespace
    : undefined;
}

async function kustomizeObjects(params: CheckActionParams, spec: KubernetesDeploySpec): Promise<Written[]> {
  const kustomize = spec.kustomize!;
  let values: unknown[];
  try {
    const text = await renderKustomization(params.sourceDir, kustomize, {
      invalid: (message) => new TendError('TEND_K8S_MANIFEST_INVALID', message),
      projectRoot: params.projectRoot,
    });
    // The documents the deploy reads (kept parsed beside the rendering); YAML it cannot read is its to report.
    values = renderedDocuments(text, params.projectRoot, () =>
      parseAllDocuments(text).map((doc) => {
        if (doc.errors.length > 0) throw doc.errors[0];
        return doc.toJS() as unknown;
      }),
    );
  } catch {
    return [];
  }
  const out: Written[] = [];
  for (const value of values) {
    const object = value as KubeObject | null;
    if (!isObject(object)) continue;
    out.push({
      object,
      namespace: writtenNamespace(object),
      where: { specPath: ['kustomize', 'path'] },
      origin: `kustomize ${kustomize.path}`,
      rendered: true,
    });
  }
  return out;
}

async function fileObjects(params: CheckActionParams, spec: KubernetesDeploySpec): Promise<Written[]> {
  const names = [...(spec.manifestFiles ?? []), ...templateFiles(spec)];
  if (names.length === 0) return [];
  let files: string[];
  try {
    files = await manifestFiles(
      params.sourceDir,
      names,
      (message) => new TendError('TEND_K8S_MANIFEST_INVALID', message),
    );
  } catch {
    return [];
  }
  const out: Written[] = [];
  for (const file of files) {
    let text: string;
    try {
      text = readFileSync(path.resolve(params.sourceDir, file), 'utf8');
    } catch {
      continue;
    }
    const lines = new LineCounter();
    for (const doc of parseAllDocuments(text, { lineCounter: lines })) {
      if (doc.errors.length > 0) continue;
      const object = doc.toJS() as unknown;
      if (!isObject(object)) continue;
      const namespace = writtenNamespace(object);
      // At its namespace, or at its kind.
      const node = doc.getIn(namespace ? ['metadata', 'namespace'] : ['kind'], true) as
        { range?: [number, number, number] } | undefined;
      const position = lines.linePos(node?.range?.[0] ?? 0);
      out.push({
        object,
        namespace,
        where: { file: path.resolve(params.sourceDir, file), line: position.line, column: position.col },
        origin: '',
      });
    }
  }
  return out;
}

function inlineObjects(spec: KubernetesDeploySpec): Written[] {
  return (spec.manifests ?? []).flatMap((object, index) => {
    if (!isObject(object)) return [];
    const namespace = writtenNamespace(object);
    return [
      {
        object,
        namespace,
        where: { specPath: ['manifests', index, ...(namespace ? ['metadata', 'namespace'] : ['kind'])] },
        origin: `manifests[${index}]`,
      },
    ];
  });
}

function isObject(value: unknown): value is KubeObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
