/**
 * The contract between the cleanup job queue (the server) and its executors (embedded in
 * `tend server`, or `tend agent` over HTTP): TypeBox schemas of every request and answer, the
 * types derived from them, and the `CleanupQueue` interface both homes of the executor talk to.
 * The HTTP routes validate with these schemas; the in-process queue takes the same types.
 *
 * A job whose lease the executor no longer holds (expired, or taken by another executor) is
 * refused with TEND_CLEANUP_LEASE_LOST (HTTP 409); the executor then drops the job.
 */
import { Type, type Static } from 'typebox';
import { ArchiveMode, ArchiveResponse, RestorableArchive, type EnvironmentArchive } from './archive.js';
import { CleanupPolicy } from './policy.js';
import { TargetKey } from './targets.js';
import { AnyKey } from '../schema-check.js';

const Id = (description?: string) => Type.String({ minLength: 1, maxLength: 200, description });
const Time = () => Type.String({ format: 'date-time' });
const Message = () => Type.String({ maxLength: 4000 });

export const ExecutorKind = Type.Union([Type.Literal('embedded'), Type.Literal('agent')]);
export type ExecutorKind = Static<typeof ExecutorKind>;

/** What planning (and clean up now) decides for an environment: delete, pause or resume. */
export const plannedActions = ['delete', 'pause', 'resume'] as const;
export type PlannedAction = (typeof plannedActions)[number];

/**
 * What a job does: `delete` the namespace, `pause` what tend deployed in it (recording how to
 * restore it), `resume` exactly that, or `restore` a deleted environment from its archive (the
 * dashboard's Restore button) — all through the same claim, start, re-check, complete.
 */
export const CleanupAction = Type.Enum([...plannedActions, 'restore']);
export type CleanupAction = Static<typeof CleanupAction>;

/** What an executor that does not say what it runs is given: every action but `restore`, which older executors do not know. */
export const defaultClaimedActions: readonly CleanupAction[] = plannedActions;

/** The actions an executor runs (for a plugin): each at most once. */
const Actions = () => Type.Array(CleanupAction, { minItems: 1, maxItems: 8, uniqueItems: true });

export const HeartbeatRequest = Type.Object(
  {
    executorId: Id('Stable per executor process (e.g. a ULID chosen at start).'),
    name: Type.String({ minLength: 1, maxLength: 200, description: 'For people: host name, agent name.' }),
    kind: ExecutorKind,
    version: Type.String({ minLength: 1, maxLength: 100 }),
    targets: Type.Array(
      Type.Object(
        {
          targetKey: TargetKey,
          pluginName: Type.String({ minLength: 1, maxLength: 200 }),
          description: Type.String({ maxLength: 500 }),
          /**
           * The actions it runs there for the plugin (default: every one but `restore`): a
           * restore is asked for only of a plugin some executor of its target restores.
           */
          actions: Type.Optional(Actions()),
        },
        { additionalProperties: false },
      ),
      { maxItems: 200 },
    ),
  },
  { additionalProperties: false },
);
export type HeartbeatRequest = Static<typeof HeartbeatRequest>;

export const HeartbeatResponse = Type.Object({
  serverTime: Time(),
  /** How often the executor should run a pass (the server's `--cleanup-interval`). */
  intervalSeconds: Type.Integer({ minimum: 1 }),
});
export type HeartbeatResponse = Static<typeof HeartbeatResponse>;

/**
 * One environment resource of a target as its plugin lists it (a namespace, a directory, …),
 * in tend's terms — each plugin maps its own metadata (labels, annotations, a record file) to
 * these fields, and the server stores and reads only them. The marks are what the resource says
 * of itself: necessary for ownership, never sufficient (ownership is the record's, proven when
 * tend created the resource).
 */
const resourceFields = {
  uid: Type.String({ minLength: 1, maxLength: 100 }),
  /** Changes whenever the resource does: Kubernetes' resourceVersion, or the plugin's equivalent. */
  version: Type.String({ minLength: 1, maxLength: 100 }),
  /** `terminating`: being removed. */
  state: Type.Union([Type.Literal('active'), Type.Literal('terminating')]),
  /** Marked as created by tend (the kubernetes plugin: label `app.kubernetes.io/managed-by=tend`). */
  managedByTend: Type.Boolean(),
  /** The project and environment it is marked as belonging to. */
  project: Type.Optional(Type.String({ minLength: 1, maxLength: 253 })),
  environment: Type.Optional(Type.String({ minLength: 1, maxLength: 253 })),
  /** Marked as shared infrastructure (`system`), an environment's (`app`) or a build's. */
  role: Type.Optional(Type.Union([Type.Literal('app'), Type.Literal('build'), Type.Literal('system')])),
  /** Marked as adopted: it existed before tend first used it. */
  adopted: Type.Boolean(),
  /** The last time a tend command used it, as marked on it (the kubernetes plugin: `tend.dev/last-activity`). */
  lastActivityAt: Type.Optional(Time()),
  /**
   * When the target created it, by the target's own clock (Kubernetes: the namespace's
   * `creationTimestamp`, set by the API server): a claim that tend created it must agree.
   */
  createdAt: Type.Optional(Time()),
  /**
   * What its running pods request (Kubernetes: the sum over its pods not yet finished, each
   * pod's containers summed — or its largest init container, when larger — as the scheduler
   * counts them). Left out when the plugin cannot tell (no permission to list pods, a local
   * environment): the server then counts the environment by weight.
   */
  requests: Type.Optional(
    Type.Object(
      {
        cpuMillicores: Type.Integer({ minimum: 0, maximum: 1_000_000_000 }),
        memoryBytes: Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER }),
        pods: Type.Integer({ minimum: 0, maximum: 1_000_000 }),
      },
      { additionalProperties: false },
    ),
  ),
  /**
   * The plugin's own words about it (a path, a phase, …): stored and shown to people as they
   * are, never read by the server's planning.
   */
  detail: Type.Optional(
    Type.Record(AnyKey(), Type.String({ maxLength: 4096 }), {
      propertyNames: { minLength: 1, maxLength: 100 },
      maxProperties: 16,
    }),
  ),
};

/** What a resource is named by in its target: one segment, as its status events carry it. */
const ResourceName = Type.String({ minLength: 1, maxLength: 253 });

export const InventoryItem = Type.Object(
  {
    /** Its name in the target: the `namespaceName` (`resourceName`) its plugin's status events carry. */
    namespaceName: ResourceName,
    ...resourceFields,
  },
  { additionalProperties: false },
);
export type InventoryItem = Static<typeof InventoryItem>;

/**
 * An inventory item in the plugin contract's words (docs/plugin-api.md#cleanup): `name` is the
 * `resourceName` (`namespaceName`) its plugin's status events carry. The executor sends it to
 * the server as an InventoryItem.
 */
export const CleanupResource = Type.Object(
  { name: ResourceName, ...resourceFields },
  { additionalProperties: false },
);
export type CleanupResource = Static<typeof CleanupResource>;

/** A plugin's resource as the server's inventory item. */
export function inventoryItemOf(resource: CleanupResource): InventoryItem {
  const { name, ...rest } = resource;
  return { namespaceName: name, ...rest };
}

export const InventoryReport = Type.Object(
  {
    executorId: Id(),
    targetKey: TargetKey,
    pluginName: Type.String({ minLength: 1, maxLength: 200 }),
    /** True only if every page of the list arrived. A partial list never marks anything missing. */
    complete: Type.Boolean(),
    /** Why the list is not complete (failed call, truncated, expired continue token). */
    error: Type.Optional(Message()),
    items: Type.Array(InventoryItem, { maxItems: 100_000 }),
    /**
     * The target's clock as the report is sent (Kubernetes: the API server's `Date`), for plugins
     * whose targets have a clock of their own. The server plans nothing on a target whose clock
     * disagrees with its own; a report without it attests no time.
     */
    observedAt: Type.Optional(Time()),
  },
  { additionalProperties: false },
);
export type InventoryReport = Static<typeof InventoryReport>;

export const InventoryResponse = Type.Object({
  /** Items of the report that match a recorded resource. */
  recorded: Type.Integer({ minimum: 0 }),
  /** Recorded `ready` resources of the target absent from this complete inventory, now `missing`. */
  markedMissing: Type.Integer({ minimum: 0 }),
  /** Items marked as tend's with no record. */
  unrecorded: Type.Integer({ minimum: 0 }),
  /**
   * Why this complete inventory was held back, applied nothing: it would mark too many recorded
   * resources missing at once (an empty or shortened list that only looks complete). The
   * executor then acts on nothing of the target in this pass.
   */
  suspect: Type.Optional(Message()),
});
export type InventoryResponse = Static<typeof InventoryResponse>;

export const ClaimRequest = Type.Object(
  {
    executorId: Id(),
    targetKeys: Type.Array(TargetKey, { minItems: 1, maxItems: 200 }),
    max: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 10 })),
    leaseSeconds: Type.Optional(Type.Integer({ minimum: 5, maximum: 3600, default: 120 })),
    /** The actions this executor runs (default: all but `restore`). */
    actions: Type.Optional(Actions()),
    /**
     * The actions it runs for each plugin it serves, by plugin name: a job of a plugin named here
     * is claimed only for these; a job of any other plugin, for `actions`.
     */
    pluginActions: Type.Optional(
      Type.Record(AnyKey(), Actions(), {
        propertyNames: { minLength: 1, maxLength: 200 },
        maxProperties: 100,
      }),
    ),
  },
  { additionalProperties: false },
);
export type ClaimRequest = Static<typeof ClaimRequest>;

export const CleanupJobState = Type.Union([
  Type.Literal('planned'),
  Type.Literal('executing'),
  Type.Literal('done'),
  Type.Literal('failed'),
  Type.Literal('cancelled'),
]);
export type CleanupJobState = Static<typeof CleanupJobState>;

export const CleanupJob = Type.Object({
  id: Type.String(),
  action: CleanupAction,
  state: CleanupJobState,
  environmentId: Type.String(),
  project: Type.String(),
  environment: Type.String(),
  resourceId: Type.String(),
  /** The plugin that recorded the resource: the executor dispatches the job to its cleanup handlers. */
  pluginName: Type.String(),
  /** The executor target (`kubernetes/<clusterId>`, `local/<hostId>`). */
  targetKey: Type.String(),
  /** The resource's target as recorded (`{kind, clusterId, server, context}` or `{kind, hostId, path}`). */
  target: Type.Record(AnyKey(), Type.Unknown()),
  namespaceName: Type.String(),
  /** The recorded uid: a namespace with another uid is not the one planned (re-created). */
  namespaceUid: Type.Union([Type.String(), Type.Null()]),
  /**
   * How the server knows tend created the namespace. `claim`: the window of the claim that made
   * it owned — from the claiming session's start to the server's receipt of the claim, widened
   * by the clock skew the server tolerates — within which the target must have created it (the
   * executor compares the creation time of its fresh read: Kubernetes' `creationTimestamp`).
   * `recorded-uid`: owned before the server recorded claim windows; the recorded uid is the
   * proof. Absent (a server older than the executor, a namespace not recorded as owned): the
   * executor deletes, pauses and resumes nothing.
   */
  ownership: Type.Optional(
    Type.Union([
      Type.Object({ proof: Type.Literal('claim'), createdFrom: Time(), createdUntil: Time() }),
      Type.Object({ proof: Type.Literal('recorded-uid') }),
    ]),
  ),
  /**
   * The activity the decision was based on. A `tend.dev/last-activity` later than this on the
   * namespace means it was used since: the executor cancels.
   */
  expectedLastActivityAt: Time(),
  /** The planner's sentence, e.g. "no activity since 10:02 UTC, policy 8h; last: tend build by alice". */
  reason: Type.String(),
  attempts: Type.Integer({ minimum: 0 }),
  leaseExpiresAt: Type.Union([Time(), Type.Null()]),
  /** The executor runs every check but does not act (a dry-run executor, `tend agent --dry-run`). */
  dryRun: Type.Boolean(),
  /**
   * What the executor archives before it deletes (`none` for pause and resume, and for a policy
   * with `archive: false`; absent from a server that keeps no archives): a deletion whose
   * archive the server did not store does not happen.
   */
  archive: Type.Optional(ArchiveMode),
});
export type CleanupJob = Static<typeof CleanupJob>;

const NullableTime = () => Type.Union([Time(), Type.Null()]);
const NullableString = () => Type.Union([Type.String(), Type.Null()]);

/** A job as the read routes and the dashboard show it: the job and its history. */
export const JobView = Type.Intersect([
  CleanupJob,
  Type.Object({
    trigger: NullableString(),
    actor: NullableString(),
    plannedAt: Time(),
    startedAt: NullableTime(),
    finishedAt: NullableTime(),
    notBefore: NullableTime(),
    outcome: NullableString(),
    message: NullableString(),
  }),
]);
export type JobView = Static<typeof JobView>;

export const ClaimResponse = Type.Object({ jobs: Type.Array(CleanupJob) });
export type ClaimResponse = Static<typeof ClaimResponse>;

export const StartRequest = Type.Object({ executorId: Id() }, { additionalProperties: false });
export type StartRequest = Static<typeof StartRequest>;

export const StartResponse = Type.Union([
  Type.Object({ proceed: Type.Literal(true), job: CleanupJob }),
  Type.Object({
    proceed: Type.Literal(false),
    reason: Type.String(),
    /** The server finished the job itself: `done` when a delete begun before is attested gone. */
    finished: Type.Optional(Type.Literal('done')),
  }),
]);
export type StartResponse = Static<typeof StartResponse>;

export const CleanupOutcome = Type.Union([
  Type.Literal('done'),
  Type.Literal('cancelled'),
  Type.Literal('failed'),
]);
export type CleanupOutcome = Static<typeof CleanupOutcome>;

/** The most events a restore job's session may report with its outcome. */
export const maxRestoreEvents = 64;

export const CompleteRequest = Type.Object(
  {
    executorId: Id(),
    outcome: CleanupOutcome,
    /** For people: "deleted", "already gone", "changed since the check", the API error. */
    message: Message(),
    /**
     * A `restore` job only: the streamed events of the restore session the executor ran (its
     * start, the namespace it created, its end), checked against the event catalogue and the job,
     * and recorded like a command's: the `created` event is the namespace's ownership proof.
     */
    events: Type.Optional(Type.Array(Type.Record(AnyKey(), Type.Unknown()), { maxItems: maxRestoreEvents })),
  },
  { additionalProperties: false },
);
export type CompleteRequest = Static<typeof CompleteRequest>;

export const CompleteResponse = Type.Object({ job: CleanupJob });
export type CompleteResponse = Static<typeof CompleteResponse>;

/** The events of a restore job's session so far: sent as soon as the namespace was created. */
export const RestoreEventsRequest = Type.Object(
  {
    executorId: Id(),
    events: Type.Array(Type.Record(AnyKey(), Type.Unknown()), {
      minItems: 1,
      maxItems: maxRestoreEvents,
    }),
  },
  { additionalProperties: false },
);
export type RestoreEventsRequest = Static<typeof RestoreEventsRequest>;

export const RestoreEventsResponse = Type.Object({
  /** Events recorded by this request (the others were already). */
  accepted: Type.Integer({ minimum: 0 }),
  duplicates: Type.Integer({ minimum: 0 }),
});
export type RestoreEventsResponse = Static<typeof RestoreEventsResponse>;

/**
 * What the executor of a started `restore` job restores: the archive (Secrets unsealed), and what
 * its restore session says of itself — the person who asked, and the environment's cleanup
 * policy, so the restored environment is cleaned as it was.
 */
export const RestoreOrder = Type.Object({
  restorable: RestorableArchive,
  /** Who asked for the restore (the audit log's actor). */
  requestedBy: Type.String(),
  cleanupPolicy: Type.Optional(CleanupPolicy),
  /** The pull request the environment is recorded for, which the session carries on. */
  pullRequest: Type.Optional(Type.Object({ repository: Type.String(), number: Type.Integer() })),
});
export type RestoreOrder = Static<typeof RestoreOrder>;

/**
 * The queue's HTTP routes, one per `CleanupQueue` method: the server registers them and
 * `tend agent` calls them from this one table (paths, request and response schemas).
 */
export const queueRoutes = {
  heartbeat: {
    path: '/api/v1/agents/heartbeat',
    summary: 'An executor announces itself and the targets it serves (agent scope)',
    body: HeartbeatRequest,
    response: HeartbeatResponse,
  },
  inventory: {
    path: '/api/v1/agents/inventory',
    summary: 'An executor reports the tend-labelled namespaces of a target (agent scope)',
    body: InventoryReport,
    response: InventoryResponse,
  },
  claim: {
    path: '/api/v1/cleanup/jobs/claim',
    summary: 'Lease due jobs of the given targets (agent scope)',
    body: ClaimRequest,
    response: ClaimResponse,
  },
  start: {
    path: '/api/v1/cleanup/jobs/:id/start',
    summary:
      'Start a leased job: the server re-checks the registry and moves it to executing, or cancels it with the reason (agent scope)',
    body: StartRequest,
    response: StartResponse,
  },
  restoreEvents: {
    path: '/api/v1/cleanup/jobs/:id/events',
    summary:
      "Record the events of a started restore job's session so far, checked against the job: the namespace it created is owned from then on (agent scope)",
    body: RestoreEventsRequest,
    response: RestoreEventsResponse,
  },
  complete: {
    path: '/api/v1/cleanup/jobs/:id/complete',
    summary: 'Report the outcome of a job: done, cancelled, or failed (retried with backoff) (agent scope)',
    body: CompleteRequest,
    response: CompleteResponse,
  },
} as const;
export type QueueRoute = keyof typeof queueRoutes;

/**
 * The archive route (agent scope): its body is the archive as gzip-compressed JSON
 * (`content-type: application/gzip`), not a JSON body, so it is not in the table above. The
 * executor that holds the job's lease names itself in the query.
 */
export const archiveRoute = {
  path: '/api/v1/cleanup/jobs/:id/archive',
  summary:
    'Store the archive of a started delete job before its deletion: gzip-compressed JSON, size-limited (agent scope)',
  response: ArchiveResponse,
} as const;

/** `GET` of the same path: the restore order of a started restore job (agent scope, the lease holder). */
export const restoreOrderRoute = {
  path: archiveRoute.path,
  summary:
    'The archive a started restore job re-creates, Secrets unsealed, with its requester and policy (agent scope)',
  response: RestoreOrder,
} as const;

export function archivePath(jobId: string, executorId: string): string {
  return `${archiveRoute.path.replace(':id', encodeURIComponent(jobId))}?executorId=${encodeURIComponent(executorId)}`;
}

/** The path of a queue route, with the job id filled in. */
export function queuePath(route: QueueRoute, jobId?: string): string {
  const path = queueRoutes[route].path;
  return jobId === undefined ? path : path.replace(':id', encodeURIComponent(jobId));
}

/**
 * The job queue as an executor sees it: `DatabaseCleanupQueue` in the server process (embedded
 * executor), or the HTTP client of `tend agent`. Errors are TendErrors; a lost lease is
 * TEND_CLEANUP_LEASE_LOST.
 */
export interface CleanupQueue {
  heartbeat(body: HeartbeatRequest): Promise<HeartbeatResponse>;
  inventory(body: InventoryReport): Promise<InventoryResponse>;
  claim(body: ClaimRequest): Promise<ClaimResponse>;
  start(jobId: string, body: StartRequest): Promise<StartResponse>;
  complete(jobId: string, body: CompleteRequest): Promise<CompleteResponse>;
  /** Stores the archive of a started delete job; throws when it was not stored (then nothing is deleted). */
  archive(jobId: string, executorId: string, archive: EnvironmentArchive): Promise<ArchiveResponse>;
  /** What a started restore job re-creates. */
  restoreOrder(jobId: string, executorId: string): Promise<RestoreOrder>;
  /** Records the restore session's events so far (right after its namespace was created). */
  restoreEvents(jobId: string, body: RestoreEventsRequest): Promise<RestoreEventsResponse>;
}
