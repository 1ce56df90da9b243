/**
 * The event catalogue (docs/design.md#events): every event type tend emits, with its payload schema.
 * These schemas are the boundary: the router validates plugin payloads against them,
 * the server validates ingested batches against them, and docs/events.md describes them.
 */
import { Type, type Static, type TSchema } from 'typebox';
import { Format } from 'typebox/format';
import { CleanupPolicy } from '../cleanup/policy.js';
import { Target } from '../cleanup/targets.js';
import { AnyKey, schemaCheck, schemaProblems, type SchemaProblem } from '../schema-check.js';
import {
  checkPluginEvent,
  pluginEventType,
  pluginEventTypePattern,
  type PluginEventPayload,
  type PluginEventType,
} from './plugin-types.js';

const dateTimePattern = /^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(\.\d+)?(Z|[+-](\d\d):(\d\d))$/;

/**
 * An RFC 3339 timestamp as Date.prototype.toISOString() writes it (with or without milliseconds,
 * `Z` or an offset) that names a real moment: `2026-13-45T99:99:99Z` has the shape but is not one.
 */
export function isDateTime(value: string): boolean {
  const m = dateTimePattern.exec(value);
  if (!m) return false;
  // Checked on every event a server ingests: numbers without an array of them.
  const year = Number(m[1]);
  const month = Number(m[2]);
  const day = Number(m[3]);
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  const daysInMonth =
    month === 2 ? (leap ? 29 : 28) : month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
  return (
    month >= 1 &&
    month <= 12 &&
    day >= 1 &&
    day <= daysInMonth &&
    Number(m[4]) <= 23 &&
    Number(m[5]) <= 59 &&
    Number(m[6]) <= 59 &&
    (m[9] === undefined || (Number(m[9]) <= 23 && Number(m[10]) <= 59))
  );
}

// TypeBox's own date-time takes what RFC 3339 allows; events must also name a real calendar day.
Format.Set('date-time', isDateTime);

/**
 * Free-form `detail`: keys of at most 256 characters. Constraints on keys go in `propertyNames`:
 * TypeBox turns a Record's key schema into `patternProperties`, which leaves other keys allowed.
 */
const DetailRecord = Type.Record(AnyKey(), Type.Unknown(), { propertyNames: { maxLength: 256 } });

const Name = Type.String({ minLength: 1, maxLength: 253 });
const ShortText = Type.String({ maxLength: 1024 });
const LongText = Type.String({ maxLength: 65_536 });

export { Target } from '../cleanup/targets.js';

/** Metadata the router adds to every event a plugin emits (who emitted it, from which call). */
const EmitterMetadata = {
  pluginName: Type.Optional(Name),
  providerName: Type.Optional(Name),
  actionRef: Type.Optional(Name),
  handler: Type.Optional(Name),
};

export const NamespaceState = Type.Union([
  Type.Literal('ready'),
  Type.Literal('terminating'),
  Type.Literal('missing'),
]);
export type NamespaceState = Static<typeof NamespaceState>;

export const NamespaceRole = Type.Union([Type.Literal('app'), Type.Literal('build'), Type.Literal('system')]);
export type NamespaceRole = Static<typeof NamespaceRole>;

/** What a status report says of its resource, beside the resource's name and identity. */
const statusReportFields = {
  state: NamespaceState,
  role: NamespaceRole,
  cause: Type.Union([Type.Literal('created'), Type.Literal('observed'), Type.Literal('deleted')]),
  target: Target,
  project: Name,
  environment: Name,
  actionRef: Type.Optional(Name),
  handler: Type.Optional(Name),
  /** Plugin-specific extra, free-form (ownership proof, adoption, fallbacks). */
  detail: Type.Optional(DetailRecord),
};

export const NamespaceStatusPayload = Type.Object(
  {
    pluginName: Name,
    providerName: Name,
    namespaceName: Name,
    namespaceUid: Type.Optional(Name),
    ...statusReportFields,
  },
  { additionalProperties: false },
);
export type NamespaceStatusPayload = Static<typeof NamespaceStatusPayload>;

/**
 * `namespaceStatus` in the words of any plugin: the environment's resource in its target (a
 * bucket, a directory). Recorded exactly as a namespaceStatus is (events/resource-status.ts);
 * Kubernetes keeps namespaceStatus.
 */
export const ResourceStatusPayload = Type.Object(
  {
    pluginName: Name,
    providerName: Name,
    resourceName: Name,
    resourceUid: Type.Optional(Name),
    ...statusReportFields,
  },
  { additionalProperties: false },
);
export type ResourceStatusPayload = Static<typeof ResourceStatusPayload>;

/** `owner/name` of a GitHub repository. */
export const repositoryPattern = '^[A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100}$';

/** The pull request an environment is for (`environments[].pullRequest`). */
export const PullRequestRef = Type.Object(
  {
    repository: Type.String({ pattern: repositoryPattern, maxLength: 201 }),
    number: Type.Integer({ minimum: 1, maximum: 2_147_483_647 }),
  },
  { additionalProperties: false },
);
export type PullRequestRef = Static<typeof PullRequestRef>;

export const SessionStartedPayload = Type.Object(
  {
    command: Name,
    args: Type.Array(ShortText, { maxItems: 256 }),
    project: Name,
    environment: Name,
    namespace: Name,
    user: Name,
    hostId: Name,
    cliVersion: Type.String({ maxLength: 64 }),
    cleanupPolicy: Type.Optional(CleanupPolicy),
    /** Added later: older servers' schemas never saw it, older clients never send it. */
    pullRequest: Type.Optional(PullRequestRef),
  },
  { additionalProperties: false },
);
export type SessionStartedPayload = Static<typeof SessionStartedPayload>;

const ErrorSummary = Type.Object(
  { code: Type.String({ maxLength: 128 }), message: LongText },
  { additionalProperties: false },
);

export const SessionCompletedPayload = Type.Object(
  {
    durationMs: Type.Number({ minimum: 0 }),
    succeeded: Type.Integer({ minimum: 0 }),
    cached: Type.Integer({ minimum: 0 }),
    failed: Type.Integer({ minimum: 0 }),
    aborted: Type.Integer({ minimum: 0 }),
  },
  { additionalProperties: false },
);
export type SessionCompletedPayload = Static<typeof SessionCompletedPayload>;

export const SessionFailedPayload = Type.Object(
  { durationMs: Type.Number({ minimum: 0 }), error: ErrorSummary },
  { additionalProperties: false },
);
export type SessionFailedPayload = Static<typeof SessionFailedPayload>;

/**
 * Whether a `sessionFailed` says the command was stopped (Ctrl-C or SIGTERM: `TEND_INTERRUPTED`)
 * rather than failed: `tend events` and the server show such a session as `stopped`. The event
 * stays a `sessionFailed`, so that servers and clients of every version read it.
 */
export function sessionStopped(payload: SessionFailedPayload): boolean {
  return payload.error.code === 'TEND_INTERRUPTED';
}

/**
 * The commands (a sessionStarted's `command`) whose sessions change nothing: their handlers are
 * the read-only ones (`getEnvironmentStatus`, `getStatus`, `getResult`, `getLogs`). The server
 * does not count them as activity (unless the policy's `readOnlyIsActivity` says so), and `tend
 * events latest` passes over them, so that it shows the last command that did something.
 */
export const readOnlyCommands: ReadonlySet<string> = new Set(['status', 'logs']);

export const SessionHeartbeatPayload = Type.Object(
  {
    project: Name,
    environment: Name,
    namespace: Name,
    uptimeMs: Type.Number({ minimum: 0 }),
  },
  { additionalProperties: false },
);
export type SessionHeartbeatPayload = Static<typeof SessionHeartbeatPayload>;

export const ActionState = Type.Union([
  Type.Literal('getting-status'),
  Type.Literal('cached'),
  Type.Literal('processing'),
  Type.Literal('ready'),
  Type.Literal('failed'),
  Type.Literal('aborted'),
]);
export type ActionState = Static<typeof ActionState>;

export const ActionStatusPayload = Type.Object(
  {
    actionRef: Name,
    kind: Type.Union([
      Type.Literal('Build'),
      Type.Literal('Deploy'),
      Type.Literal('Test'),
      Type.Literal('Run'),
    ]),
    version: Type.String({ minLength: 1, maxLength: 128 }),
    state: ActionState,
    durationMs: Type.Optional(Type.Number({ minimum: 0 })),
    error: Type.Optional(ErrorSummary),
  },
  { additionalProperties: false },
);
export type ActionStatusPayload = Static<typeof ActionStatusPayload>;

export const LogPayload = Type.Object(
  {
    level: Type.Union([
      Type.Literal('debug'),
      Type.Literal('info'),
      Type.Literal('warn'),
      Type.Literal('error'),
    ]),
    message: LongText,
    stream: Type.Optional(Type.Union([Type.Literal('stdout'), Type.Literal('stderr')])),
    ...EmitterMetadata,
  },
  { additionalProperties: false },
);
export type LogPayload = Static<typeof LogPayload>;

/** Every event type and its payload schema. The keys are the wire names. */
export const eventCatalog = {
  actionStatus: ActionStatusPayload,
  log: LogPayload,
  namespaceStatus: NamespaceStatusPayload,
  resourceStatus: ResourceStatusPayload,
  sessionCompleted: SessionCompletedPayload,
  sessionFailed: SessionFailedPayload,
  sessionHeartbeat: SessionHeartbeatPayload,
  sessionStarted: SessionStartedPayload,
} satisfies Record<string, TSchema>;

export type EventType = keyof typeof eventCatalog;
export type EventPayloads = { [K in EventType]: Static<(typeof eventCatalog)[K]> };
export const eventTypes = Object.keys(eventCatalog) as EventType[];

/** Any event type: the catalogue's (core) or a plugin's own (src/events/plugin-types.ts). */
export type AnyEventType = EventType | PluginEventType;

/** Types that are written to the outbox and streamed to the server (docs/design.md#events, #event-stream). */
export const streamedEventTypes: ReadonlySet<AnyEventType> = new Set<EventType>([
  'namespaceStatus',
  'resourceStatus',
  'sessionStarted',
  'sessionCompleted',
  'sessionFailed',
  'sessionHeartbeat',
  'actionStatus',
]);

/**
 * Whether events of a type are written to the outbox and streamed: a core type's by the set above,
 * a plugin's by its declaration (`streamed`) in this process.
 */
export function isStreamedType(type: AnyEventType): boolean {
  return isEventType(type) ? streamedEventTypes.has(type) : pluginEventType(type)?.streamed === true;
}

/** Types the outbox may drop, oldest first, when it reaches its size bound. */
export const droppableEventTypes: ReadonlySet<AnyEventType> = new Set<EventType>(['log']);

/** ULID: 26 characters of Crockford base32. */
export const EventId = Type.String({ pattern: '^[0-9A-HJKMNP-TV-Z]{26}$' });

/**
 * Where an event stands in its host's order: a number drawn from a counter every tend process of
 * the host (its state directory) shares, which only grows, whatever the clock does. The server
 * orders a namespace's and an environment's changes by it (numbers of one counter only; other
 * counters' are not comparable). Added later: optional, so older clients are unaffected.
 */
export const EventSequence = Type.Object(
  {
    /** The counter's id (a ULID made when the counter was). */
    counter: EventId,
    number: Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER }),
  },
  { additionalProperties: false },
);
export type EventSequence = Static<typeof EventSequence>;

/** The types that carry a sequence: those whose effect on the registry depends on their order. */
export const sequencedEventTypes: ReadonlySet<AnyEventType> = new Set<EventType>([
  'namespaceStatus',
  'resourceStatus',
  'sessionStarted',
]);

/** The envelope every event travels in, on the bus, in the local log, in the outbox and over HTTP. */
export const EventEnvelope = Type.Object(
  {
    id: EventId,
    type: Type.Union([Type.Enum(eventTypes), Type.String({ pattern: pluginEventTypePattern })]),
    sessionId: EventId,
    timestamp: Type.String({ format: 'date-time', maxLength: 40 }),
    sequence: Type.Optional(EventSequence),
    payload: Type.Record(AnyKey(), Type.Unknown()),
  },
  { additionalProperties: false },
);

export type TendEvent<K extends AnyEventType = AnyEventType> = {
  [T in K]: {
    id: string;
    type: T;
    sessionId: string;
    timestamp: string;
    sequence?: EventSequence;
    payload: T extends EventType ? EventPayloads[T] : PluginEventPayload;
  };
}[K];

/** A type of the catalogue above (a core type). */
export function isEventType(type: string): type is EventType {
  return Object.hasOwn(eventCatalog, type);
}

/** Problems with a payload of a known type; empty when it is valid. */
export function checkPayload(type: EventType, payload: unknown): SchemaProblem[] {
  const check = schemaCheck(eventCatalog[type]);
  if (check.Check(payload)) return [];
  return schemaProblems(check.Errors(payload));
}

/**
 * Problems with a whole event (envelope and payload); empty when it is valid. A plugin's type is
 * checked against its declaration when this process registered it, else only its emitter
 * metadata is (a server keeps the events of plugins it never loaded).
 */
export function checkEvent(event: unknown): SchemaProblem[] {
  const envelope = schemaCheck(EventEnvelope);
  if (!envelope.Check(event)) {
    return schemaProblems(envelope.Errors(event));
  }
  const e = event as { type: AnyEventType; payload: unknown };
  const problems = isEventType(e.type)
    ? checkPayload(e.type, e.payload)
    : checkPluginEvent(e.type, e.payload);
  return problems.map((p) => ({ path: `/payload${p.path}`, message: p.message }));
}
