/**
 * Schemas of the kubernetes provider entry and of its action types' specs. Plain data and
 * TypeBox only: this file is loaded for every project, so it stays free of the Kubernetes client.
 */
import { Type, type Static } from 'typebox';
import type { ClusterOverride, ExecutorFlags } from '../../plugin/types.js';
import { AnyKey } from '../../schema-check.js';
import { ContainerVolumes } from './volumes.js';

export const Seconds = (description: string, maximum = 86_400) =>
  Type.Number({ exclusiveMinimum: 0, maximum, description });

/**
 * A path or an argument: not empty, no NUL (no file name or argument holds one) and no lone UTF-16
 * surrogate (not text: a request carrying it fails to encode, a file name gets U+FFFD instead).
 */
export const pathOrArgument = '^(?:[^\\u0000\\ud800-\\udfff]|[\\ud800-\\udbff][\\udc00-\\udfff])+$';

/** A namespace name as Kubernetes takes it: a DNS label (lower-case letters, digits, `-`; at most 63). */
const namespaceName = (description: string) =>
  Type.String({ minLength: 1, maxLength: 63, pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$', description });

export const KubernetesProviderConfig = Type.Object(
  {
    context: Type.Optional(
      Type.String({ minLength: 1, description: 'kubeconfig context (default: the current context)' }),
    ),
    kubeconfig: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 4096,
        pattern: pathOrArgument,
        description:
          'kubeconfig file read instead of KUBECONFIG and ~/.kube/config (relative: to the project root)',
      }),
    ),
    namespace: Type.Optional(namespaceName("the app namespace (default: the environment's namespace)")),
    buildMode: Type.Optional(
      Type.Union([Type.Literal('cluster-buildkit'), Type.Literal('kaniko')], {
        description: 'how container images are built (default cluster-buildkit)',
      }),
    ),
    deploymentRegistry: Type.Optional(
      Type.String({
        minLength: 1,
        pattern: '^[^\\s/\\u0000-\\u001f]+(/[a-z0-9._/-]+)?$',
        patternErrorMessage:
          'a registry host and path, e.g. registry.example.com/shop: the path of lower-case letters, digits, ".", "_", "-" and "/" (a placeholder to fill in?)',
        description: 'registry (and path) images are pushed to, e.g. registry.example.com/shop',
      }),
    ),
    insecureRegistry: Type.Optional(
      Type.Boolean({
        description: 'talk plain HTTP to the registry (default: only for localhost and 127.0.0.1)',
      }),
    ),
    defaultHostname: Type.Optional(
      Type.String({
        minLength: 1,
        description: "the host of a container Deploy's ingresses that name none",
      }),
    ),
    ingressClass: Type.Optional(
      Type.String({ minLength: 1, description: "the ingressClassName of a container Deploy's ingresses" }),
    ),
    systemNamespace: Type.Optional(
      namespaceName('shared namespace for tend infrastructure such as Kaniko pods (default tend-system)'),
    ),
    buildkitImage: Type.Optional(
      Type.String({ minLength: 1, description: 'builder image (cluster-buildkit)' }),
    ),
    kanikoImage: Type.Optional(Type.String({ minLength: 1, description: 'executor image (kaniko)' })),
    podStartTimeout: Type.Optional(
      Seconds('seconds to wait for a builder or test pod to start (default 300)'),
    ),
    namespaceTimeout: Type.Optional(
      Seconds('seconds to wait for a terminating namespace to be gone (default 120)'),
    ),
    retries: Type.Optional(
      Type.Integer({ minimum: 0, maximum: 20, description: 'retries of idempotent API calls (default 5)' }),
    ),
  },
  { additionalProperties: false },
);
export type KubernetesProviderConfig = Static<typeof KubernetesProviderConfig>;

export const KustomizeSpec = Type.Object(
  {
    path: Type.String({
      pattern: pathOrArgument,
      description: 'directory of the kustomization (its kustomization.yaml), relative to the action source',
    }),
    extraArgs: Type.Optional(
      Type.Array(Type.String({ pattern: pathOrArgument }), {
        description: 'arguments after the path, e.g. `[--enable-helm]`',
      }),
    ),
    version: Type.Optional(
      Type.Union([Type.Literal(4), Type.Literal(5)], {
        description:
          "Garden's choice of kustomize major version; accepted, not used: tend runs the kustomize on PATH, else the one built into kubectl",
      }),
    ),
  },
  {
    additionalProperties: false,
    description:
      'manifests rendered by `kustomize build` (by `kubectl kustomize` when kustomize is not on PATH), applied as rendered (no template expressions)',
  },
);
export type KustomizeSpec = Static<typeof KustomizeSpec>;

/** A JSON patch operation (RFC 6902); what each op needs besides `path` is checked when applied. */
const JsonPatchOperation = Type.Object(
  {
    op: Type.Union(['add', 'remove', 'replace', 'move', 'copy', 'test'].map((op) => Type.Literal(op))),
    path: Type.String({ pattern: '^(/.*)?$', description: 'a JSON pointer: /spec/replicas' }),
    from: Type.Optional(Type.String({ pattern: '^(/.*)?$' })),
    value: Type.Optional(Type.Unknown()),
  },
  { additionalProperties: false },
);

/** Garden's patchResources entry (docs/kubernetes.md#patchresources). */
const PatchResource = Type.Object(
  {
    kind: Type.String({ minLength: 1, description: 'the kind of the objects to patch' }),
    name: Type.String({ minLength: 1, description: 'their metadata.name' }),
    strategy: Type.Optional(
      Type.Union([Type.Literal('strategic'), Type.Literal('merge'), Type.Literal('json')], {
        description: 'strategic (default), merge (RFC 7386) or json (RFC 6902)',
      }),
    ),
    patch: Type.Union([Type.Array(JsonPatchOperation), Type.Record(AnyKey(), Type.Unknown())], {
      description: 'the fields to change (strategic, merge), or a list of JSON patch operations (json)',
    }),
  },
  { additionalProperties: false },
);

/**
 * Garden's `namespace` of a kubernetes or helm Deploy and a kubernetes-pod, helm-pod or
 * kubernetes-exec Test or Run: tend deploys and runs in the environment's namespace, so it may
 * name only that one (namespace-key.ts).
 */
const gardenNamespaceKey = Type.Optional(
  namespaceName(
    "Garden's key: the namespace the action deploys or runs in; tend deploys and runs in the environment's namespace, which it records and cleans up, so it may only name that one",
  ),
);

export const KubernetesDeploySpec = Type.Object(
  {
    manifestFiles: Type.Optional(
      Type.Array(Type.String({ pattern: pathOrArgument }), {
        description:
          'manifest files or glob patterns (`k8s/*.yaml`), relative to the action source, applied as written (no template expressions); `!pattern` leaves out what it matches',
      }),
    ),
    manifestTemplates: Type.Optional(
      Type.Array(Type.String({ pattern: pathOrArgument }), {
        description: 'like manifestFiles, with the `${…}` template expressions in the files resolved',
      }),
    ),
    files: Type.Optional(
      Type.Array(Type.String({ pattern: pathOrArgument }), {
        description:
          'manifestTemplates by its older name (kept for existing tend.yml files, and Garden 0.12 modules): templated files',
      }),
    ),
    kustomize: Type.Optional(KustomizeSpec),
    manifests: Type.Optional(
      Type.Array(Type.Record(AnyKey(), Type.Unknown()), {
        description: 'inline manifests (their template expressions are resolved)',
      }),
    ),
    patchResources: Type.Optional(
      Type.Array(PatchResource, {
        description: 'patches applied to the manifests (of every source) whose kind and name they give',
      }),
    ),
    namespace: gardenNamespaceKey,
    overrideNamespace: Type.Optional(
      Type.Boolean({
        description:
          'set the namespace of objects that name another one to the app namespace (default false: refused)',
      }),
    ),
    image: Type.Optional(
      Type.String({ minLength: 1, description: 'image for every container that has no `image:` of its own' }),
    ),
    wait: Type.Optional(Type.Boolean({ description: 'wait until workloads are ready (default true)' })),
    waitForJobs: Type.Optional(
      Type.Boolean({
        description:
          "Garden's key: wait until Jobs complete (default true); false counts a Job ready once it has not failed",
      }),
    ),
    timeout: Type.Optional(Seconds('seconds to wait until workloads are ready (default 300)')),
  },
  { additionalProperties: false },
);
export type KubernetesDeploySpec = Static<typeof KubernetesDeploySpec>;

const workloadKind = Type.Union(
  ['Deployment', 'StatefulSet', 'DaemonSet', 'ReplicaSet', 'Job', 'CronJob', 'Pod'].map((k) =>
    Type.Literal(k),
  ),
  { description: 'the workload kind' },
);
const containerName = Type.Optional(
  Type.String({ minLength: 1, description: 'the container (default: the first)' }),
);

/** A workload in the cluster whose pods a Test or Run uses, as Garden names it. */
export const PodResource = Type.Object(
  {
    kind: workloadKind,
    name: Type.String({ minLength: 1, description: 'the workload name' }),
    containerName,
  },
  {
    additionalProperties: false,
    description:
      'a workload in the app namespace (deployed by a Deploy this action depends on) whose pods are used',
  },
);
export type PodResource = Static<typeof PodResource>;

/**
 * A kubernetes-pod's or helm-pod's workload: found in its manifests (a helm-pod's chart) when it
 * has them, where, as in Garden, `name` may be left out for the one workload of that kind.
 */
export const ManifestPodResource = Type.Object(
  {
    kind: workloadKind,
    name: Type.Optional(
      Type.String({
        minLength: 1,
        description:
          'the workload name; without it, the one workload of that kind the manifests (a helm-pod: its chart) render',
      }),
    ),
    containerName,
  },
  {
    additionalProperties: false,
    description:
      'a workload of its manifests (a helm-pod: its chart), else of the app namespace, whose pod spec the pod takes',
  },
);
export type ManifestPodResource = Static<typeof ManifestPodResource>;

/** An env value read from a Secret's key, as a container Deploy's and a pod's env may give. */
export const SecretEnv = Type.Object(
  {
    secretRef: Type.Object(
      {
        name: Type.String({ minLength: 1, description: 'the Secret in the app namespace' }),
        key: Type.Optional(
          Type.String({ minLength: 1, description: 'its key (default: the variable name)' }),
        ),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
);

const PodRunKeys = {
  command: Type.Optional(
    Type.Array(Type.String(), { description: "the container's entrypoint (default: the image's)" }),
  ),
  args: Type.Optional(
    Type.Array(Type.String(), { description: "arguments of the entrypoint (default: the image's)" }),
  ),
  env: Type.Optional(
    Type.Record(AnyKey(), Type.Union([Type.String(), SecretEnv]), {
      propertyNames: { pattern: '^[A-Za-z_][A-Za-z0-9_.-]*$' },
      description:
        'environment variables of the container: a value, or `{ secretRef: { name, key } }` of a Secret',
    }),
  ),
  timeout: Type.Optional(Seconds('seconds the pod may run (default 600)')),
};

/** A kubernetes Deploy's manifest source, as a kubernetes-pod's: where its `resource` is found. */
const podManifestSource = <
  K extends 'manifestFiles' | 'manifestTemplates' | 'files' | 'kustomize' | 'manifests',
>(
  key: K,
) =>
  Type.Optional({
    ...KubernetesDeploySpec.properties[key],
    description: `as a kubernetes Deploy's ${key}: the manifests in which \`resource\` is found (not applied)`,
  });

export const KubernetesPodSpec = Type.Object(
  {
    image: Type.Optional(
      Type.String({
        minLength: 1,
        description:
          'the container image, e.g. `${actions.build.api.outputs.image}` (one of image, resource and podSpec)',
      }),
    ),
    resource: Type.Optional(ManifestPodResource),
    podSpec: Type.Optional(
      Type.Record(AnyKey(), Type.Unknown(), { description: 'the pod spec, as a manifest writes it' }),
    ),
    ...PodRunKeys,
    namespace: gardenNamespaceKey,
    volumes: Type.Optional(ContainerVolumes),
    manifestFiles: podManifestSource('manifestFiles'),
    manifestTemplates: podManifestSource('manifestTemplates'),
    files: podManifestSource('files'),
    kustomize: podManifestSource('kustomize'),
    manifests: podManifestSource('manifests'),
    patchResources: KubernetesDeploySpec.properties.patchResources,
    workingDir: Type.Optional(
      Type.String({ minLength: 1, description: "the container's working directory (default: the image's)" }),
    ),
  },
  // Where the pod comes from: found by `tend validate`, not when the pod is about to run.
  {
    additionalProperties: false,
    anyOf: [{ required: ['image'] }, { required: ['resource'] }, { required: ['podSpec'] }],
  },
);
export type KubernetesPodSpec = Static<typeof KubernetesPodSpec>;

export const HelmChart = Type.Object(
  {
    path: Type.Optional(
      Type.String({
        pattern: pathOrArgument,
        description: 'a local chart directory, relative to the action source',
      }),
    ),
    name: Type.Optional(Type.String({ minLength: 1, description: 'a chart of `repo` (or `repo/chart`)' })),
    repo: Type.Optional(Type.String({ minLength: 1, description: 'the chart repository URL' })),
    url: Type.Optional(Type.String({ minLength: 1, description: 'a packaged chart URL' })),
    version: Type.Optional(Type.String({ minLength: 1, description: 'the chart version' })),
  },
  {
    additionalProperties: false,
    description: 'the chart (default: the one in the action source, `path: .`)',
  },
);
export type HelmChart = Static<typeof HelmChart>;

const HelmChartKeys = {
  chart: Type.Optional(HelmChart),
  values: Type.Optional(
    Type.Record(AnyKey(), Type.Unknown(), { description: 'values, over the value files (`--values`)' }),
  ),
  valueFiles: Type.Optional(
    Type.Array(Type.String({ pattern: pathOrArgument }), {
      description: 'value files, relative to the action source, in order (later ones win)',
    }),
  ),
  releaseName: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 53,
      pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$',
      description: 'the release name (default: the action name)',
    }),
  ),
};

export const HelmDeploySpec = Type.Object(
  {
    ...HelmChartKeys,
    wait: Type.Optional(Type.Boolean({ description: 'wait until workloads are ready (default true)' })),
    timeout: Type.Optional(Seconds('seconds to wait until workloads are ready (default 300)')),
    namespace: gardenNamespaceKey,
  },
  { additionalProperties: false },
);
export type HelmDeploySpec = Static<typeof HelmDeploySpec>;

export const HelmPodSpec = Type.Object(
  {
    ...HelmChartKeys,
    ...PodRunKeys,
    resource: Type.Optional(ManifestPodResource),
    namespace: gardenNamespaceKey,
  },
  { additionalProperties: false },
);
export type HelmPodSpec = Static<typeof HelmPodSpec>;

export const KubernetesExecSpec = Type.Object(
  {
    resource: PodResource,
    command: Type.Array(Type.String(), {
      minItems: 1,
      description: 'the command run in a running pod of the resource (as `kubectl exec`)',
    }),
    timeout: Type.Optional(Seconds('seconds the command may run (default 600)')),
    namespace: gardenNamespaceKey,
  },
  { additionalProperties: false },
);
export type KubernetesExecSpec = Static<typeof KubernetesExecSpec>;

/** The provider configuration with defaults applied. */
export interface ProviderSettings {
  context?: string;
  /** A kubeconfig file read instead of KUBECONFIG / ~/.kube/config (cleanup executors' `--kubeconfig`). */
  kubeconfig?: string;
  appNamespace: string;
  systemNamespace: string;
  buildMode: 'cluster-buildkit' | 'kaniko';
  deploymentRegistry?: string;
  insecureRegistry?: boolean;
  buildkitImage: string;
  kanikoImage: string;
  podStartTimeoutMs: number;
  namespaceTimeoutMs: number;
  retries: number;
}

export function settingsOf(config: KubernetesProviderConfig, environmentNamespace: string): ProviderSettings {
  return {
    ...(config.context ? { context: config.context } : {}),
    appNamespace: config.namespace ?? environmentNamespace,
    systemNamespace: config.systemNamespace ?? 'tend-system',
    buildMode: config.buildMode ?? 'cluster-buildkit',
    ...(config.deploymentRegistry ? { deploymentRegistry: config.deploymentRegistry } : {}),
    ...(config.insecureRegistry !== undefined ? { insecureRegistry: config.insecureRegistry } : {}),
    buildkitImage: config.buildkitImage ?? 'moby/buildkit:v0.16.0',
    kanikoImage: config.kanikoImage ?? 'gcr.io/kaniko-project/executor:v1.23.2',
    podStartTimeoutMs: (config.podStartTimeout ?? 300) * 1000,
    namespaceTimeoutMs: (config.namespaceTimeout ?? 120) * 1000,
    retries: config.retries ?? 5,
  };
}

/** The command line's `--kubeconfig` / `--context` (when given) over the provider's settings. */
export function withClusterOverride(
  settings: ProviderSettings,
  override: ClusterOverride | undefined,
): ProviderSettings {
  return {
    ...settings,
    ...(override?.context ? { context: override.context } : {}),
    ...(override?.kubeconfig ? { kubeconfig: override.kubeconfig } : {}),
  };
}

/** The kubernetes plugin's executor settings: which clusters it serves. */
export const KubernetesExecutorSettings = Type.Object(
  {
    kubeconfig: Type.Optional(
      Type.String({ minLength: 1, description: 'kubeconfig file (default: KUBECONFIG)' }),
    ),
    contexts: Type.Array(Type.String({ minLength: 1 }), {
      default: [],
      description: "contexts to serve (none: the kubeconfig's current context)",
    }),
  },
  { additionalProperties: false },
);
export type KubernetesExecutorSettings = Static<typeof KubernetesExecutorSettings>;

/** Clusters are served when `--kubeconfig` or `--context` says so, or by default (`tend agent`). */
export function settingsFromFlags(flags: ExecutorFlags): KubernetesExecutorSettings | undefined {
  if (flags.kubeconfig === undefined && flags.contexts.length === 0 && !flags.clustersByDefault)
    return undefined;
  return {
    ...(flags.kubeconfig !== undefined ? { kubeconfig: flags.kubeconfig } : {}),
    contexts: [...flags.contexts],
  };
}
