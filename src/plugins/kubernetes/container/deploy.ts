/**
 * Deploy (`container`): the objects Garden's container Deploy makes — a Deployment named after the
 * action (a DaemonSet with `daemon`) running the image with its env, ports, probes, resources and
 * volumes; a Service for the ports; an Ingress per `ingresses` entry — applied, checked and
 * deleted through the same path as a kubernetes Deploy's manifests (../deploy.ts), so every
 * namespace and object is recorded and the deploy waits for readiness alike.
 */
import type {
  ActionHandlerParams,
  ExecuteResult,
  LogsParams,
  PluginContext,
  ResolvedAction,
  StatusResult,
} from '../../../plugin/types.js';
import type { KubeObject } from '../client/index.js';
import type { KubernetesProviderConfig } from '../config.js';
import type { ContainerDeploySpec } from './spec.js';
import { applyManifests, manifestsStatus, removeManifests } from '../deploy.js';
import { manifestLogs } from '../logs.js';
import { invalid, type Manifest } from '../manifests.js';
import { actionLabel } from '../pods.js';
import { podVolumes } from '../volumes.js';

type Params = ActionHandlerParams<ContainerDeploySpec>;
type Action = ResolvedAction<ContainerDeploySpec>;
type Port = NonNullable<ContainerDeploySpec['ports']>[number];

/** Garden's defaults: 10 millicpu to 1 CPU, 90 MB to 1 GB. */
const defaultResources = { cpu: { min: 10, max: 1000 }, memory: { min: 90, max: 1024 } };

function millicpu(value: number): string {
  const m = Math.floor(value);
  return m % 1000 === 0 ? String(m / 1000) : `${m}m`;
}

function megabytes(value: number): string {
  const kb = Math.floor(value * 1024);
  for (const [suffix, power] of [
    ['Ei', 5],
    ['Pi', 4],
    ['Ti', 3],
    ['Gi', 2],
    ['Mi', 1],
  ] as const) {
    if (kb % 1024 ** power === 0) return `${kb / 1024 ** power}${suffix}`;
  }
  return `${kb}Ki`;
}

/** Requests from `min`, limits from `max` (or the older `limits`), as Garden sets them. */
function resources(spec: ContainerDeploySpec): Record<string, Record<string, string>> {
  const cpuMax = spec.limits?.cpu ?? (spec.cpu?.max === undefined ? defaultResources.cpu.max : spec.cpu.max);
  const memoryMax =
    spec.limits?.memory ?? (spec.memory?.max === undefined ? defaultResources.memory.max : spec.memory.max);
  const limits: Record<string, string> = {};
  if (memoryMax) limits.memory = megabytes(memoryMax);
  if (cpuMax) limits.cpu = millicpu(cpuMax);
  return {
    requests: {
      cpu: millicpu(spec.cpu?.min ?? defaultResources.cpu.min),
      memory: megabytes(spec.memory?.min ?? defaultResources.memory.min),
    },
    ...(Object.keys(limits).length > 0 ? { limits } : {}),
  };
}

function portNamed(action: Action, name: string, where: string): Port {
  const port = action.spec.ports?.find((p) => p.name === name);
  if (!port) {
    const names = (action.spec.ports ?? []).map((p) => p.name);
    throw invalid(
      action,
      `${where}: port "${name}" is not one of spec.ports (${names.length ? names.join(', ') : 'none'})`,
    );
  }
  return port;
}

/** Readiness and liveness probes with Garden's timings. */
function probes(action: Action): Record<string, unknown> {
  const check = action.spec.healthCheck;
  if (!check) return {};
  let handler: Record<string, unknown>;
  if (check.httpGet) {
    const { port, ...rest } = check.httpGet;
    handler = { httpGet: { ...rest, port: portNamed(action, port, 'healthCheck.httpGet').containerPort } };
  } else if (check.command) {
    handler = { exec: { command: check.command.map(String) } };
  } else if (check.tcpPort) {
    handler = { tcpSocket: { port: portNamed(action, check.tcpPort, 'healthCheck.tcpPort').containerPort } };
  } else {
    throw invalid(action, 'healthCheck needs one of httpGet, command or tcpPort');
  }
  return {
    readinessProbe: {
      initialDelaySeconds: 2,
      periodSeconds: 1,
      timeoutSeconds: check.readinessTimeoutSeconds ?? 3,
      successThreshold: 2,
      failureThreshold: 90,
      ...handler,
    },
    livenessProbe: {
      initialDelaySeconds: 90,
      periodSeconds: 5,
      timeoutSeconds: check.livenessTimeoutSeconds ?? 3,
      successThreshold: 1,
      failureThreshold: 3,
      ...handler,
    },
  };
}

/** The spec's env, then the pod metadata Garden exposes to every container. */
function env(spec: ContainerDeploySpec): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = Object.entries(spec.env ?? {}).map(([name, value]) =>
    typeof value === 'string'
      ? { name, value }
      : {
          name,
          valueFrom: { secretKeyRef: { name: value.secretRef.name, key: value.secretRef.key ?? name } },
        },
  );
  for (const [name, fieldPath] of [
    ['POD_HOST_IP', 'status.hostIP'],
    ['POD_IP', 'status.podIP'],
    ['POD_NAME', 'metadata.name'],
    ['POD_NAMESPACE', 'metadata.namespace'],
    ['POD_NODE_NAME', 'spec.nodeName'],
    ['POD_SERVICE_ACCOUNT', 'spec.serviceAccountName'],
    ['POD_UID', 'metadata.uid'],
  ] as const) {
    out.push({ name, valueFrom: { fieldRef: { fieldPath } } });
  }
  return out;
}

function workload(action: Action, labels: Record<string, string>): KubeObject {
  const { spec } = action;
  const ports = spec.ports ?? [];
  const mounted = spec.volumes?.length ? podVolumes(action, spec.volumes) : undefined;
  const container = {
    name: action.name,
    image: spec.image,
    ...(spec.command?.length ? { command: spec.command } : {}),
    ...(spec.args?.length ? { args: spec.args } : {}),
    env: env(spec),
    ports: ports.map((p) => ({
      name: p.name,
      protocol: p.protocol ?? 'TCP',
      containerPort: p.containerPort,
      ...(spec.daemon && p.hostPort ? { hostPort: p.hostPort } : {}),
    })),
    resources: resources(spec),
    imagePullPolicy: 'IfNotPresent',
    ...probes(action),
    ...(mounted ? { volumeMounts: mounted.volumeMounts } : {}),
  };
  const podSpec = {
    containers: [container],
    restartPolicy: 'Always',
    terminationGracePeriodSeconds: 5,
    dnsPolicy: 'ClusterFirst',
    ...(mounted ? { volumes: mounted.volumes } : {}),
  };
  return {
    apiVersion: 'apps/v1',
    kind: spec.daemon ? 'DaemonSet' : 'Deployment',
    metadata: { name: action.name, labels },
    spec: {
      ...(spec.daemon ? {} : { replicas: spec.replicas ?? 1 }),
      selector: { matchLabels: labels },
      template: {
        metadata: {
          labels,
          annotations: { 'kubectl.kubernetes.io/default-container': action.name, ...spec.annotations },
        },
        spec: podSpec,
      },
    },
  };
}

function service(action: Action, labels: Record<string, string>): KubeObject {
  const ports = action.spec.ports ?? [];
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      name: action.name,
      labels,
      ...(action.spec.annotations ? { annotations: action.spec.annotations } : {}),
    },
    spec: {
      type: ports.some((p) => p.nodePort) ? 'NodePort' : 'ClusterIP',
      selector: labels,
      ports: ports.map((p) => ({
        name: p.name,
        protocol: p.protocol ?? 'TCP',
        port: p.servicePort ?? p.containerPort,
        targetPort: p.containerPort,
        ...(typeof p.nodePort === 'number' ? { nodePort: p.nodePort } : {}),
      })),
    },
  };
}

function ingresses(ctx: PluginContext, action: Action, labels: Record<string, string>): KubeObject[] {
  const config = ctx.provider.config as KubernetesProviderConfig;
  return (action.spec.ingresses ?? []).map((ingress, index) => {
    const port = portNamed(action, ingress.port, `ingresses[${index}]`);
    const host = ingress.hostname ?? config.defaultHostname;
    return {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'Ingress',
      metadata: {
        name: `${action.name}-${index}`,
        labels,
        annotations: { 'ingress.kubernetes.io/force-ssl-redirect': 'false', ...ingress.annotations },
      },
      spec: {
        ...(config.ingressClass ? { ingressClassName: config.ingressClass } : {}),
        rules: [
          {
            ...(host ? { host } : {}),
            http: {
              paths: [
                {
                  path: ingress.path ?? '/',
                  pathType: 'Prefix',
                  backend: {
                    service: { name: action.name, port: { number: port.servicePort ?? port.containerPort } },
                  },
                },
              ],
            },
          },
        ],
      },
    };
  });
}

/** The objects of the Deploy, in the order they are applied. */
export function containerManifests(ctx: PluginContext, action: Action): Manifest[] {
  const labels = { 'garden.io/action': actionLabel(action.ref) };
  const objects = [
    workload(action, labels),
    ...(action.spec.ports?.length ? [service(action, labels)] : []),
    ...ingresses(ctx, action, labels),
  ];
  return objects.map((object) => ({ object, origin: `${object.kind} ${object.metadata?.name}` }));
}

/** Garden's output of a container Deploy, beside tend's `namespace`. */
function outputs(action: Action): Record<string, string> {
  return { deployedImageId: action.spec.image };
}

export async function deploy(ctx: PluginContext, { action }: Params): Promise<ExecuteResult> {
  return applyManifests(ctx, action, containerManifests(ctx, action), outputs(action));
}

export async function getStatus(ctx: PluginContext, { action }: Params): Promise<StatusResult> {
  return manifestsStatus(ctx, action, async () => containerManifests(ctx, action), outputs(action));
}

export async function remove(ctx: PluginContext, { action }: Params): Promise<StatusResult> {
  return removeManifests(ctx, action, async () => containerManifests(ctx, action));
}

export async function getLogs(ctx: PluginContext, params: LogsParams<ContainerDeploySpec>): Promise<void> {
  return manifestLogs(ctx, params, async () => containerManifests(ctx, params.action));
}
