/**
 * Coalescing of repeated `namespaceStatus` events within a session (docs/design.md#events): an
 * event is a duplicate only when it says the same (target, namespace, uid, state, role, cause,
 * detail) as the *latest* admitted event for that namespace on that target — never an older one,
 * so `missing → ready → missing` records the deletion, and a change in `detail` alone passes.
 */
import type { NamespaceStatusPayload } from './catalog.js';
import { targetKey } from '../cleanup/targets.js';
import { stableStringify } from '../stable-json.js';

/** What makes two events for the same namespace say the same thing (emitter metadata aside). */
function fingerprint(payload: NamespaceStatusPayload): string {
  const detail = payload.detail === undefined ? '' : stableStringify(payload.detail);
  return `${payload.namespaceUid ?? ''}\0${payload.state}\0${payload.role}\0${payload.cause}\0${detail}`;
}

export class NamespaceStatusDedupe {
  /** The fingerprint of the latest admitted event, per target and namespace. */
  private readonly latest = new Map<string, string>();

  /** True when the event should pass; it then becomes the latest for its namespace. */
  admit(payload: NamespaceStatusPayload): boolean {
    const key = `${targetKey(payload.target)}\0${payload.namespaceName}`;
    const print = fingerprint(payload);
    if (this.latest.get(key) === print) return false;
    this.latest.set(key, print);
    return true;
  }
}

/** Payload fields that say who emitted an event, not what it says: left out of what is compared. */
const emitterFields = new Set(['pluginName', 'providerName', 'handler', 'actionRef']);

/**
 * Coalescing of a plugin's own event types by their declared `dedupeKey`, the same rule as
 * namespaceStatus: a duplicate only of the latest admitted event with the same key values.
 */
export class PluginEventDedupe {
  private readonly latest = new Map<string, string>();

  admit(type: string, payload: Record<string, unknown>, dedupeKey: readonly string[]): boolean {
    const key = `${type}\0${stableStringify(dedupeKey.map((field) => payload[field] ?? null))}`;
    const said: Record<string, unknown> = {};
    for (const field of Object.keys(payload)) if (!emitterFields.has(field)) said[field] = payload[field];
    const print = stableStringify(said);
    if (this.latest.get(key) === print) return false;
    this.latest.set(key, print);
    return true;
  }
}
