/**
 * Test/Run (`kubernetes-pod`): a pod with the image, command, args and env of the spec, in the app
 * namespace. Its log becomes `log` events; the result has the exit code and duration; a timeout
 * or Ctrl-C stops it; the pod is removed afterwards in every case. Successful results are cached
 * per version (like exec), so a Test already passed for its version is not run again.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { TendError } from '../../errors.js';
import { readResult, writeResult } from '../../plugin/results.js';
import type { ActionHandlerParams, PluginContext, RunResult, StatusResult } from '../../plugin/types.js';
import { labels } from './client/index.js';
import type { KubernetesPodSpec } from './config.js';
import { actionLabel, podName, waitForExit, waitForStart } from './pods.js';
import { clientFor } from './provider.js';

const tailLines = 20;

export async function getResult(
  ctx: PluginContext,
  { action }: ActionHandlerParams<KubernetesPodSpec>,
): Promise<StatusResult> {
  const client = await clientFor(ctx);
  const namespace = client.settings.appNamespace;
  const info = await client.namespaces.observe(namespace);
  // Results of a namespace that is gone (or re-created since) say nothing about this one.
  if (info?.state !== 'ready') return { state: 'not-ready' };
  const stored = readResult(ctx.tendDir, namespace, action.ref);
  if (stored?.version === action.version && (stored.exitCode ?? 0) === 0) {
    return { state: 'ready', outputs: stored.outputs };
  }
  return { state: 'not-ready' };
}

export async function run(
  ctx: PluginContext,
  { action }: ActionHandlerParams<KubernetesPodSpec>,
): Promise<RunResult> {
  const client = await clientFor(ctx);
  const namespace = client.settings.appNamespace;
  const spec = action.spec;
  const timeoutMs = spec.timeout !== undefined ? spec.timeout * 1000 : (action.timeoutMs ?? 600_000);
  await client.namespaces.ensure(namespace);
  const name = podName(action.kind.toLowerCase(), action.name);
  const what = `${action.kind.toLowerCase()} pod for ${action.ref}`;
  const started = performance.now();
  const deadline = Date.now() + timeoutMs;
  const tail: string[] = [];
  const onLine = (line: string) => {
    tail.push(line);
    if (tail.length > tailLines) tail.shift();
    ctx.log.output('stdout', line);
  };
  const env = Object.entries({
    TEND_PROJECT: ctx.environment.project,
    TEND_ENVIRONMENT: ctx.environment.name,
    TEND_NAMESPACE: namespace,
    TEND_ACTION: action.ref,
    TEND_ACTION_VERSION: action.version,
    ...spec.env,
  }).map(([key, value]) => ({ name: key, value }));
  await client.pods.create(namespace, {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      labels: { [labels.managedBy]: 'tend', [labels.action]: actionLabel(action.ref) },
      annotations: { 'tend.dev/version': action.version },
    },
    spec: {
      restartPolicy: 'Never',
      containers: [
        {
          name: 'main',
          image: spec.image,
          ...(spec.command ? { command: spec.command } : {}),
          ...(spec.args ? { args: spec.args } : {}),
          ...(spec.workingDir ? { workingDir: spec.workingDir } : {}),
          env,
        },
      ],
    },
  });
  try {
    const wait = { deadline, signal: ctx.signal, what };
    const interrupted = () =>
      new TendError('TEND_INTERRUPTED', `${what} was stopped (interrupted); pod ${name} removed`);
    await waitForStart(client, namespace, name, wait).catch((error: unknown) => {
      throw ctx.signal.aborted ? interrupted() : error;
    });
    let logs: Awaited<ReturnType<typeof client.pods.streamLog>> | undefined;
    try {
      logs = await client.pods.streamLog(namespace, name, 'main', onLine);
    } catch (error) {
      ctx.log.debug(`could not follow the log of ${name}: ${(error as Error).message}`);
    }
    let exitCode: number;
    try {
      ({ exitCode } = await waitForExit(client, namespace, name, 'main', wait));
    } catch (error) {
      logs?.stop();
      if (ctx.signal.aborted) throw interrupted();
      if (error instanceof TendError && error.code === 'TEND_K8S_TIMEOUT') {
        throw new TendError(
          'TEND_K8S_TIMEOUT',
          `${what} timed out after ${timeoutMs} ms; pod ${name} removed`,
          {
            detail: { log: tail.join('\n') },
          },
        );
      }
      throw error;
    }
    // The log stream ends with the container; give it a moment to deliver its last lines. The
    // moment's timer goes with it: left armed, it held the process 5 s after its summary.
    if (logs) {
      const grace = new AbortController();
      await Promise.race([logs.done, delay(5000, undefined, { signal: grace.signal }).catch(() => {})]);
      grace.abort();
      logs.stop();
    }
    const durationMs = Math.round(performance.now() - started);
    if (exitCode === 0) {
      writeResult(ctx.tendDir, namespace, action.ref, {
        version: action.version,
        outputs: {},
        completedAt: new Date().toISOString(),
        exitCode: 0,
      });
    }
    return { outputs: {}, exitCode, durationMs, log: tail.join('\n'), detail: { pod: name, namespace } };
  } finally {
    await client.pods.remove(namespace, name).catch((error: unknown) => {
      ctx.log.warn(`could not remove pod ${name} in ${namespace}: ${(error as Error).message}`);
    });
  }
}
