/**
 * `resourceStatus` is `namespaceStatus` in the words of a plugin whose environments are not
 * namespaces. Everything that records or acts on status events reads both through here, so the
 * two can never be recorded differently.
 */
import type { NamespaceStatusPayload, ResourceStatusPayload, TendEvent } from './catalog.js';

/** A resourceStatus payload in the fields the registry keys on. */
export function namespaceStatusOf(payload: ResourceStatusPayload): NamespaceStatusPayload {
  const { resourceName, resourceUid, ...rest } = payload;
  return {
    ...rest,
    namespaceName: resourceName,
    ...(resourceUid === undefined ? {} : { namespaceUid: resourceUid }),
  };
}

/** The event as the status report it records (a resourceStatus read as its namespaceStatus), or undefined for any other type. */
export function statusReportOf(event: TendEvent): TendEvent<'namespaceStatus'> | undefined {
  if (event.type === 'namespaceStatus') return event;
  if (event.type !== 'resourceStatus') return undefined;
  return { ...event, type: 'namespaceStatus', payload: namespaceStatusOf(event.payload) };
}

/** Whether an event is a status report of either name. */
export function isStatusReport(type: string): type is 'namespaceStatus' | 'resourceStatus' {
  return type === 'namespaceStatus' || type === 'resourceStatus';
}
