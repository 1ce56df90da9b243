/** TypeBox schemas shared by routes: errors and the API's view of the registry. */
import { Type, type Static } from 'typebox';
import { CleanupSchedule } from '../cleanup/policy.js';
import { redactUrl } from '../redact.js';
import { AnyKey } from '../schema-check.js';

export const ErrorResponse = Type.Object(
  {
    error: Type.Object({
      code: Type.String(),
      message: Type.String(),
      detail: Type.Optional(Type.Record(AnyKey(), Type.Unknown())),
    }),
  },
  { description: 'Every error answer: a stable code (docs/errors.md) and a message.' },
);

const Nullable = <T extends ReturnType<typeof Type.String>>(t: T) => Type.Union([t, Type.Null()]);
const Str = () => Type.String();
const Time = () => Type.String({ format: 'date-time' });

export const EnvironmentStateSchema = Type.Union([
  Type.Literal('active'),
  Type.Literal('paused'),
  Type.Literal('cleaned'),
]);

export const EnvironmentView = Type.Object({
  id: Str(),
  project: Str(),
  name: Str(),
  namespace: Str(),
  state: EnvironmentStateSchema,
  /** When a pause job paused it (state `paused`), and which rule decided: `schedule` or `inactivity`. */
  pausedAt: Nullable(Time()),
  pausedBy: Nullable(Str()),
  owner: Nullable(Str()),
  protected: Type.Boolean(),
  protectedBy: Nullable(Str()),
  protectedAt: Nullable(Time()),
  keepAliveUntil: Nullable(Time()),
  keepAliveBy: Nullable(Str()),
  policy: Type.Union([
    Type.Object({
      afterInactivity: Str(),
      action: Str(),
      warnBefore: Type.Optional(Str()),
      afterClose: Type.Optional(Str()),
      schedule: Type.Optional(CleanupSchedule),
    }),
    Type.Null(),
  ]),
  pullRequest: Type.Union(
    [
      Type.Object({
        repository: Str(),
        number: Type.Integer(),
        state: Nullable(Str()),
        closedAt: Nullable(Time()),
      }),
      Type.Null(),
    ],
    {
      description:
        'The pull request the environment is for (environments[].pullRequest) and what GitHub last said of it (open, closed, merged; null: nothing yet).',
    },
  ),
  createdAt: Time(),
  cleanedAt: Nullable(Time()),
  lastActivity: Type.Object(
    {
      at: Time(),
      type: Nullable(Str()),
      sessionId: Nullable(Str()),
      command: Nullable(Str()),
      user: Nullable(Str()),
    },
    { description: 'Server receive time of the last event that showed use, and where it came from.' },
  ),
});
export type EnvironmentView = Static<typeof EnvironmentView>;

export const ResourceView = Type.Object({
  id: Str(),
  plugin: Str(),
  provider: Str(),
  target: Type.Record(AnyKey(), Type.Unknown()),
  targetKey: Str(),
  namespace: Str(),
  namespaceUid: Nullable(Str()),
  generation: Type.Integer(),
  role: Type.Union([Type.Literal('app'), Type.Literal('build'), Type.Literal('system')]),
  ownership: Type.Union([Type.Literal('owned'), Type.Literal('adopted'), Type.Literal('unknown')]),
  state: Type.Union([Type.Literal('ready'), Type.Literal('terminating'), Type.Literal('missing')]),
  lastCause: Str(),
  firstSeenAt: Time(),
  lastSeenAt: Time(),
  lastActivityAt: Nullable(Time()),
  missingSince: Nullable(Time()),
});
export type ResourceView = Static<typeof ResourceView>;

export const SessionView = Type.Object({
  id: Str(),
  command: Nullable(Str()),
  args: Type.Union([Type.Array(Str()), Type.Null()]),
  user: Nullable(Str()),
  hostId: Nullable(Str()),
  cliVersion: Nullable(Str()),
  status: Str(),
  startedAt: Nullable(Time()),
  endedAt: Nullable(Time()),
  lastHeartbeatAt: Nullable(Time()),
  lastEventAt: Time(),
  error: Type.Union([Type.Object({ code: Str(), message: Str() }), Type.Null()]),
});
export type SessionView = Static<typeof SessionView>;

export const TimelineView = Type.Object({
  id: Str(),
  type: Str(),
  sessionId: Str(),
  receivedAt: Time(),
  clientTimestamp: Str(),
  summary: Str(),
});
export type TimelineView = Static<typeof TimelineView>;

/** An event as `GET /environments/:id/events` answers it: the timeline's entry and its payload. */
export const EventView = Type.Object({
  ...TimelineView.properties,
  payload: Type.Record(AnyKey(), Type.Unknown()),
});
export type EventView = Static<typeof EventView>;

export const AuditView = Type.Object({
  id: Str(),
  at: Time(),
  actor: Str(),
  action: Str(),
  environmentId: Nullable(Str()),
  detail: Type.Union([Type.Record(AnyKey(), Type.Unknown()), Type.Null()]),
});
export type AuditView = Static<typeof AuditView>;

/**
 * A resource's target as people name it: a cluster by its kubeconfig context, else its API
 * server URL (never the kube-system uid of its target key); a local target by its path.
 */
export function targetLabel(r: Pick<ResourceView, 'target' | 'targetKey'>): string {
  const text = (v: unknown) => (typeof v === 'string' && v !== '' ? v : undefined);
  const t = r.target;
  if (t.kind === 'local') return `local ${text(t.path) ?? r.targetKey}`;
  const server = text(t.server);
  return text(t.context) ?? (server ? redactUrl(server) : r.targetKey);
}
