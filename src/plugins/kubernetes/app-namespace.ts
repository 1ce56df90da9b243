/**
 * The app namespaces the kubernetes provider refuses: the cluster's own, and the provider's
 * `systemNamespace`. Its `init` refuses them in every command; `tend validate` says so first
 * (the plugin's `checkEnvironment`), with the same words.
 */
import type { CheckEnvironmentParams, EnvironmentProblem } from '../../plugin/types.js';
import { settingsOf, type KubernetesProviderConfig } from './config.js';

/** The cluster's own namespaces: never an environment's app namespace, nor adopted as one. */
const kubernetesSystemNamespaces = ['kube-system', 'kube-public', 'kube-node-lease', 'default'];

/**
 * Why a Deploy may not hold a Namespace of the cluster's own: it does not stand for the
 * environment's namespace (deploy.ts adopts every other), and tend leaves it alone. `undefined`
 * for any other name.
 */
export function clusterNamespaceRefusal(name: unknown, target: string): string | undefined {
  if (typeof name !== 'string' || !kubernetesSystemNamespaces.includes(name)) return undefined;
  return (
    `Namespace ${name} is one of the cluster's own namespaces: tend deploy refuses it, as it deploys only into ` +
    `the environment's namespace ("${target}") and leaves the cluster's alone; remove the Namespace manifest`
  );
}

/**
 * Why the provider refuses the environment's app namespace (the provider's `systemNamespace`, or
 * one of the cluster's own), where it is set; undefined when it does not. `init` refuses it in
 * every command, and `tend validate` says so before one runs (`checkEnvironment`).
 */
export function appNamespaceProblem({
  providerConfig,
  environment,
}: CheckEnvironmentParams): EnvironmentProblem | undefined {
  const config = providerConfig as KubernetesProviderConfig;
  const { appNamespace, systemNamespace } = settingsOf(config, environment.namespace);
  const isSystem = appNamespace === systemNamespace;
  if (!isSystem && !kubernetesSystemNamespaces.includes(appNamespace)) return undefined;
  const configPath =
    config.namespace !== undefined
      ? ['namespace']
      : isSystem && config.systemNamespace
        ? ['systemNamespace']
        : undefined;
  return {
    message:
      `the app namespace "${appNamespace}" of environment ${environment.name} may not be ` +
      `${isSystem ? "the provider's systemNamespace" : 'a Kubernetes system namespace'}; choose another ` +
      // It comes from the environment's defaultNamespace, or from the command line (Garden's
      // `--env <namespace>.<environment>`), or from the provider's namespace: each is said.
      `defaultNamespace for the environment, another <namespace> in \`--env <namespace>.${environment.name}\`, ` +
      `or another namespace for the provider`,
    ...(configPath ? { configPath } : {}),
  };
}
