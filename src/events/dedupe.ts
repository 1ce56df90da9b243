/**
 * Coalescing of repeated `namespaceStatus` events within a session (docs/design.md#events): the same
 * (plugin, target, namespace, uid, state) passes once; a change of state always passes.
 */
import type { NamespaceStatusPayload, Target } from './catalog.js';

export function targetKey(target: Target): string {
  return target.kind === 'kubernetes' ? `k8s:${target.clusterId}` : `local:${target.hostId}:${target.path}`;
}

export class NamespaceStatusDedupe {
  private readonly lastState = new Map<string, string>();

  /** True when the event should pass; records its state. */
  admit(payload: NamespaceStatusPayload): boolean {
    const key = `${payload.pluginName}\0${targetKey(payload.target)}\0${payload.namespaceName}\0${payload.namespaceUid ?? ''}`;
    if (this.lastState.get(key) === payload.state) return false;
    this.lastState.set(key, payload.state);
    return true;
  }
}
