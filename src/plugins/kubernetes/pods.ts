/**
 * Pods that run to completion or serve as builders: unique names, waiting (bounded, interruptible)
 * for them to start and to finish, failing fast on images that cannot be pulled, and the reasons a
 * pod is not doing what it should (for error messages).
 */
import { randomBytes } from 'node:crypto';
import { sha256Hex } from '../../hash.js';
import { setTimeout as delay } from 'node:timers/promises';
import { TendError } from '../../errors.js';
import type { PluginContext } from '../../plugin/types.js';
import type { KubeClient, V1Pod } from './client/index.js';

/** A DNS-1123 label: `<prefix>-<name>-<random>`, at most 63 characters. */
export function podName(prefix: string, name: string): string {
  const suffix = randomBytes(3).toString('hex');
  const base = `${prefix}-${name}`
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/^-+/, '')
    .slice(0, 63 - suffix.length - 1)
    .replace(/-+$/, '');
  return `${base}-${suffix}`;
}

/** A label value for an action reference (`deploy.api`), within the 63-character limit. */
export function actionLabel(ref: string): string {
  return ref.length <= 63 ? ref : `${ref.slice(0, 50)}-${sha256Hex(ref).slice(0, 12)}`;
}

const pullFailures = new Set([
  'ErrImagePull',
  'ImagePullBackOff',
  'InvalidImageName',
  'ErrImageNeverPull',
  'CreateContainerConfigError',
  'CreateContainerError',
]);

/** Why a pod cannot start, if one of its containers is stuck for good (image pull, bad config). */
export function startFailure(pod: V1Pod): string | undefined {
  for (const status of pod.status?.containerStatuses ?? []) {
    const waiting = status.state?.waiting;
    if (waiting?.reason && pullFailures.has(waiting.reason)) {
      return `container ${status.name} (image ${status.image}): ${waiting.reason}${waiting.message ? `: ${waiting.message}` : ''}`;
    }
  }
  return undefined;
}

/** A one-line account of a pod: phase and each container's state. */
export function describePod(pod: V1Pod): string {
  const containers = (pod.status?.containerStatuses ?? []).map((s) => {
    const st = s.state;
    if (st?.waiting)
      return `${s.name} waiting (${st.waiting.reason ?? 'unknown'}${st.waiting.message ? `: ${st.waiting.message}` : ''})`;
    if (st?.terminated)
      return `${s.name} terminated (exit code ${st.terminated.exitCode}, ${st.terminated.reason ?? ''})`;
    if (st?.running) return `${s.name} running${s.ready ? '' : ', not ready'}`;
    return `${s.name} unknown`;
  });
  return `pod ${pod.metadata?.name}: phase ${pod.status?.phase ?? 'Unknown'}${containers.length ? `; ${containers.join('; ')}` : ''}`;
}

export interface WaitOptions {
  deadline: number;
  signal: AbortSignal;
  /** What is being waited for, for messages: `test pod for test.api-integ`. */
  what: string;
}

async function poll(interval: number, signal: AbortSignal, what: string): Promise<number> {
  if (signal.aborted) throw new TendError('TEND_INTERRUPTED', `interrupted while waiting for ${what}`);
  await delay(interval);
  return Math.min(1000, Math.round(interval * 1.5));
}

/** Waits until the pod runs (or already finished); fails fast when it cannot start. */
export async function waitForStart(
  client: KubeClient,
  namespace: string,
  name: string,
  options: WaitOptions,
): Promise<V1Pod> {
  let interval = 50;
  for (;;) {
    const pod = await client.pods.read(namespace, name);
    if (!pod) throw new TendError('TEND_K8S_POD_FAILED', `${options.what}: pod ${name} disappeared`);
    const phase = pod.status?.phase;
    if (phase === 'Running' || phase === 'Succeeded' || phase === 'Failed') return pod;
    const failure = startFailure(pod);
    if (failure) {
      throw new TendError('TEND_K8S_POD_FAILED', `${options.what}: pod ${name} cannot start: ${failure}`, {
        detail: { namespace, pod: name },
      });
    }
    if (Date.now() > options.deadline) {
      throw new TendError(
        'TEND_K8S_TIMEOUT',
        `${options.what}: pod ${name} did not start in time; ${describePod(pod)}`,
        {
          detail: { namespace, pod: name },
        },
      );
    }
    interval = await poll(interval, options.signal, options.what);
  }
}

/** Waits until the named container terminated; returns its exit code. */
export async function waitForExit(
  client: KubeClient,
  namespace: string,
  name: string,
  container: string,
  options: WaitOptions,
): Promise<{ exitCode: number; pod: V1Pod }> {
  let interval = 50;
  for (;;) {
    const pod = await client.pods.read(namespace, name);
    if (!pod) throw new TendError('TEND_K8S_POD_FAILED', `${options.what}: pod ${name} disappeared`);
    const status = pod.status?.containerStatuses?.find((s) => s.name === container);
    const terminated = status?.state?.terminated;
    if (terminated) return { exitCode: terminated.exitCode, pod };
    const phase = pod.status?.phase;
    if (phase === 'Succeeded') return { exitCode: 0, pod };
    if (phase === 'Failed') return { exitCode: status?.lastState?.terminated?.exitCode ?? 1, pod };
    const failure = startFailure(pod);
    if (failure) throw new TendError('TEND_K8S_POD_FAILED', `${options.what}: ${failure}`);
    if (Date.now() > options.deadline) {
      throw new TendError('TEND_K8S_TIMEOUT', `${options.what}: timed out; ${describePod(pod)}`, {
        detail: { namespace, pod: name },
      });
    }
    interval = await poll(interval, options.signal, options.what);
  }
}

/**
 * A pod's output as it comes: each line a `log` event, the last 20 kept for the result's `log`
 * and for errors.
 */
export function outputTail(ctx: PluginContext): {
  onLine: (stream: 'stdout' | 'stderr') => (line: string) => void;
  text: () => string;
} {
  const lines: string[] = [];
  return {
    onLine: (stream) => (line) => {
      lines.push(line);
      if (lines.length > 20) lines.shift();
      ctx.log.output(stream, line);
    },
    text: () => lines.join('\n'),
  };
}
