/**
 * The harnesses of `tend/testing` run tend in the test's own process: a kubeconfig given to them
 * is KUBECONFIG while they run, and the cached cluster connections are dropped before and after,
 * so that nothing of one run reaches the next.
 */
import { resetConnections } from '../plugins/kubernetes/client/index.js';

/** Runs `work` with KUBECONFIG set to `kubeconfig` (when given), then puts the previous value back. */
export async function withKubeconfig<T>(kubeconfig: string | undefined, work: () => Promise<T>): Promise<T> {
  const previous = process.env.KUBECONFIG;
  if (kubeconfig) process.env.KUBECONFIG = kubeconfig;
  resetConnections();
  try {
    return await work();
  } finally {
    if (kubeconfig) {
      if (previous === undefined) delete process.env.KUBECONFIG;
      else process.env.KUBECONFIG = previous;
    }
    resetConnections();
  }
}
