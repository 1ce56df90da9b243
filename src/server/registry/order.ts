/**
 * The order of a record's changes (docs/events.md#the-order-of-events): whether an event came
 * before the last one applied to a record, by the host sequence both carry. Numbers of different
 * counters, and events or records without one (older clients, rows written before), are not
 * comparable: then arrival order decides, as it always did.
 */
import type { EventSequence } from '../../events/catalog.js';

/** A record's last applied sequence as its two columns hold it. */
export interface RecordedSequence {
  counter: string | null;
  number: number | null;
}

/** True when `event` was taken before `recorded` on the same host's counter: it must not undo it. */
export function takenBefore(event: EventSequence | undefined, recorded: RecordedSequence): boolean {
  return (
    event !== undefined &&
    recorded.counter === event.counter &&
    recorded.number !== null &&
    event.number < recorded.number
  );
}
