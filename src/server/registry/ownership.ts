/**
 * Projects are isolated (docs/server.md#projects-are-isolated): a session belongs to the project
 * of the first event that names it — the event's `project`, or, for an event without one, the
 * project the sending token is bound to — and to no other, ever. An event that names a session
 * of another project is refused with 403 and the batch changes nothing: another project's token
 * cannot end that session, move its environment's activity, or take the session over.
 */
import { eventCatalog, eventTypes, type TendEvent } from '../../events/catalog.js';
import { isPluginEventType } from '../../events/plugin-types.js';
import { TendError } from '../../errors.js';
import type { StoredSession } from '../db/repositories/registry.js';

/** The core types whose payload names a project (the others' payloads need not be read); plugins' types all may. */
const typesWithProject: ReadonlySet<string> = new Set(
  eventTypes.filter((t) => Object.hasOwn(eventCatalog[t].properties, 'project')),
);

/** The project an event speaks for: its payload's, else its token's (null: any). */
function claimedProject(event: TendEvent, tokenProject: string | null): string | null {
  if (!typesWithProject.has(event.type) && !isPluginEventType(event.type)) return tokenProject;
  const project = (event.payload as { project?: unknown }).project;
  return typeof project === 'string' ? project : tokenProject;
}

/**
 * The owner of every session the batch names (stored owners first, then the first claim in
 * batch order), or a 403 naming the first event that names a session of another project.
 * `indexOf` gives an event's index in the request, for the message.
 */
export function sessionOwners(
  events: readonly TendEvent[],
  stored: readonly StoredSession[],
  tokenProject: string | null,
  indexOf: (event: TendEvent) => number,
): Map<string, string> {
  const owners = new Map<string, string>();
  for (const s of stored) if (s.project !== null) owners.set(s.id, s.project);
  for (const e of events) {
    const claim = claimedProject(e, tokenProject);
    if (claim === null) continue;
    const owner = owners.get(e.sessionId);
    if (owner === undefined) {
      owners.set(e.sessionId, claim);
    } else if (owner !== claim) {
      // The owner's name is not said: the sender may be another project's token.
      throw new TendError(
        'TEND_AUTH_FORBIDDEN',
        `events[${indexOf(e)}]: session ${e.sessionId} belongs to another project than "${claim}"; an event of one project cannot name a session of another`,
        { detail: { index: indexOf(e), sessionId: e.sessionId } },
      );
    }
  }
  return owners;
}
