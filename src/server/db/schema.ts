/**
 * Table types of the server database, as Kysely sees them. The same schema serves SQLite and
 * PostgreSQL, so it sticks to the common ground: timestamps are ISO 8601 UTC strings as
 * `Date.prototype.toISOString()` writes them (fixed width, so they sort as text), booleans are
 * 0/1 integers, and structured values are JSON text.
 */
import type { ColumnType, Insertable, Selectable } from 'kysely';

/** ISO 8601 UTC timestamp, e.g. `2025-01-31T12:00:00.000Z`. */
export type Timestamp = string;

export type TokenScope = 'ingest' | 'read' | 'admin';
export type EnvironmentState = 'active' | 'cleaned';
export type ResourceState = 'ready' | 'terminating' | 'missing';
export type ResourceRole = 'app' | 'build' | 'system';
export type Ownership = 'owned' | 'adopted' | 'unknown';
export type SessionStatus = 'running' | 'completed' | 'failed' | 'unknown';
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
  created_at: Timestamp;
  updated_at: Timestamp;
  cleaned_at: Timestamp | null;
  last_activity_at: Timestamp;
  last_activity_session: string | null;
  last_activity_command: string | null;
  last_activity_user: string | null;
  last_activity_type: string | null;
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
}

export interface CleanupJobsTable {
  id: string;
  environment_id: string;
  resource_id: string | null;
  action: string;
  state: CleanupJobState;
  reason: string;
  planned_at: Timestamp;
  not_before: Timestamp | null;
  lease_owner: string | null;
  lease_expires_at: Timestamp | null;
  attempts: ColumnType<number, number | undefined, number>;
  started_at: Timestamp | null;
  finished_at: Timestamp | null;
  result: string | null;
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

export interface Database {
  projects: ProjectsTable;
  api_tokens: ApiTokensTable;
  sessions: SessionsTable;
  events: EventsTable;
  environments: EnvironmentsTable;
  resources: ResourcesTable;
  cleanup_jobs: CleanupJobsTable;
  audit_log: AuditLogTable;
  dashboard_sessions: DashboardSessionsTable;
}

export type ApiToken = Selectable<ApiTokensTable>;
export type Environment = Selectable<EnvironmentsTable>;
export type Resource = Selectable<ResourcesTable>;
export type Session = Selectable<SessionsTable>;
export type AuditEntry = Selectable<AuditLogTable>;
export type NewResource = Insertable<ResourcesTable>;
