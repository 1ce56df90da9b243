/**
 * Schemas of the `container` action types' specs: a Build made by the in-cluster builder, and a
 * Deploy as Garden's container Deploy has it. Plain data and TypeBox only, like ../config.ts:
 * the plugin's entry point loads them for every project.
 */
import { Type, type Static } from 'typebox';
import { AnyKey } from '../../../schema-check.js';
import { pathOrArgument, SecretEnv, Seconds } from '../config.js';
import { ContainerVolumes } from '../volumes.js';

export const ContainerBuildSpec = Type.Object(
  {
    dockerfile: Type.Optional(
      Type.String({ minLength: 1, description: 'path of the Dockerfile in the source (default Dockerfile)' }),
    ),
    buildArgs: Type.Optional(
      Type.Record(AnyKey(), Type.String(), {
        propertyNames: { minLength: 1 },
        description: 'build arguments (`ARG` in the Dockerfile)',
      }),
    ),
    targetStage: Type.Optional(
      Type.String({
        minLength: 1,
        description: 'the stage of a multi-stage Dockerfile to build (default: the last)',
      }),
    ),
    extraFlags: Type.Optional(
      Type.Array(Type.String({ pattern: pathOrArgument, maxLength: 4096 }), {
        maxItems: 100,
        description:
          "flags added as they are at the end of the builder's command line: `buildctl build`'s in " +
          "cluster-buildkit mode (`[--opt, 'build-arg:MODE=ci']`), the Kaniko executor's in kaniko mode " +
          '(`--cache=true`); a flag the builder does not know fails the build with its message',
      }),
    ),
    timeout: Type.Optional(Seconds('seconds the build may take (default 1800)')),
  },
  { additionalProperties: false },
);
export type ContainerBuildSpec = Static<typeof ContainerBuildSpec>;

/*
 * The spec of a `container` Deploy, as Garden's container Deploy has it (docs/kubernetes.md):
 * one container from an image, run as a Deployment (a DaemonSet with `daemon`), a Service for its
 * ports and an Ingress per entry of `ingresses`.
 */
const PortName = Type.String({
  minLength: 1,
  maxLength: 15,
  pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$',
  description: 'the port name (a DNS label of at most 15 characters), as ingresses and health checks name it',
});
const PortNumber = (description: string) => Type.Integer({ minimum: 1, maximum: 65_535, description });

const Port = Type.Object(
  {
    name: PortName,
    protocol: Type.Optional(
      Type.Union([Type.Literal('TCP'), Type.Literal('UDP')], { description: 'default TCP' }),
    ),
    containerPort: PortNumber('the port the container listens on'),
    servicePort: Type.Optional(PortNumber("the Service's port (default: containerPort)")),
    nodePort: Type.Optional(
      Type.Union([Type.Boolean(), PortNumber('a fixed node port')], {
        description: 'expose the port on every node (the Service becomes a NodePort service)',
      }),
    ),
    // Any number, as Garden's schema has it (no range): tend makes no port forward and never reads it.
    localPort: Type.Optional(
      Type.Number({ description: 'a local port forward (not made by tend; ignored)' }),
    ),
    hostPort: Type.Optional(PortNumber("a host port of a daemon's pods")),
  },
  { additionalProperties: false },
);

const HealthCheck = Type.Object(
  {
    httpGet: Type.Optional(
      Type.Object(
        {
          path: Type.String({ minLength: 1, description: 'the path asked, e.g. /health' }),
          port: PortName,
          scheme: Type.Optional(
            Type.Union([Type.Literal('HTTP'), Type.Literal('HTTPS')], { description: 'default HTTP' }),
          ),
        },
        { additionalProperties: false, description: 'ready when an HTTP GET answers 2xx or 3xx' },
      ),
    ),
    command: Type.Optional(
      Type.Array(Type.Union([Type.String(), Type.Number()]), {
        minItems: 1,
        description: 'ready when this command exits 0 in the container',
      }),
    ),
    tcpPort: Type.Optional(PortName),
    readinessTimeoutSeconds: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 86_400, description: "the readiness probe's timeout (default 3)" }),
    ),
    livenessTimeoutSeconds: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 86_400, description: "the liveness probe's timeout (default 3)" }),
    ),
  },
  {
    additionalProperties: false,
    description: 'readiness and liveness probes: one of httpGet, command, tcpPort',
  },
);

/** Millicpu (`cpu`) or megabytes (`memory`) from min (requested) to max (the limit; null: none). */
const Range = (unit: string) =>
  Type.Object(
    {
      min: Type.Optional(Type.Number({ minimum: 0, description: `requested ${unit}` })),
      max: Type.Optional(
        Type.Union([Type.Number({ minimum: 0 }), Type.Null()], { description: `limit in ${unit}` }),
      ),
    },
    { additionalProperties: false, description: `${unit}: the request (min) and the limit (max)` },
  );

export const ContainerDeploySpec = Type.Object(
  {
    image: Type.String({
      minLength: 1,
      description: 'the image, e.g. `${actions.build.api.outputs.deploymentImageId}`',
    }),
    command: Type.Optional(
      Type.Array(Type.String(), { description: "the entrypoint (default: the image's)" }),
    ),
    args: Type.Optional(Type.Array(Type.String(), { description: "its arguments (default: the image's)" })),
    env: Type.Optional(
      Type.Record(AnyKey(), Type.Union([Type.String(), SecretEnv]), {
        propertyNames: { pattern: '^[A-Za-z_][A-Za-z0-9_.-]*$' },
        description: 'environment variables: a value, or `{ secretRef: { name, key } }` of a Secret',
      }),
    ),
    ports: Type.Optional(Type.Array(Port, { description: 'ports of the container, and of its Service' })),
    ingresses: Type.Optional(
      Type.Array(
        Type.Object(
          {
            path: Type.Optional(Type.String({ minLength: 1, description: 'default /' })),
            port: PortName,
            hostname: Type.Optional(
              Type.String({ minLength: 1, description: "default: the provider's defaultHostname" }),
            ),
            annotations: Type.Optional(Type.Record(AnyKey(), Type.String())),
            linkUrl: Type.Optional(Type.String()),
          },
          { additionalProperties: false },
        ),
        { description: 'an Ingress per entry, to a port of the Service' },
      ),
    ),
    healthCheck: Type.Optional(HealthCheck),
    cpu: Type.Optional(Range('millicpu (default 10 to 1000)')),
    memory: Type.Optional(Range('megabytes (default 90 to 1024)')),
    limits: Type.Optional(
      Type.Object(
        {
          cpu: Type.Optional(Type.Number({ minimum: 0, description: 'millicpu (older name of cpu.max)' })),
          memory: Type.Optional(
            Type.Number({ minimum: 0, description: 'megabytes (older name of memory.max)' }),
          ),
        },
        { additionalProperties: false, description: "Garden's older limits (cpu.max, memory.max win)" },
      ),
    ),
    replicas: Type.Optional(Type.Integer({ minimum: 0, description: 'default 1' })),
    daemon: Type.Optional(
      Type.Boolean({ description: 'a DaemonSet (a pod on every node) instead of a Deployment' }),
    ),
    annotations: Type.Optional(
      Type.Record(AnyKey(), Type.String(), { description: 'annotations of the pods and the Service' }),
    ),
    volumes: Type.Optional(ContainerVolumes),
    timeout: Type.Optional(
      Type.Number({
        exclusiveMinimum: 0,
        maximum: 86_400,
        description: 'seconds to wait until ready (default 300)',
      }),
    ),
  },
  { additionalProperties: false },
);
export type ContainerDeploySpec = Static<typeof ContainerDeploySpec>;
