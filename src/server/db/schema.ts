/**
 * Table types of the server database, as Kysely sees them. The same schema serves SQLite and
 * PostgreSQL, so it sticks to the common ground: timestamps are ISO 8601 UTC strings as
 * `Date.prototype.toISOString()` writes them (fixed width, so they sort as text), booleans are
 * 0/1 integers, and structured values are JSON text.
 */
import type { ColumnType, Generated, Insertable, Kysely, Selectable, Transaction } from 'kysely';

/** ISO 8601 UTC timestamp, e.g. `2025-01-31T12:00:00.000Z`. */
export type Timestamp = string;

export type TokenScope = 'ingest' | 'agent' | 'read' | 'developer' | 'admin';
/** `paused`: a cleanup job scaled its workloads to 0 (docs/cleanup.md#pause-and-resume). */
export type EnvironmentState = 'active' | 'paused' | 'cleaned';
export type ResourceState = 'ready' | 'terminating' | 'missing';
export type ResourceRole = 'app' | 'build' | 'system';
export type Ownership = 'owned' | 'adopted' | 'unknown';
/** `stopped`: ended by Ctrl-C or SIGTERM (a `sessionFailed` with `TEND_INTERRUPTED`), not by a failure. */
export type SessionStatus = 'running' | 'completed' | 'failed' | 'stopped' | 'unknown';
export type CleanupJobState = 'planned' | 'executing' | 'done' | 'failed' | 'cancelled';

export interface ProjectsTable {
  name: string;
  created_at: Timestamp;
}

export interface ApiTokensTable {
  id: string;
  name: string;
  /** sha256 of the token, hex. The token itself is never stored. */
  token_hash: string;
  /** The first characters of the token (`tend_ab12…`), to recognise it in lists. */
  token_prefix: string;
  scope: TokenScope;
  /** When set, the token only sees and writes this project. */
  project: string | null;
  /** `agent` tokens bound to clusters: their ids as a JSON array (null: any target). */
  clusters: string | null;
  /** `agent` tokens bound to executor targets (`<kind>/<id>`) as a JSON array (null: none beyond `clusters`). */
  targets: string | null;
  created_at: Timestamp;
  last_used_at: Timestamp | null;
  revoked_at: Timestamp | null;
}

export interface SessionsTable {
  /** The CLI session id (ULID) from the events. */
  id: string;
  environment_id: string | null;
  project: string | null;
  environment: string | null;
  namespace: string | null;
  command: string | null;
  args: string | null;
  user_name: string | null;
  host_id: string | null;
  cli_version: string | null;
  status: SessionStatus;
  started_at: Timestamp | null;
  /** Its sessionStarted's own `timestamp`, by the client's clock (late replays keep it). */
  client_started_at: string | null;
  ended_at: Timestamp | null;
  /** Server receive time of the last sessionHeartbeat. */
  last_heartbeat_at: Timestamp | null;
  /** Server receive time of the session's last event. */
  last_event_at: Timestamp;
  error_code: string | null;
  error_message: string | null;
}

export interface EventsTable {
  id: string;
  type: string;
  session_id: string;
  /** The client's clock: informational only. */
  client_timestamp: string;
  /** The server's receive time: the only time activity is measured by. */
  received_at: Timestamp;
  environment_id: string | null;
  payload: string;
}

export interface EnvironmentsTable {
  id: string;
  project: string;
  name: string;
  namespace: string;
  state: EnvironmentState;
  /** User of the first session seen in the environment. */
  owner: string | null;
  protected: number;
  protected_by: string | null;
  protected_at: Timestamp | null;
  keep_alive_until: Timestamp | null;
  keep_alive_by: string | null;
  /** Cleanup policy from the last sessionStarted that carried one. */
  policy_after_inactivity: string | null;
  policy_action: string | null;
  /** The policy's `warnBefore` and `afterClose`, when it set them. */
  policy_warn_before: string | null;
  policy_after_close: string | null;
  /** `environments[].pullRequest`, from the last sessionStarted. */
  pull_request_repository: string | null;
  pull_request_number: number | null;
  /** `open`, `closed` or `merged` as the last GitHub delivery said (null: none yet). */
  pull_request_state: string | null;
  /** Server time of the delivery that closed it; null while open. */
  pull_request_closed_at: Timestamp | null;
  /** The policy's working-hours schedule as JSON (`{sleepAt, wakeAt, weekdays, timeZone}`), or null. */
  policy_schedule: string | null;
  /** 0: the policy says `archive: false` (deleted without an archive); null: archived first. */
  policy_archive: number | null;
  /** When a pause job paused the environment (state `paused`), and which rule: `schedule` or `inactivity`. */
  paused_at: Timestamp | null;
  paused_by: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
  cleaned_at: Timestamp | null;
  last_activity_at: Timestamp;
  last_activity_session: string | null;
  last_activity_command: string | null;
  last_activity_user: string | null;
  last_activity_type: string | null;
  /** The host sequence (counter, number) of the last sessionStarted that set the policy, if it had one. */
  started_sequence_counter: string | null;
  started_sequence_number: number | null;
}

export interface ResourcesTable {
  id: string;
  environment_id: string;
  plugin: string;
  provider: string;
  target_kind: string;
  /** The target's identity as JSON (`{kind, clusterId, server, context}` or `{kind, hostId, path}`). */
  target: string;
  /** Canonical identity of the target: `kubernetes/<clusterId>` or `local/<hostId>/<path>`. */
  target_key: string;
  namespace_name: string;
  namespace_uid: string | null;
  /** 1 for the first namespace of that name on the target; +1 each time it is re-created (new uid). */
  generation: number;
  role: ResourceRole;
  ownership: Ownership;
  state: ResourceState;
  last_cause: string;
  detail: string | null;
  first_seen_at: Timestamp;
  last_seen_at: Timestamp;
  last_activity_at: Timestamp | null;
  missing_since: Timestamp | null;
  /** The host sequence (counter, number) of the last event applied to the row, if it had one. */
  sequence_counter: string | null;
  sequence_number: number | null;
  /**
   * The window of the claim that made it owned: the claiming session's start (its
   * sessionStarted's `timestamp`, by the client's clock) and the server's receipt of the claim.
   * The target must have created the namespace within it. Null: not owned through a claim.
   */
  claim_started_at: ColumnType<string | null, string | null | undefined, string | null>;
  claim_received_at: ColumnType<Timestamp | null, Timestamp | null | undefined, Timestamp | null>;
}

export interface CleanupJobsTable {
  id: string;
  environment_id: string;
  resource_id: string | null;
  /** `delete`, `pause`, `resume` or `restore`. */
  action: string;
  state: CleanupJobState;
  /** The planner's sentence. */
  reason: string;
  planned_at: Timestamp;
  /** Not claimed before this time (backoff after a failure). */
  not_before: Timestamp | null;
  /** The executor holding the lease. */
  lease_owner: string | null;
  lease_expires_at: Timestamp | null;
  attempts: ColumnType<number, number | undefined, number>;
  started_at: Timestamp | null;
  finished_at: Timestamp | null;
  /** Outcome of a finished job: `done`, `cancelled` or `failed`. */
  result: string | null;
  project: string | null;
  environment: string | null;
  plugin: string | null;
  /** The executor target (`kubernetes/<clusterId>`, `local/<hostId>`). */
  target_key: string | null;
  namespace_name: string | null;
  namespace_uid: string | null;
  /** The activity the decision was based on: any later activity cancels the job. */
  expected_last_activity_at: Timestamp | null;
  /** `policy` (planned by a pass) or `now` (clean up now: the inactivity wait skipped). */
  trigger: string | null;
  actor: string | null;
  outcome_message: string | null;
  dry_run: ColumnType<number, number | undefined, number>;
  /** The rule of the decision: `inactivity` or `schedule` (a pause job records it on the environment). */
  rule: ColumnType<string | null, string | null | undefined, string | null>;
  /** A `restore` job: the archive it re-creates (migration 0016). */
  archive_id: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface CleanupExecutorsTable {
  id: string;
  name: string;
  kind: string;
  version: string;
  /** The agent token it authenticated with (null for the embedded executor). */
  token_name: string | null;
  first_seen_at: Timestamp;
  last_seen_at: Timestamp;
}

export interface CleanupExecutorTargetsTable {
  executor_id: string;
  target_key: string;
  plugin: string;
  description: string;
  /** The actions the executor runs there for the plugin, as a JSON array; null: not said (every one but restore). */
  actions: string | null;
  last_seen_at: Timestamp;
}

export interface CleanupInventoriesTable {
  target_key: string;
  plugin: string;
  executor_id: string;
  received_at: Timestamp;
  complete: number;
  error: string | null;
  item_count: number;
  last_complete_at: Timestamp | null;
  /** Why the last complete inventory was held back as suspect (null: it was applied). */
  suspect_reason: string | null;
  /** Since when its inventories are suspect, and what the first held-back one would have done. */
  suspect_since: Timestamp | null;
  suspect_missing: number | null;
  suspect_recorded: number | null;
  /**
   * The server's clock less the target's, as the last inventory said (migration 0017); null when
   * it attested no time.
   */
  clock_offset_ms: number | null;
}

/** The planning clock's last reading per boot of a host (migration 0017). */
export interface CleanupClockReadingsTable {
  boot_id: string;
  wall_ms: number;
  monotonic_ms: number;
  forward_ms: number;
}

export interface CleanupInventoryItemsTable {
  target_key: string;
  namespace_name: string;
  uid: string;
  /** The item's `version` (Kubernetes: its resourceVersion). */
  resource_version: string;
  /** The item's state: `active` or `terminating`. */
  phase: string;
  /** 1 when the item is marked as tend's (`managedByTend`). */
  managed_by_tend: number;
  /** The project, environment and role it is marked with. */
  project: string | null;
  environment: string | null;
  role: string | null;
  /** 1 when it is marked adopted. */
  adopted: number;
  /** The last activity marked on it, as ISO UTC (null when it carries none). */
  last_activity_at: Timestamp | null;
  /** When the target created it (its `createdAt`: Kubernetes' creationTimestamp), as ISO UTC; null: not said. */
  created_at: ColumnType<Timestamp | null, Timestamp | null | undefined, Timestamp | null>;
  /** The item's `detail` as JSON (the plugin's own words), or null. */
  detail: string | null;
  /** 0: no recorded resource matches (an unrecorded namespace). */
  recorded: number;
  /** For unrecorded namespaces: the environment it is marked with, if recorded. */
  environment_id: string | null;
  first_seen_at: Timestamp;
  seen_at: Timestamp;
  /** What the namespace's running pods requested at this inventory (null: the executor could not tell). */
  cpu_millicores: ColumnType<number | null, number | null | undefined, number | null>;
  /** Bytes; PostgreSQL's bigint arrives as text. */
  memory_bytes: ColumnType<number | string | null, number | null | undefined, number | null>;
  pods: ColumnType<number | null, number | null | undefined, number | null>;
}

/** Each change of what a namespace's running pods requested, per namespace uid (the savings report). */
export interface NamespaceRequestsTable {
  target_key: string;
  namespace_name: string;
  uid: string;
  /** When an inventory first saw these values. */
  observed_at: Timestamp;
  cpu_millicores: number;
  /** Bytes; PostgreSQL's bigint arrives as text. */
  memory_bytes: ColumnType<number | string, number, number>;
  pods: number;
}

export interface CleanupPoliciesTable {
  project: string;
  environment: string;
  after_inactivity_ms: number;
  action: string;
  /** The enforced `afterClose`, or null when the enforced policy has none. */
  after_close_ms: number | null;
  /** The enforced schedule as canonical JSON, or null when it has none. */
  schedule: string | null;
  enforced_at: Timestamp;
  enforced_by: string;
}

export interface CleanupBreakersTable {
  project: string;
  opened_at: Timestamp;
  due_count: number;
  active_count: number;
}

export interface CleanupControlTable {
  id: string;
  halted: number;
  halted_at: Timestamp | null;
  halted_by: string | null;
  plan_lease_owner: string | null;
  plan_lease_expires_at: Timestamp | null;
  pass_seq: number;
  last_pass_at: Timestamp | null;
  last_pass_ms: number | null;
  /** `ok`, `failed` (an error), `skipped` (a clock step, a suspect input: nothing planned). */
  last_pass_outcome: string | null;
  last_pass_note: string | null;
}

export interface CleanupDecisionsTable {
  resource_id: string;
  environment_id: string;
  project: string;
  environment: string;
  namespace_name: string;
  target_key: string;
  plugin: string;
  action: string;
  kind: string;
  reason_code: string | null;
  due_at: Timestamp;
  last_activity_at: Timestamp;
  sentence: string;
  job_id: string | null;
  decided_at: Timestamp;
  /** When the warning period starts (due time - warnBefore); null: no warning. */
  warn_at: Timestamp | null;
  /** The due time in the schedule's time zone when the schedule decided (`… 19:00 +01:00 Europe/Berlin`). */
  due_local: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface WebhooksTable {
  id: string;
  url: string;
  /** JSON array of event names. */
  events: string;
  format: string;
  project: string | null;
  /** The signing key (the server signs with it); never shown after creation. */
  secret: string;
  created_at: Timestamp;
  created_by: string;
}

/** `dropped`: a warning that no longer held when it was to be sent (protected, kept alive, used since). */
export type WebhookDeliveryState = 'pending' | 'delivered' | 'failed' | 'dropped';

export interface WebhookDeliveriesTable {
  id: string;
  webhook_id: string;
  event: string;
  dedupe_key: string;
  project: string | null;
  environment_id: string | null;
  body: string;
  state: WebhookDeliveryState;
  attempts: number;
  next_attempt_at: Timestamp;
  lease_owner: string | null;
  lease_expires_at: Timestamp | null;
  last_status: number | null;
  last_error: string | null;
  created_at: Timestamp;
  finished_at: Timestamp | null;
}

export interface GithubDeliveriesTable {
  signature: string;
  delivery_id: string;
  event: string;
  action: string | null;
  repository: string | null;
  number: number | null;
  environments: number;
  received_at: Timestamp;
}

export interface NotificationCursorTable {
  id: string;
  audit_after: string;
}

/** A secret of `${secrets.NAME}` (migration 0018): its value sealed, never in the clear. */
export interface ProjectSecretsTable {
  project: string;
  /** '' for the project-wide value; an environment's own value overrides it. */
  environment: string;
  name: string;
  /** AES-256-GCM under the `--secrets-key-file` key, bound to project, environment and name (base64). */
  value_sealed: string;
  /** `sha256:<16 hex digits>` of the key that sealed it (never the key). */
  key_fingerprint: string;
  created_at: Timestamp;
  updated_at: Timestamp;
  /** Who wrote it last, as the audit log names them. */
  updated_by: string;
}

export interface AuditLogTable {
  /** ULID: sorts by time. */
  id: string;
  at: Timestamp;
  /** Who: `token:<name>` or `dashboard:<token name>` or `cli` for local administration. */
  actor: string;
  action: string;
  environment_id: string | null;
  detail: string | null;
}

export interface DashboardSessionsTable {
  /** sha256 of the cookie value, hex. */
  id_hash: string;
  token_id: string;
  csrf_token: string;
  created_at: Timestamp;
  expires_at: Timestamp;
}

/** Dashboard sessions of people signed in through the OpenID provider (migration 0015). */
export interface PersonSessionsTable {
  /** sha256 of the cookie's session id, hex. */
  id_hash: string;
  issuer: string;
  subject: string;
  email: string | null;
  name: string | null;
  /** The groups claim at sign-in, JSON array of strings. */
  groups: string;
  csrf_token: string;
  created_at: Timestamp;
  expires_at: Timestamp;
}

/**
 * SQLite only: environments whose planning inputs changed, appended by triggers (migration
 * 0004), read and pruned by the planning pass.
 */
export interface CleanupChangesTable {
  seq: Generated<number>;
  environment_id: string;
}

/** The archive of an environment taken right before an executor deleted it (docs/cleanup.md#undo). */
export interface EnvironmentArchivesTable {
  id: string;
  environment_id: string;
  project: string;
  environment: string;
  namespace_name: string;
  job_id: string;
  target_key: string;
  created_at: Timestamp;
  expires_at: Timestamp;
  /** The archive without the Secrets' contents: gzip-compressed JSON, base64. */
  body: string;
  size_bytes: number;
  objects: number;
  secrets: number;
  /** The Secrets sealed with AES-256-GCM under the archive key (base64 of iv, tag, ciphertext). */
  secrets_sealed: string | null;
  key_fingerprint: string | null;
  /** JSON array of the names of Secrets whose contents were not kept. */
  secrets_not_kept: string;
  restored_at: Timestamp | null;
}

/** Per UTC day, project and state: the environments in that state when the day was last recorded. */
export interface EnvironmentStateDaysTable {
  /** `YYYY-MM-DD` (UTC). */
  day: string;
  project: string;
  state: string;
  count: number;
  recorded_at: Timestamp;
  /** 1: estimated when the table was created (first-seen and cleaned times), not recorded. */
  estimated: number;
}

export interface Database {
  projects: ProjectsTable;
  api_tokens: ApiTokensTable;
  sessions: SessionsTable;
  events: EventsTable;
  environments: EnvironmentsTable;
  resources: ResourcesTable;
  cleanup_jobs: CleanupJobsTable;
  cleanup_executors: CleanupExecutorsTable;
  cleanup_executor_targets: CleanupExecutorTargetsTable;
  cleanup_inventories: CleanupInventoriesTable;
  cleanup_inventory_items: CleanupInventoryItemsTable;
  namespace_requests: NamespaceRequestsTable;
  cleanup_policies: CleanupPoliciesTable;
  cleanup_breakers: CleanupBreakersTable;
  cleanup_control: CleanupControlTable;
  cleanup_clock_readings: CleanupClockReadingsTable;
  cleanup_decisions: CleanupDecisionsTable;
  webhooks: WebhooksTable;
  webhook_deliveries: WebhookDeliveriesTable;
  github_deliveries: GithubDeliveriesTable;
  notification_cursor: NotificationCursorTable;
  cleanup_changes: CleanupChangesTable;
  audit_log: AuditLogTable;
  dashboard_sessions: DashboardSessionsTable;
  person_sessions: PersonSessionsTable;
  environment_state_days: EnvironmentStateDaysTable;
  environment_archives: EnvironmentArchivesTable;
  project_secrets: ProjectSecretsTable;
}

/** The database, or a transaction on it: what a query that may join its caller's transaction takes. */
export type DatabaseOrTransaction = Kysely<Database> | Transaction<Database>;

export type ApiToken = Selectable<ApiTokensTable>;
export type Environment = Selectable<EnvironmentsTable>;
export type Resource = Selectable<ResourcesTable>;
export type Session = Selectable<SessionsTable>;
export type AuditEntry = Selectable<AuditLogTable>;
export type NewResource = Insertable<ResourcesTable>;
export type CleanupJobRow = Selectable<CleanupJobsTable>;
export type EnvironmentArchiveRow = Selectable<EnvironmentArchivesTable>;
export type ProjectSecretRow = Selectable<ProjectSecretsTable>;
/** An archive without its contents (`body`, `secrets_sealed`): what listing and checks read. */
export type EnvironmentArchiveEntry = Omit<EnvironmentArchiveRow, 'body' | 'secrets_sealed'>;
export type CleanupDecisionRow = Selectable<CleanupDecisionsTable>;
export type WebhookRow = Selectable<WebhooksTable>;
export type WebhookDeliveryRow = Selectable<WebhookDeliveriesTable>;
