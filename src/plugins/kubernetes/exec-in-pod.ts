/**
 * Test/Run (`kubernetes-exec`): the command run in a running pod of a workload (`resource`), as
 * `kubectl exec` runs it, its output as `log` events; the result has the exit code. Successful
 * results are kept per version like a kubernetes-pod's (run.ts `getResult`).
 */
import { TendError } from '../../errors.js';
import { writeResult } from '../../plugin/results.js';
import type { ActionHandlerParams, PluginContext, RunResult } from '../../plugin/types.js';
import type { KubernetesExecSpec } from './config.js';
import { clientFor } from './provider.js';
import { outputTail } from './pods.js';
import { runningPod } from './workload-pods.js';
import { monotonicMs } from '../../monotonic.js';
import { assertNamespaceKey } from './namespace-key.js';

export async function run(
  ctx: PluginContext,
  { action }: ActionHandlerParams<KubernetesExecSpec>,
): Promise<RunResult> {
  const client = await clientFor(ctx);
  const namespace = client.settings.appNamespace;
  assertNamespaceKey(action, namespace);
  const spec = action.spec;
  const timeoutMs = spec.timeout !== undefined ? spec.timeout * 1000 : (action.timeoutMs ?? 600_000);
  const { pod, container } = await runningPod(client, namespace, action, spec.resource);
  const tail = outputTail(ctx);
  const onLine = tail.onLine;
  const started = monotonicMs();
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new TendError(
            'TEND_K8S_TIMEOUT',
            `${action.ref}: \`${spec.command.join(' ')}\` in pod ${pod} did not finish in ${timeoutMs} ms`,
            { actionRef: action.ref, detail: { namespace, pod, log: tail.text() } },
          ),
        ),
      timeoutMs,
    );
  });
  let exitCode: number;
  try {
    exitCode = await Promise.race([
      client.pods.exec(namespace, pod, container, spec.command, {
        onStdout: onLine('stdout'),
        onStderr: onLine('stderr'),
      }),
      timedOut,
    ]);
  } finally {
    clearTimeout(timer);
  }
  if (exitCode === 0) {
    writeResult(ctx.tendDir, namespace, action.ref, {
      version: action.version,
      outputs: {},
      completedAt: new Date().toISOString(),
      exitCode: 0,
    });
  }
  return {
    outputs: {},
    exitCode,
    durationMs: Math.round(monotonicMs() - started),
    log: tail.text(),
    detail: { pod, container, namespace },
  };
}
