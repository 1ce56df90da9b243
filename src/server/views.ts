/** Database rows as the API and the dashboard show them. */
import type { CleanupSchedule } from '../cleanup/policy.js';
import type { AuditEntry, Environment, Resource, Session } from './db/schema.js';
import type { TimelineEntry } from './db/repositories/environments.js';
import type {
  AuditView,
  EnvironmentView,
  EventView,
  ResourceView,
  SessionView,
  TimelineView,
} from '../api/views.js';
import { pluginEventMetadataFields } from '../events/plugin-types.js';

/** An environment's pull request, from its columns (the API's view, and the planner's snapshot's). */
export function pullRequestView(
  e: Pick<
    Environment,
    'pull_request_repository' | 'pull_request_number' | 'pull_request_state' | 'pull_request_closed_at'
  >,
): EnvironmentView['pullRequest'] {
  return e.pull_request_repository !== null && e.pull_request_number !== null
    ? {
        repository: e.pull_request_repository,
        number: Number(e.pull_request_number),
        state: e.pull_request_state,
        closedAt: e.pull_request_closed_at,
      }
    : null;
}

export function environmentView(e: Environment): EnvironmentView {
  return {
    id: e.id,
    project: e.project,
    name: e.name,
    namespace: e.namespace,
    state: e.state,
    pausedAt: e.paused_at,
    pausedBy: e.paused_by,
    owner: e.owner,
    protected: Boolean(e.protected),
    protectedBy: e.protected_by,
    protectedAt: e.protected_at,
    keepAliveUntil: e.keep_alive_until,
    keepAliveBy: e.keep_alive_by,
    policy:
      e.policy_after_inactivity && e.policy_action
        ? {
            afterInactivity: e.policy_after_inactivity,
            action: e.policy_action,
            ...(e.policy_schedule ? { schedule: JSON.parse(e.policy_schedule) as CleanupSchedule } : {}),
            ...(e.policy_warn_before ? { warnBefore: e.policy_warn_before } : {}),
            ...(e.policy_after_close ? { afterClose: e.policy_after_close } : {}),
          }
        : null,
    pullRequest: pullRequestView(e),
    createdAt: e.created_at,
    cleanedAt: e.cleaned_at,
    lastActivity: {
      at: e.last_activity_at,
      type: e.last_activity_type,
      sessionId: e.last_activity_session,
      command: e.last_activity_command,
      user: e.last_activity_user,
    },
  };
}

export function resourceView(r: Resource): ResourceView {
  return {
    id: r.id,
    plugin: r.plugin,
    provider: r.provider,
    target: JSON.parse(r.target) as Record<string, unknown>,
    targetKey: r.target_key,
    namespace: r.namespace_name,
    namespaceUid: r.namespace_uid,
    generation: Number(r.generation),
    role: r.role,
    ownership: r.ownership,
    state: r.state,
    lastCause: r.last_cause,
    firstSeenAt: r.first_seen_at,
    lastSeenAt: r.last_seen_at,
    lastActivityAt: r.last_activity_at,
    missingSince: r.missing_since,
  };
}

export function sessionView(s: Session): SessionView {
  return {
    id: s.id,
    command: s.command,
    args: s.args ? (JSON.parse(s.args) as string[]) : null,
    user: s.user_name,
    hostId: s.host_id,
    cliVersion: s.cli_version,
    status: s.status,
    startedAt: s.started_at,
    endedAt: s.ended_at,
    lastHeartbeatAt: s.last_heartbeat_at,
    lastEventAt: s.last_event_at,
    error: s.error_code ? { code: s.error_code, message: s.error_message ?? '' } : null,
  };
}

const str = (v: unknown) => (typeof v === 'string' ? v : v === undefined ? '' : JSON.stringify(v));

/** One line describing an event, for the activity timeline. */
export function summarise(type: string, p: Record<string, unknown>): string {
  switch (type) {
    case 'sessionStarted':
      return `${str(p.user)} ran tend ${str(p.command)}${Array.isArray(p.args) && p.args.length ? ' ' + p.args.map(str).join(' ') : ''}`;
    case 'sessionCompleted':
      return `session completed: ${str(p.succeeded)} succeeded, ${str(p.cached)} cached, ${str(p.failed)} failed`;
    case 'sessionFailed':
      return `session failed: ${str((p.error as Record<string, unknown> | undefined)?.message)}`;
    case 'sessionHeartbeat':
      return 'heartbeat: command still running';
    case 'namespaceStatus':
      return `namespace ${str(p.namespaceName)} ${str(p.state)} (${str(p.cause)}, ${str(p.role)}, ${str(p.pluginName)})`;
    case 'resourceStatus':
      return `${str(p.pluginName)} resource ${str(p.resourceName)} ${str(p.state)} (${str(p.cause)}, ${str(p.role)})`;
    case 'actionStatus':
      return `${str(p.actionRef)} ${str(p.state)}`;
    case 'log':
      return `${str(p.level)}: ${str(p.message).slice(0, 200)}`;
    default:
      // A plugin's own type: its fields as they came, stamped metadata aside.
      return `${type}: ${pluginFields(p).slice(0, 200)}`;
  }
}

const stampedFields: ReadonlySet<string> = new Set(pluginEventMetadataFields);

function pluginFields(p: Record<string, unknown>): string {
  return Object.entries(p)
    .filter(([key]) => !stampedFields.has(key))
    .map(([key, value]) => `${key}=${str(value)}`)
    .join(' ');
}

export function eventView(t: TimelineEntry): EventView {
  return { ...timelineView(t), payload: t.payload };
}

export function timelineView(t: TimelineEntry): TimelineView {
  return {
    id: t.id,
    type: t.type,
    sessionId: t.sessionId,
    receivedAt: t.receivedAt,
    clientTimestamp: t.clientTimestamp,
    summary: summarise(t.type, t.payload),
  };
}

export function auditView(a: AuditEntry): AuditView {
  return {
    id: a.id,
    at: a.at,
    actor: a.actor,
    action: a.action,
    environmentId: a.environment_id,
    detail: a.detail ? (JSON.parse(a.detail) as Record<string, unknown>) : null,
  };
}
