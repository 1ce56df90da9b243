/**
 * Garden's `namespace` key of a kubernetes or helm Deploy and of a kubernetes-pod, helm-pod or
 * kubernetes-exec Test or Run (a 0.12 kubernetes or helm module's, which its Deploy, tasks and tests
 * inherit): Garden deploys or runs the action in that namespace. tend deploys and runs every action
 * in the environment's namespace, which it records and cleans up, so the key may name only that
 * one — its common use, `namespace: ${environment.namespace}`. `tend validate` notes another at its
 * line; the deploy or run refuses it as resolved.
 */
import type { ActionWarning, CheckActionParams, ResolvedAction } from '../../plugin/types.js';
import { settingsOf, type KubernetesProviderConfig } from './config.js';
import { invalid } from './manifests.js';

/** Why the key cannot name `named`: validate and the deploy or run say it. */
function refusal(named: string, target: string): string {
  return (
    `namespace ${JSON.stringify(named)}: tend deploys and runs in the environment's namespace ("${target}"), ` +
    'which it records and cleans up; remove the key (without it, the action goes there)'
  );
}

/** The key as `tend validate` reads it: a template expression is the deploy's or run's to check. */
export function namespaceKeyProblems(named: string | undefined, target: string): ActionWarning[] {
  if (named === undefined || named === target || named.includes('${')) return [];
  return [{ specPath: ['namespace'], message: refusal(named, target) }];
}

/** The namespace tend deploys and runs an action in: the app namespace of its provider. */
export function appNamespaceOf(params: CheckActionParams): string {
  return settingsOf(params.providerConfig as KubernetesProviderConfig, params.environment.namespace)
    .appNamespace;
}

/** `checkAction` of the types whose only check is the key. */
export async function checkNamespaceKey(params: CheckActionParams): Promise<ActionWarning[]> {
  return namespaceKeyProblems((params.spec as { namespace?: string }).namespace, appNamespaceOf(params));
}

/** Refuses a resolved action whose key names another namespace than `target`. */
export function assertNamespaceKey(action: ResolvedAction<{ namespace?: string }>, target: string): void {
  const named = action.spec.namespace;
  if (named !== undefined && named !== target) throw invalid(action, refusal(named, target));
}
