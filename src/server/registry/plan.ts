/**
 * What a batch of events means, worked out in memory before anything is written: the
 * environments it touches (activity, owner, cleanup policy, namespace events) and the updates of
 * its sessions. Events are applied in the order of the batch; a session's environment is known
 * from its sessionStarted or heartbeat, in this batch or stored before.
 */
import { newId } from '../../events/bus.js';
import type {
  EventSequence,
  NamespaceStatusPayload,
  SessionCompletedPayload,
  SessionFailedPayload,
  SessionHeartbeatPayload,
  SessionStartedPayload,
  TendEvent,
} from '../../events/catalog.js';
import { readOnlyCommands, sessionStopped } from '../../events/catalog.js';
import { statusReportOf } from '../../events/resource-status.js';
import type { CleanupPolicy } from '../../cleanup/policy.js';
import type { EnvironmentRow, SessionUpdate, StoredSession } from '../db/repositories/registry.js';
import { environmentKey, type EnvironmentIdentity } from './keys.js';
import { takenBefore } from './order.js';

interface Activity {
  type: string;
  session: string;
  command: string | null;
  user: string | null;
}

export interface EnvironmentTouch {
  identity: EnvironmentIdentity;
  /** The batch's last event that counts as activity (none from a read-only command's session). */
  activity?: Activity;
  /** Set when the batch holds a sessionStarted for the environment: its policy, or null. */
  policy?: CleanupPolicy | null;
  /** Set with the policy: the session's pull request, or null. */
  pullRequest?: { repository: string; number: number } | null;
  /** A command that resumes a paused environment at its start (deploy, test, run, resume) ran. */
  resumed?: boolean;
  /** The host sequence of the sessionStarted that set the policy, when it had one. */
  started?: EventSequence;
  owner?: string;
  eventIds: string[];
  /** `activity`: the event counts as activity (a `ready` one moves its resource's). */
  namespaceEvents: { event: TendEvent<'namespaceStatus'>; activity: boolean }[];
}

export interface KnownSession {
  identity?: EnvironmentIdentity;
  command: string | null;
  user: string | null;
  /**
   * The session's events count as activity: not those of a read-only command (the server's own
   * list of commands, by the session's sessionStarted), unless the policy its sessionStarted
   * carried says `readOnlyIsActivity` — and then only in the batch of that sessionStarted (the
   * policy is not kept per session): its start counts, as it did before.
   */
  activity: boolean;
}

/** Whether a session of `command` counts as activity, its policy given when known. */
export function countsAsActivity(command: string | null, policy?: CleanupPolicy | null): boolean {
  return command === null || !readOnlyCommands.has(command) || policy?.readOnlyIsActivity === true;
}

/** What the batch knows of its sessions from before, by id. */
export function knownSessions(rows: readonly StoredSession[]): Map<string, KnownSession> {
  const known = new Map<string, KnownSession>();
  for (const r of rows) {
    known.set(r.id, {
      identity:
        r.project && r.environment && r.namespace
          ? { project: r.project, name: r.environment, namespace: r.namespace }
          : undefined,
      command: r.command,
      user: r.user_name,
      activity: countsAsActivity(r.command),
    });
  }
  return known;
}

export interface BatchPlan {
  touches: Map<string, EnvironmentTouch>;
  sessions: Map<string, SessionUpdate>;
  /** Environment key of each event that belongs to one. */
  eventEnvironment: Map<string, string>;
  known: Map<string, KnownSession>;
}

/** A plugin's resourceStatus is recorded exactly as a namespaceStatus. */
const asRecorded = (e: TendEvent): TendEvent => statusReportOf(e) ?? e;

/** What the events change, worked out in memory: environments touched, session updates. */
export function planBatch(fresh: TendEvent[], known: Map<string, KnownSession>, now: string): BatchPlan {
  const touches = new Map<string, EnvironmentTouch>();
  const eventEnvironment = new Map<string, string>();
  const sessions = new Map<string, SessionUpdate>();

  // A session's events share one identity object: its key is worked out once.
  const keys = new Map<EnvironmentIdentity, string>();
  const touch = (identity: EnvironmentIdentity, eventId: string): EnvironmentTouch => {
    let key = keys.get(identity);
    if (key === undefined) keys.set(identity, (key = environmentKey(identity)));
    let t = touches.get(key);
    if (!t) {
      t = { identity, eventIds: [], namespaceEvents: [] };
      touches.set(key, t);
    }
    t.eventIds.push(eventId);
    eventEnvironment.set(eventId, key);
    return t;
  };
  const session = (id: string): SessionUpdate => {
    let s = sessions.get(id);
    if (!s) {
      s = { id, status: 'unknown', last_event_at: now };
      sessions.set(id, s);
    }
    return s;
  };
  /** The event as activity; undefined when its session's events do not count. */
  const activityOf = (e: TendEvent): Activity | undefined => {
    const k = known.get(e.sessionId);
    if (k && !k.activity) return undefined;
    return { type: e.type, session: e.sessionId, command: k?.command ?? null, user: k?.user ?? null };
  };
  /** Sets the touch's activity when the event counts as such. */
  const active = (t: EnvironmentTouch, e: TendEvent): boolean => {
    const activity = activityOf(e);
    if (activity) t.activity = activity;
    return activity !== undefined;
  };

  for (const e of fresh.map(asRecorded)) {
    switch (e.type) {
      case 'sessionStarted': {
        const p: SessionStartedPayload = e.payload;
        const identity = { project: p.project, name: p.environment, namespace: p.namespace };
        known.set(e.sessionId, {
          identity,
          command: p.command,
          user: p.user,
          activity: countsAsActivity(p.command, p.cleanupPolicy),
        });
        const t = touch(identity, e.id);
        active(t, e);
        // A session its host started before the one that set the policy in this batch sets nothing.
        if (
          !takenBefore(e.sequence, { counter: t.started?.counter ?? null, number: t.started?.number ?? null })
        ) {
          t.policy = p.cleanupPolicy ? { ...p.cleanupPolicy } : null;
          t.pullRequest = p.pullRequest ? { ...p.pullRequest } : null;
          if (resumingCommands.has(p.command)) t.resumed = true;
          if (e.sequence) t.started = e.sequence;
        }
        t.owner ??= p.user;
        const s = session(e.sessionId);
        Object.assign(s, {
          project: p.project,
          environment: p.environment,
          namespace: p.namespace,
          command: p.command,
          args: JSON.stringify(p.args),
          user_name: p.user,
          host_id: p.hostId,
          cli_version: p.cliVersion,
          // Events may arrive out of order: a session that already ended stays ended.
          status: s.status === 'unknown' ? 'running' : s.status,
          started_at: now,
          client_started_at: e.timestamp,
        } satisfies Partial<SessionUpdate>);
        break;
      }
      case 'sessionHeartbeat': {
        const p: SessionHeartbeatPayload = e.payload;
        const identity = { project: p.project, name: p.environment, namespace: p.namespace };
        const k = known.get(e.sessionId);
        if (!k?.identity)
          known.set(e.sessionId, {
            identity,
            command: k?.command ?? null,
            user: k?.user ?? null,
            activity: k?.activity ?? true,
          });
        active(touch(identity, e.id), e);
        const s = session(e.sessionId);
        s.last_heartbeat_at = now;
        s.project ??= p.project;
        s.environment ??= p.environment;
        s.namespace ??= p.namespace;
        break;
      }
      case 'sessionCompleted':
      case 'sessionFailed': {
        const identity = known.get(e.sessionId)?.identity;
        if (identity) active(touch(identity, e.id), e);
        const s = session(e.sessionId);
        s.ended_at = now;
        if (e.type === 'sessionFailed') {
          const p: SessionFailedPayload = e.payload;
          // Ctrl-C (or SIGTERM) ended it: the user stopped it, nothing failed (`tend deploy --watch` ends so).
          s.status = sessionStopped(p) ? 'stopped' : 'failed';
          s.error_code = p.error.code;
          s.error_message = p.error.message.slice(0, 4096);
        } else {
          // The command ran to its end, but a session whose actions failed did not succeed.
          const p: SessionCompletedPayload = e.payload;
          if (p.failed + p.aborted > 0) {
            s.status = 'failed';
            s.error_code = 'TEND_ACTION_FAILED';
            s.error_message = `${p.failed} action(s) failed, ${p.aborted} aborted`;
          } else {
            s.status = 'completed';
          }
        }
        break;
      }
      case 'namespaceStatus': {
        const p: NamespaceStatusPayload = e.payload;
        // A namespace belongs to the environment of the session that touched it (a build or
        // system namespace too); without a known session, to the environment it names.
        const k = known.get(e.sessionId)?.identity;
        const identity =
          k && k.project === p.project && k.name === p.environment
            ? k
            : { project: p.project, name: p.environment, namespace: p.namespaceName };
        const t = touch(identity, e.id);
        const counts = p.state === 'ready' ? active(t, e) : activityOf(e) !== undefined;
        t.namespaceEvents.push({ event: e, activity: counts });
        break;
      }
      default: {
        // actionStatus, log, and a plugin's own events (emitted while its handler works for the session).
        const identity = known.get(e.sessionId)?.identity;
        if (identity) active(touch(identity, e.id), e);
        break;
      }
    }
  }
  // Every session that sent something this batch was last heard of now.
  for (const e of fresh) session(e.sessionId);
  return { touches, sessions, eventEnvironment, known };
}

export function newEnvironment(identity: EnvironmentIdentity, now: string): EnvironmentRow {
  return {
    id: newId(),
    project: identity.project,
    name: identity.name,
    namespace: identity.namespace,
    state: 'active',
    owner: null,
    policy_after_inactivity: null,
    policy_action: null,
    policy_warn_before: null,
    policy_after_close: null,
    pull_request_repository: null,
    pull_request_number: null,
    pull_request_state: null,
    pull_request_closed_at: null,
    policy_schedule: null,
    policy_archive: null,
    paused_at: null,
    paused_by: null,
    cleaned_at: null,
    last_activity_at: now,
    last_activity_session: null,
    last_activity_command: null,
    last_activity_user: null,
    last_activity_type: null,
    started_sequence_counter: null,
    started_sequence_number: null,
  };
}

/** What the batch changes on the environment row: owner, policy, last activity. */
/**
 * Commands that resume a paused environment before they do anything (the CLI restores what the
 * pause recorded and says so): a batch with one of their sessionStarted makes it `active` again.
 */
export const resumingCommands: ReadonlySet<string> = new Set(['deploy', 'test', 'run', 'resume']);

export function applyTouch(row: EnvironmentRow, t: EnvironmentTouch, now: string): void {
  // The first session seen in the environment owns it.
  row.owner ??= t.owner ?? null;
  // A session its host started before the one whose policy is recorded (a late replay) changes
  // neither the policy, nor the pull request, nor a pause.
  const late = takenBefore(t.started, {
    counter: row.started_sequence_counter,
    number: row.started_sequence_number,
  });
  if (t.policy !== undefined && !late) {
    if (t.started) {
      row.started_sequence_counter = t.started.counter;
      row.started_sequence_number = t.started.number;
    }
    row.policy_after_inactivity = t.policy?.afterInactivity ?? null;
    row.policy_action = t.policy?.action ?? null;
    row.policy_warn_before = t.policy?.warnBefore ?? null;
    row.policy_after_close = t.policy?.afterClose ?? null;
    row.policy_schedule = t.policy?.schedule ? JSON.stringify(t.policy.schedule) : null;
    row.policy_archive = t.policy?.archive === false ? 0 : null;
  }
  if (t.pullRequest !== undefined && !late) {
    const pr = t.pullRequest;
    // Another pull request (or none): what GitHub said of the previous one no longer applies.
    if (pr?.repository !== row.pull_request_repository || pr?.number !== row.pull_request_number) {
      row.pull_request_repository = pr?.repository ?? null;
      row.pull_request_number = pr?.number ?? null;
      row.pull_request_state = null;
      row.pull_request_closed_at = null;
    }
  }
  if (t.resumed && !late && row.state === 'paused') {
    row.state = 'active';
    row.paused_at = null;
    row.paused_by = null;
  }
  // The receive time only moves forward: a batch never makes the activity older.
  if (t.activity && now >= row.last_activity_at) {
    row.last_activity_at = now;
    row.last_activity_session = t.activity.session;
    row.last_activity_command = t.activity.command;
    row.last_activity_user = t.activity.user;
    row.last_activity_type = t.activity.type;
  }
}
