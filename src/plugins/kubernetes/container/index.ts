/**
 * `container` Builds in the cluster. The status of a build is the registry's answer for the tag of
 * the action's version. Two build modes:
 * - `cluster-buildkit`: a builder pod in the app namespace; the context is streamed into it as a
 *   tar archive through exec (`tar -x`), then `buildctl` builds and pushes there.
 * - `kaniko`: one Kaniko pod per build in the system namespace (`role: "system"`), the context
 *   (tar.gz) fed to its stdin through attach.
 * Either way the builder pod is removed afterwards (also on failure, timeout and Ctrl-C), and
 * build output lines become `log` events.
 */
import { createReadStream } from 'node:fs';
import { TendError } from '../../../errors.js';
import type {
  ActionHandlerParams,
  ExecuteResult,
  PluginContext,
  StatusResult,
} from '../../../plugin/types.js';
import { annotations, labels, type KubeClient } from '../client/index.js';
import type { ProviderSettings } from '../config.js';
import type { ContainerBuildSpec } from './spec.js';
import { actionLabel, podName, waitForExit, waitForStart } from '../pods.js';
import { clientFor, settings as settingsOf } from '../provider.js';
import { packContext, type BuildContext } from './context.js';
import { imageFor, isInsecure, manifestDigest, type ImageRef } from './registry.js';

type Params = ActionHandlerParams<ContainerBuildSpec>;

/**
 * `image` and `digest`, and the same image by the names Garden's container Build gives it
 * (`deploymentImageId`, `deployment-image-id`, …), which Garden projects' actions read. tend has no
 * local image: the local names are the registry's repository without its host, with the same tag.
 */
export function buildOutputs(image: ImageRef, digest: string): Record<string, string> {
  const deploymentName = `${image.host}/${image.repository}`;
  const localName = image.repository.slice(image.repository.lastIndexOf('/') + 1);
  const garden = {
    deploymentImageName: deploymentName,
    deploymentImageId: image.full,
    deploymentImageTag: image.tag,
    localImageName: localName,
    localImageId: `${localName}:${image.tag}`,
  };
  const kebab = Object.entries(garden).map(([key, value]) => [
    key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`),
    value,
  ]);
  return { image: image.full, digest, ...garden, ...Object.fromEntries(kebab) };
}

/**
 * The provider's settings, with the registry a local cluster advertises (kind, k3d, minikube:
 * the `local-registry-hosting` ConfigMap) as `deploymentRegistry` when the provider names none:
 * images go to `<host>/<app namespace>/<build name>`.
 */
async function registrySettings(ctx: PluginContext): Promise<ProviderSettings> {
  const settings = settingsOf(ctx);
  if (settings.deploymentRegistry) return settings;
  const host = await (await clientFor(ctx)).localRegistryHost();
  return host ? { ...settings, deploymentRegistry: `${host}/${settings.appNamespace}` } : settings;
}

export async function getStatus(ctx: PluginContext, { action }: Params): Promise<StatusResult> {
  const settings = await registrySettings(ctx);
  const image = imageFor(settings, action.name, action.version);
  const digest = await manifestDigest(settings, image);
  if (!digest) return { state: 'not-ready', detail: { image: image.full } };
  return { state: 'ready', outputs: buildOutputs(image, digest) };
}

interface BuildRun {
  ctx: PluginContext;
  client: KubeClient;
  settings: ProviderSettings;
  params: Params;
  image: ImageRef;
  context: BuildContext;
  deadline: number;
  /** Output lines, the last ones kept for error messages. */
  output(stream: 'stdout' | 'stderr', line: string): void;
  tail(): string;
}

export async function build(ctx: PluginContext, params: Params): Promise<ExecuteResult> {
  const { action } = params;
  const settings = await registrySettings(ctx);
  const image = imageFor(settings, action.name, action.version);
  const kaniko = settings.buildMode === 'kaniko';
  const context = await packContext(action, action.spec.dockerfile ?? 'Dockerfile', ctx.tendDir, kaniko);
  const timeoutMs =
    action.spec.timeout !== undefined ? action.spec.timeout * 1000 : (action.timeoutMs ?? 1_800_000);
  const lines: string[] = [];
  try {
    const run: BuildRun = {
      ctx,
      client: await clientFor(ctx),
      settings,
      params,
      image,
      context,
      deadline: Date.now() + timeoutMs,
      output(stream, line) {
        lines.push(line);
        if (lines.length > 30) lines.shift();
        ctx.log.output(stream, line);
      },
      tail: () => lines.join('\n'),
    };
    ctx.log.info(
      `building ${image.full} (${settings.buildMode}, ${context.files.length} file(s) in the context)`,
    );
    let digest = kaniko ? await buildWithKaniko(run) : await buildWithBuildkit(run);
    digest ??= await manifestDigest(settings, image);
    if (!digest) {
      throw new TendError(
        'TEND_K8S_BUILD_FAILED',
        `${action.ref}: the build finished but ${image.full} is not in the registry`,
        {
          detail: { log: run.tail() },
        },
      );
    }
    return { outputs: buildOutputs(image, digest), detail: { buildMode: settings.buildMode } };
  } finally {
    context.remove();
  }
}

/** Races a step against the build's deadline and Ctrl-C. */
async function bounded<T>(run: BuildRun, what: string, step: Promise<T>): Promise<T> {
  step.catch(() => {});
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  const stop = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new TendError('TEND_K8S_TIMEOUT', `${run.params.action.ref}: ${what} timed out`, {
            detail: { log: run.tail() },
          }),
        ),
      Math.max(0, run.deadline - Date.now()),
    );
    onAbort = () => reject(new TendError('TEND_INTERRUPTED', `${run.params.action.ref}: build interrupted`));
    if (run.ctx.signal.aborted) onAbort();
    else run.ctx.signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    return await Promise.race([step, stop]);
  } finally {
    clearTimeout(timer);
    if (onAbort) run.ctx.signal.removeEventListener('abort', onAbort);
  }
}

function failed(run: BuildRun, message: string): TendError {
  return new TendError('TEND_K8S_BUILD_FAILED', `${run.params.action.ref}: ${message}`, {
    actionRef: run.params.action.ref,
    detail: { image: run.image.full, log: run.tail() },
  });
}

function builderMetadata(run: BuildRun, name: string, component: string) {
  return {
    name,
    labels: {
      [labels.managedBy]: 'tend',
      [labels.action]: actionLabel(run.params.action.ref),
      'tend.dev/component': component,
    },
    annotations: {
      [annotations.version]: run.params.action.version,
      [annotations.project]: run.ctx.environment.project,
      [annotations.environment]: run.ctx.environment.name,
    },
  };
}

async function buildWithBuildkit(run: BuildRun): Promise<string | undefined> {
  const { client, settings, params, image, context } = run;
  const namespace = settings.appNamespace;
  await client.namespaces.ensure(namespace);
  const name = podName('tend-buildkit', params.action.name);
  const spec = params.action.spec;
  await client.pods.create(namespace, {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: builderMetadata(run, name, 'builder'),
    spec: {
      restartPolicy: 'Never',
      containers: [
        {
          name: 'buildkit',
          image: settings.buildkitImage,
          command: ['sleep', 'infinity'],
          securityContext: { privileged: true },
        },
      ],
    },
  });
  try {
    const wait = {
      deadline: run.deadline,
      signal: run.ctx.signal,
      what: `builder pod for ${params.action.ref}`,
    };
    await waitForStart(client, namespace, name, wait);
    const dir = '/workspace/context';
    const untar = await bounded(
      run,
      'uploading the build context',
      client.pods.exec(
        namespace,
        name,
        'buildkit',
        ['sh', '-c', `mkdir -p ${dir} && tar -x -f - -C ${dir}`],
        {
          stdin: () => createReadStream(context.file),
          onStdout: (l) => run.output('stdout', l),
          onStderr: (l) => run.output('stderr', l),
        },
        true,
      ),
    );
    if (untar !== 0) throw failed(run, `uploading the build context failed (tar exit code ${untar})`);
    const output = `type=image,name=${image.full},push=true${isInsecure(settings, image.host) ? ',registry.insecure=true' : ''}`;
    const command = [
      'buildctl-daemonless.sh',
      'build',
      '--frontend',
      'dockerfile.v0',
      '--local',
      `context=${dir}`,
      '--local',
      `dockerfile=${dir}`,
      '--opt',
      `filename=${context.dockerfile}`,
      ...Object.entries(spec.buildArgs ?? {}).flatMap(([k, v]) => ['--opt', `build-arg:${k}=${v}`]),
      ...(spec.targetStage ? ['--opt', `target=${spec.targetStage}`] : []),
      '--output',
      output,
      '--metadata-file',
      '/workspace/metadata.json',
      '--progress',
      'plain',
      // Last, as Garden appends them: the user's flags are buildctl's to accept or refuse.
      ...(spec.extraFlags ?? []),
    ];
    const code = await bounded(
      run,
      'the build',
      client.pods.exec(
        namespace,
        name,
        'buildkit',
        command,
        { onStdout: (l) => run.output('stdout', l), onStderr: (l) => run.output('stderr', l) },
        true,
      ),
    );
    if (code !== 0) throw failed(run, `the image build failed (buildctl exit code ${code})`);
    let metadata = '';
    await client.pods.exec(
      namespace,
      name,
      'buildkit',
      ['cat', '/workspace/metadata.json'],
      {
        onStdout: (l) => (metadata += l),
      },
      true,
    );
    try {
      const digest = (JSON.parse(metadata) as Record<string, unknown>)['containerimage.digest'];
      return typeof digest === 'string' ? digest : undefined;
    } catch {
      return undefined;
    }
  } finally {
    await removeBuilder(run, namespace, name);
  }
}

async function buildWithKaniko(run: BuildRun): Promise<string | undefined> {
  const { client, settings, params, image, context } = run;
  const namespace = settings.systemNamespace;
  await client.namespaces.ensure(namespace);
  const name = podName('tend-kaniko', params.action.name);
  const spec = params.action.spec;
  const args = [
    '--context=tar://stdin',
    `--dockerfile=${context.dockerfile}`,
    `--destination=${image.full}`,
    ...Object.entries(spec.buildArgs ?? {}).map(([k, v]) => `--build-arg=${k}=${v}`),
    ...(spec.targetStage ? [`--target=${spec.targetStage}`] : []),
    ...(isInsecure(settings, image.host) ? ['--insecure'] : []),
    '--digest-file=/dev/termination-log',
    ...(spec.extraFlags ?? []),
  ];
  await client.pods.create(namespace, {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: builderMetadata(run, name, 'kaniko'),
    spec: {
      restartPolicy: 'Never',
      containers: [{ name: 'kaniko', image: settings.kanikoImage, args, stdin: true, stdinOnce: true }],
    },
  });
  try {
    const wait = {
      deadline: run.deadline,
      signal: run.ctx.signal,
      what: `Kaniko pod for ${params.action.ref}`,
    };
    await waitForStart(client, namespace, name, wait);
    await bounded(
      run,
      'the build',
      client.pods.attach(namespace, name, 'kaniko', {
        stdin: () => createReadStream(context.file),
        onStdout: (l) => run.output('stdout', l),
        onStderr: (l) => run.output('stderr', l),
      }),
    );
    const { exitCode, pod } = await waitForExit(client, namespace, name, 'kaniko', wait);
    if (exitCode !== 0) throw failed(run, `the image build failed (Kaniko exit code ${exitCode})`);
    const message = pod.status?.containerStatuses?.[0]?.state?.terminated?.message?.trim();
    return message?.startsWith('sha256:') ? message : undefined;
  } finally {
    await removeBuilder(run, namespace, name);
  }
}

async function removeBuilder(run: BuildRun, namespace: string, name: string): Promise<void> {
  await run.client.pods.remove(namespace, name).catch((error: unknown) => {
    run.ctx.log.warn(`could not remove builder pod ${name} in ${namespace}: ${(error as Error).message}`);
  });
}
