/**
 * `tend events`: the local event log. Without an argument it lists recent sessions;
 * `tend events <sessionId|latest>` prints a session's events (`--type`, `--follow`, `--json`);
 * `tend events push` sends what waits in the outbox, `tend events outbox` shows it.
 */
import { isPluginEventType } from '../events/plugin-types.js';
import { formatTable, type CommandResult, type GlobalOptions } from '../cli/output.js';
import { findProjectRoot } from '../config/files.js';
import { parseActionRef } from '../config/project.js';
import {
  isEventType,
  readOnlyCommands,
  sessionStopped,
  type SessionFailedPayload,
  type TendEvent,
} from '../events/catalog.js';
import { listSessionLogs, looksLikeEvent, readSessionLog, type SessionLogInfo } from '../events/local-log.js';
import { ExitCode, TendError } from '../errors.js';
import { statePaths } from '../state/files.js';
import { readLines } from '../state/follow.js';
import {
  describeOutbox,
  pushOutbox,
  relativeToCwd,
  type OutboxView,
  type PushResult,
} from '../stream/push.js';
import { redactUrl } from '../redact.js';

export interface EventsOptions extends GlobalOptions {
  type?: string[];
  /** Only the events of this action (`deploy.web`): its status, its logs, the namespaces it touched. */
  action?: string;
  follow?: boolean;
  limit?: number;
  /** `latest` and `--action` alone may pick a session of `tend status` or `tend logs` too. */
  includeReadOnly?: boolean;
}

export interface SessionSummary {
  sessionId: string;
  command?: string;
  environment?: string;
  namespace?: string;
  startedAt?: string;
  /** `stopped`: ended by Ctrl-C or SIGTERM (`sessionFailed` with `TEND_INTERRUPTED`). */
  outcome: 'completed' | 'failed' | 'stopped' | 'running or interrupted';
  events: number;
}

function eventsDir(options: GlobalOptions): string {
  return statePaths(findProjectRoot({ root: options.root, cwd: process.cwd() })).events;
}

/** Names the lines of a log that are not events (a write cut short by a crash, or a foreign line). */
function warnSkipped(file: string, lines: readonly number[]): void {
  if (lines.length === 0) return;
  const shown = lines.slice(0, 20).join(', ') + (lines.length > 20 ? `, … (${lines.length} in all)` : '');
  process.stderr.write(
    `warning: skipped ${lines.length} unreadable line(s) of ${relativeToCwd(file)} (not events): line ${shown}\n`,
  );
}

export async function listSessionsCommand(options: EventsOptions): Promise<CommandResult<SessionSummary[]>> {
  const logs = listSessionLogs(eventsDir(options)).slice(0, options.limit ?? 20);
  const sessions = logs.map((log): SessionSummary => {
    const { events, skippedLines } = readSessionLog(log.file);
    warnSkipped(log.file, skippedLines);
    const started = startOf(events);
    const ended = events.findLast((e) => e.type === 'sessionCompleted' || e.type === 'sessionFailed');
    return {
      sessionId: log.sessionId,
      command: started?.payload.command,
      environment: started?.payload.environment,
      namespace: started?.payload.namespace,
      startedAt: started?.timestamp,
      outcome: !ended
        ? 'running or interrupted'
        : ended.type === 'sessionCompleted'
          ? 'completed'
          : sessionStopped(ended.payload as SessionFailedPayload)
            ? 'stopped'
            : 'failed',
      events: events.length,
    };
  });
  return {
    exitCode: 0,
    data: sessions,
    human:
      sessions.length === 0
        ? 'no sessions recorded yet'
        : formatTable(
            ['SESSION', 'STARTED', 'COMMAND', 'ENVIRONMENT', 'OUTCOME', 'EVENTS'],
            sessions.map((s) => [
              s.sessionId,
              s.startedAt ?? '',
              s.command ?? '',
              s.environment ?? '',
              s.outcome,
              String(s.events),
            ]),
          ),
  };
}

export function formatEvent(event: TendEvent): string {
  const time = event.timestamp.slice(11, 23);
  const p = event.payload as Record<string, unknown>;
  let text: string;
  switch (event.type) {
    case 'namespaceStatus':
    case 'resourceStatus':
      text = `${p.namespaceName ?? p.resourceName} ${p.state} (${p.cause}, ${p.role}) by ${p.pluginName}${p.handler ? `.${p.handler}` : ''}`;
      break;
    case 'actionStatus':
      text = `${p.actionRef} ${p.state}${p.durationMs !== undefined ? ` ${p.durationMs}ms` : ''}`;
      break;
    case 'log':
      // A line of a child's output is labelled by its stream (stderr, stdout), not its level.
      text = `[${typeof p.stream === 'string' ? p.stream : p.level}] ${p.actionRef ? `${p.actionRef}: ` : ''}${p.message}`;
      break;
    default:
      text = JSON.stringify(p);
  }
  return `${time} ${event.type.padEnd(16)} ${text}`;
}

/** The `--action` value, checked: a reference such as `deploy.web`. */
function actionFilter(options: EventsOptions): string | undefined {
  if (options.action === undefined) return undefined;
  if (!parseActionRef(options.action)) {
    throw new TendError(
      'TEND_USAGE',
      `--action expects an action reference such as deploy.web (build|deploy|test|run.<name>), got "${options.action}"`,
    );
  }
  return options.action;
}

const ofAction = (event: TendEvent, ref: string) =>
  (event.payload as { actionRef?: unknown }).actionRef === ref;

/**
 * `tend events <session|latest>`: a session's events, filtered by `--type` and `--action`.
 * `tend events --action <ref>` alone shows the newest session in which that action has events.
 */
export async function showSessionCommand(
  target: string | undefined,
  options: EventsOptions,
): Promise<CommandResult<TendEvent[]>> {
  const dir = eventsDir(options);
  const logs = listSessionLogs(dir);
  const action = actionFilter(options);
  const types = (options.type ?? []).flatMap((t) => t.split(','));
  for (const type of types) {
    if (!isEventType(type) && !isPluginEventType(type)) {
      throw new TendError(
        'TEND_USAGE',
        `unknown event type ${JSON.stringify(type.slice(0, 128))} (a core type, or a plugin's own: <plugin>.<name>)`,
      );
    }
  }
  const wanted = (e: TendEvent) =>
    (types.length === 0 || types.includes(e.type as string)) && (action === undefined || ofAction(e, action));
  const chosen =
    target === undefined || target === 'latest'
      ? newestSession(logs, options.includeReadOnly ?? false, (events) =>
          target === 'latest' ? true : action !== undefined && events.some((e) => ofAction(e, action)),
        )
      : { log: logs.find((l) => l.sessionId === target.toUpperCase()), skipped: [] };
  const { log } = chosen;
  if (!log) {
    const readOnly =
      chosen.skipped.length > 0
        ? ` (besides ${describeSkipped(chosen.skipped)}: --include-read-only shows them)`
        : '';
    throw new TendError(
      'TEND_USAGE',
      target === undefined
        ? `no session recorded in ${dir} has events of ${action}${readOnly}`
        : target === 'latest'
          ? `no sessions recorded in ${dir}${readOnly}`
          : `no session ${target} in ${dir}`,
      { detail: { hint: 'run `tend events` to list the recorded sessions' } },
    );
  }
  const read = 'events' in chosen ? chosen.events : undefined;
  if (read) process.stderr.write(describeChoice(log.sessionId, read.events, chosen.skipped));
  if (options.follow) {
    await followLog(log.file, wanted, options.json ?? false);
    return { exitCode: 0, data: [], human: '' };
  }
  const { events, skippedLines } = read ?? readSessionLog(log.file);
  warnSkipped(log.file, skippedLines);
  const selected = events.filter(wanted);
  return { exitCode: 0, data: selected, human: selected.map(formatEvent).join('\n') };
}

/**
 * The newest session whose events `matches`, passing over the read-only ones (`readOnlyCommands`)
 * unless they are included; `skipped` names the commands of those passed over.
 */
function newestSession(
  logs: readonly SessionLogInfo[],
  includeReadOnly: boolean,
  matches: (events: readonly TendEvent[]) => boolean,
): { log?: SessionLogInfo; events?: ReturnType<typeof readSessionLog>; skipped: string[] } {
  const skipped: string[] = [];
  for (const log of logs) {
    const read = readSessionLog(log.file);
    if (!matches(read.events)) continue;
    const command = startOf(read.events)?.payload.command;
    if (!includeReadOnly && command !== undefined && readOnlyCommands.has(command)) {
      skipped.push(command);
      continue;
    }
    return { log, events: read, skipped };
  }
  return { skipped };
}

function startOf(events: readonly TendEvent[]): TendEvent<'sessionStarted'> | undefined {
  return events.find((e) => e.type === 'sessionStarted') as TendEvent<'sessionStarted'> | undefined;
}

/** `2 tend status sessions, 1 tend logs session` */
function describeSkipped(commands: readonly string[]): string {
  const counts = new Map<string, number>();
  for (const c of commands) counts.set(c, (counts.get(c) ?? 0) + 1);
  return [...counts].map(([c, n]) => `${n} newer \`tend ${c}\` session${n === 1 ? '' : 's'}`).join(', ');
}

/**
 * The line that says which session `latest` (or `--action` alone) shows: its command and start,
 * and the read-only sessions passed over on the way.
 */
function describeChoice(sessionId: string, events: readonly TendEvent[], skipped: readonly string[]): string {
  const start = startOf(events);
  const what = start
    ? `\`tend ${[start.payload.command, ...start.payload.args].join(' ')}\`, started ${start.timestamp}`
    : 'no sessionStarted event';
  const passed = skipped.length > 0 ? `; passed over ${describeSkipped(skipped)} (--include-read-only)` : '';
  return `session ${sessionId}: ${what}${passed}\n`;
}

/** Prints events as they are appended, until the session ends or the command is interrupted. */
async function followLog(file: string, wanted: (e: TendEvent) => boolean, json: boolean): Promise<void> {
  const interrupted = new AbortController();
  const onSigint = () => interrupted.abort();
  process.once('SIGINT', onSigint);
  try {
    await readLines(file, {
      follow: true,
      signal: interrupted.signal,
      onLine(line, lineNumber) {
        if (!line) return;
        let event: unknown;
        try {
          event = JSON.parse(line);
        } catch {
          event = undefined;
        }
        if (!looksLikeEvent(event)) {
          warnSkipped(file, [lineNumber]);
          return;
        }
        if (wanted(event)) process.stdout.write((json ? JSON.stringify(event) : formatEvent(event)) + '\n');
        if (event.type === 'sessionCompleted' || event.type === 'sessionFailed') return 'stop';
      },
    });
  } finally {
    process.off('SIGINT', onSigint);
  }
}

export interface PushOptions extends GlobalOptions {
  retryQuarantined?: boolean;
  /** Seconds to keep trying before giving up (default 60). */
  timeout?: number;
}

/** The project's outbox directory and its configured server (`server:`, TEND_SERVER_URL, tend login). */
async function streamSettings(options: GlobalOptions) {
  const [{ loadProjectConfig }, { builtinPlugins }, { streamConnection }] = await Promise.all([
    import('../config/pipeline.js'),
    import('../plugins/builtin.js'),
    import('../session/stream.js'),
  ]);
  const { project } = await loadProjectConfig({
    root: options.root,
    cwd: process.cwd(),
    plugins: builtinPlugins(),
  });
  return { outboxDir: statePaths(project.root).outbox, connection: streamConnection(project.server) };
}

const noServerHint =
  'set server: in tend.yml, TEND_SERVER_URL and TEND_TOKEN, or run tend login --server URL --token T';

/** `tend events push`: sends everything waiting in the outbox; fails clearly when it cannot. */
export async function pushCommand(options: PushOptions): Promise<CommandResult<PushResult>> {
  const { outboxDir, connection } = await streamSettings(options);
  if (!connection)
    throw new TendError('TEND_SERVER_NOT_CONFIGURED', 'no tend server configured', {
      detail: { hint: noServerHint },
    });
  const timeoutS = options.timeout ?? 60;
  if (!Number.isFinite(timeoutS) || timeoutS <= 0) {
    throw new TendError(
      'TEND_USAGE',
      `--timeout expects a number of seconds, got "${String(options.timeout)}"`,
    );
  }
  const result = await pushOutbox({
    outboxDir,
    connection,
    timeoutMs: timeoutS * 1000,
    retryQuarantined: Boolean(options.retryQuarantined),
  });
  const { report, requeued } = result;
  if (report.unauthorized) {
    throw new TendError('TEND_AUTH', `${report.server} refused the token: ${report.unauthorized.message}`, {
      detail: {
        waiting: report.waiting,
        hint: 'check TEND_TOKEN or run tend login, then tend events push again',
      },
    });
  }
  if (report.waiting > 0) {
    throw new TendError(
      'TEND_SERVER',
      `${report.waiting} event(s) could not be delivered to ${report.server} within ${timeoutS} s: ${report.lastError ?? 'no answer'}`,
      {
        detail: {
          delivered: report.delivered,
          waiting: report.waiting,
          hint: 'they stay in the outbox; run tend events push again when the server is reachable (--timeout to wait longer)',
        },
      },
    );
  }
  const lines = [
    report.delivered === 0
      ? `Nothing to send: the outbox is empty.`
      : `Sent ${report.delivered} event(s) to ${report.server} in ${report.batches} batch(es) (${report.accepted} new, ${report.duplicates} already stored).`,
  ];
  if (requeued.batches > 0)
    lines.push(`Re-sent ${requeued.events} quarantined event(s) from ${requeued.batches} batch(es).`);
  for (const held of report.heldElsewhere) {
    lines.push(
      `${held.events} event(s) of session ${held.sessionId} are being sent by a running tend (pid ${held.owner?.pid ?? '?'}).`,
    );
  }
  if (report.isolated > 0) {
    lines.push(
      `${report.isolated} event(s) kept failing alone; they were set aside so the rest could be delivered.`,
    );
  }
  if (report.unreadableFiles.length > 0) {
    lines.push(
      `${report.skipped} line(s) of the outbox are not events; they were not sent and are kept in ${report.unreadableFiles.map(relativeToCwd).join(', ')}.`,
    );
  }
  if (report.quarantined > 0) {
    lines.push(
      `The server refused ${report.quarantined} event(s); they are kept in the quarantine (tend events outbox shows why; fix, then tend events push --retry-quarantined).`,
    );
  }
  return {
    exitCode: report.quarantined > 0 ? ExitCode.actionFailed : ExitCode.ok,
    data: result,
    human: lines.join('\n'),
  };
}

/** `tend events outbox`: what waits to be sent, who is sending it, and what the server refused. */
export async function outboxCommand(
  options: GlobalOptions,
): Promise<CommandResult<OutboxView & { server: string | null }>> {
  const { outboxDir, connection } = await streamSettings(options);
  const view = describeOutbox(outboxDir);
  const server = connection ? redactUrl(connection.url) : null;
  const mib = (n: number) => `${(n / 1024 / 1024).toFixed(2)} MiB`;
  const lines = [
    `server: ${server ?? `none configured (${noServerHint})`}`,
    `outbox: ${relativeToCwd(view.dir)}, ${view.events} event(s) waiting, ${mib(view.pendingBytes)} of ${mib(view.maxBytes)}`,
  ];
  if (view.segments.length > 0) {
    lines.push(
      '',
      formatTable(
        ['SESSION', 'EVENTS', 'BYTES', 'OLDEST', 'SENDER'],
        view.segments.map((s) => [
          s.sessionId,
          String(s.events),
          String(s.bytes),
          s.oldest ?? '',
          s.sender ? `pid ${s.sender.pid}${s.sender.alive ? '' : ' (gone)'}` : '',
        ]),
      ),
    );
  }
  for (const file of view.notSegments) lines.push(`skipped ${relativeToCwd(file)}: not a file`);
  if (view.quarantined.length > 0) {
    lines.push(
      '',
      `quarantined (refused by the server; resend with tend events push --retry-quarantined):`,
      formatTable(
        ['FILE', 'EVENTS', 'STATUS', 'ERROR'],
        view.quarantined.map((q) => [
          relativeToCwd(q.file),
          String(q.events),
          q.status !== undefined ? String(q.status) : '',
          `${q.code ?? ''} ${q.message}`.trim() +
            (q.isolated
              ? ` (${q.isolated.type} ${q.isolated.id} failed alone; the rest of its batch was delivered)`
              : ''),
        ]),
      ),
    );
  }
  return { exitCode: 0, data: { ...view, server }, human: lines.join('\n') };
}
