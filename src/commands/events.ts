/**
 * `tend events`: the local event log. Without an argument it lists recent sessions;
 * `tend events <sessionId|latest>` prints a session's events (`--type`, `--follow`, `--json`).
 */
import { openSync, readSync, closeSync, statSync } from 'node:fs';
import { setTimeout as delay } from 'node:timers/promises';
import path from 'node:path';
import { formatTable, type CommandResult, type GlobalOptions } from '../cli/output.js';
import { findProjectRoot } from '../config/load.js';
import { isEventType, type TendEvent } from '../events/catalog.js';
import { listSessionLogs, readSessionLog } from '../events/local-log.js';
import { TendError } from '../errors.js';
import { statePaths } from '../state/files.js';

export interface EventsOptions extends GlobalOptions {
  type?: string[];
  follow?: boolean;
  limit?: number;
}

export interface SessionSummary {
  sessionId: string;
  command?: string;
  environment?: string;
  namespace?: string;
  startedAt?: string;
  outcome: 'completed' | 'failed' | 'running or interrupted';
  events: number;
}

function eventsDir(options: GlobalOptions): string {
  return statePaths(findProjectRoot({ root: options.root, cwd: process.cwd() })).events;
}

function warnSkipped(file: string, skipped: number): void {
  if (skipped > 0) {
    process.stderr.write(
      `warning: skipped ${skipped} unreadable line(s) in ${file} (a write cut short by a crash)\n`,
    );
  }
}

export async function listSessionsCommand(options: EventsOptions): Promise<CommandResult<SessionSummary[]>> {
  const logs = listSessionLogs(eventsDir(options)).slice(0, options.limit ?? 20);
  const sessions = logs.map((log): SessionSummary => {
    const { events, skipped } = readSessionLog(log.file);
    warnSkipped(log.file, skipped);
    const started = events.find((e) => e.type === 'sessionStarted') as
      TendEvent<'sessionStarted'> | undefined;
    const ended = events.findLast((e) => e.type === 'sessionCompleted' || e.type === 'sessionFailed');
    return {
      sessionId: log.sessionId,
      command: started?.payload.command,
      environment: started?.payload.environment,
      namespace: started?.payload.namespace,
      startedAt: started?.timestamp,
      outcome: ended
        ? ended.type === 'sessionCompleted'
          ? 'completed'
          : 'failed'
        : 'running or interrupted',
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
      text = `${p.namespaceName} ${p.state} (${p.cause}, ${p.role}) by ${p.pluginName}${p.handler ? `.${p.handler}` : ''}`;
      break;
    case 'actionStatus':
      text = `${p.actionRef} ${p.state}${p.durationMs !== undefined ? ` ${p.durationMs}ms` : ''}`;
      break;
    case 'log':
      text = `[${p.level}] ${p.actionRef ? `${p.actionRef}: ` : ''}${p.message}`;
      break;
    default:
      text = JSON.stringify(p);
  }
  return `${time} ${event.type.padEnd(16)} ${text}`;
}

export async function showSessionCommand(
  target: string,
  options: EventsOptions,
): Promise<CommandResult<TendEvent[]>> {
  const dir = eventsDir(options);
  const logs = listSessionLogs(dir);
  const log = target === 'latest' ? logs[0] : logs.find((l) => l.sessionId === target.toUpperCase());
  if (!log) {
    throw new TendError(
      'TEND_USAGE',
      target === 'latest' ? `no sessions recorded in ${dir}` : `no session ${target} in ${dir}`,
      { detail: { hint: 'run `tend events` to list the recorded sessions' } },
    );
  }
  const types = (options.type ?? []).flatMap((t) => t.split(','));
  for (const type of types) {
    if (!isEventType(type)) throw new TendError('TEND_USAGE', `unknown event type "${type}"`);
  }
  const wanted = (e: TendEvent) => types.length === 0 || types.includes(e.type);
  if (options.follow) {
    await followLog(log.file, wanted, options.json ?? false);
    return { exitCode: 0, data: [], human: '' };
  }
  const { events, skipped } = readSessionLog(log.file);
  warnSkipped(path.relative(process.cwd(), log.file), skipped);
  const selected = events.filter(wanted);
  return { exitCode: 0, data: selected, human: selected.map(formatEvent).join('\n') };
}

/** Prints events as they are appended, until the session ends or the command is interrupted. */
async function followLog(file: string, wanted: (e: TendEvent) => boolean, json: boolean): Promise<void> {
  const fd = openSync(file, 'r');
  let position = 0;
  let rest = '';
  let interrupted = false;
  const onSigint = () => (interrupted = true);
  process.once('SIGINT', onSigint);
  try {
    const buffer = Buffer.alloc(64 * 1024);
    while (!interrupted) {
      const size = statSync(file).size;
      let ended = false;
      while (position < size) {
        const n = readSync(fd, buffer, 0, buffer.length, position);
        position += n;
        const lines = (rest + buffer.toString('utf8', 0, n)).split('\n');
        rest = lines.pop() ?? '';
        for (const line of lines) {
          if (!line) continue;
          let event: TendEvent;
          try {
            event = JSON.parse(line) as TendEvent;
          } catch {
            continue;
          }
          if (wanted(event)) process.stdout.write((json ? JSON.stringify(event) : formatEvent(event)) + '\n');
          if (event.type === 'sessionCompleted' || event.type === 'sessionFailed') ended = true;
        }
      }
      if (ended) return;
      await delay(100);
    }
  } finally {
    process.off('SIGINT', onSigint);
    closeSync(fd);
  }
}
