/**
 * The server's automatic cleanup from the CLI: `tend cleanup plan|status|enforce|halt|resume`,
 * `tend cleanup breaker reset`, `tend keep-alive` for the current environment, and the line
 * `tend status` prints about the current environment's planned cleanup.
 */
import { formatTable, type CommandResult, type GlobalOptions } from '../cli/output.js';
import { TendError } from '../errors.js';
import { redactUrl } from '../redact.js';
import { apiRequest, type Connection } from '../remote/client.js';
import { formatDuration } from '../cleanup/format.js';
import type { CleanupStatusView, PlanItemView, TransitionView } from '../api/cleanup.js';
import type { PlanPage } from '../remote/cleanup-plan.js';
import type { EnvironmentView } from '../api/views.js';
import { requireServer } from '../remote/credentials.js';
import { openProject } from './context.js';

export interface ServerCommandOptions extends GlobalOptions {
  server?: string;
  token?: string;
}

export interface PlanData {
  generatedAt: string | null;
  halted: boolean;
  items: PlanItemView[];
  /** The schedules' sleeps and wakes within the window. */
  transitions: TransitionView[];
  /** False when the server left some of them out (the soonest of each environment are listed). */
  transitionsComplete: boolean;
}

/** "in 3h 12m", "3h 12m ago". */
function relative(iso: string, now: Date): string {
  const ms = Date.parse(iso) - now.getTime();
  return ms >= 0 ? `in ${formatDuration(ms)}` : `${formatDuration(-ms)} ago`;
}

export async function cleanupPlanCommand(
  options: ServerCommandOptions & { within?: string; project?: string; limit?: number },
): Promise<CommandResult<PlanData>> {
  const connection = requireServer(options);
  const wanted = options.limit ?? 200;
  const items: PlanItemView[] = [];
  let page: PlanPage;
  let cursor: string | null = null;
  let transitions: TransitionView[] = [];
  let transitionsComplete = true;
  do {
    const query = new URLSearchParams({ within: options.within ?? '24h' });
    if (options.project) query.set('project', options.project);
    query.set('limit', String(Math.min(500, wanted - items.length)));
    if (cursor) query.set('cursor', cursor);
    page = await apiRequest<PlanPage>(connection, `/api/v1/cleanup/plan?${query.toString()}`);
    items.push(...page.items);
    if (page.transitions) transitions = page.transitions;
    if (page.transitionsComplete === false) transitionsComplete = false;
    cursor = page.nextCursor;
  } while (cursor && items.length < wanted);
  const now = new Date(page.serverTime);
  const lines: string[] = [];
  if (page.halted) lines.push('Cleanup is HALTED: nothing is deleted until `tend cleanup unhalt`.', '');
  if (items.length === 0) {
    lines.push(
      page.generatedAt
        ? `Nothing planned within ${options.within ?? '24h'}${options.project ? ` for ${options.project}` : ''}.`
        : 'No planning pass has run yet.',
    );
  } else {
    lines.push(
      formatTable(
        ['DECISION', 'WHEN', 'PROJECT', 'ENVIRONMENT', 'NAMESPACE', 'WHY'],
        items.map((d) => [
          d.kind === 'blocked' ? `blocked: ${d.reason}` : d.warning ? 'warning' : d.kind,
          d.kind === 'blocked' ? '-' : relative(d.dueAt, now),
          d.project,
          d.environment,
          d.namespace,
          d.sentence,
        ]),
      ),
    );
  }
  if (transitions.length > 0) {
    lines.push(
      '',
      `Schedules within ${options.within ?? '24h'}:`,
      formatTable(
        ['WHEN', 'PROJECT', 'ENVIRONMENT', 'TRANSITION', 'LOCAL', 'UTC'],
        transitions.map((t) => [
          relative(t.at, now),
          t.project,
          t.environment,
          t.kind === 'sleep' ? 'sleep (pause)' : 'wake (resume)',
          t.local,
          t.utc,
        ]),
      ),
    );
    if (!transitionsComplete) {
      lines.push(`(only the soonest of each environment: more fall within ${options.within ?? '24h'})`);
    }
  }
  if (page.generatedAt) lines.push('', `Planned ${relative(page.generatedAt, now)} by the server.`);
  return {
    data: { generatedAt: page.generatedAt, halted: page.halted, items, transitions, transitionsComplete },
    human: lines.join('\n'),
    exitCode: 0,
  };
}

export async function cleanupEnforceCommand(
  options: ServerCommandOptions & { project: string; environment?: string },
): Promise<
  CommandResult<{
    enforced: { project: string; environment: string; afterInactivity: string; action: string }[];
  }>
> {
  const connection = requireServer(options);
  const result = await apiRequest<{
    enforced: { project: string; environment: string; afterInactivity: string; action: string }[];
  }>(connection, '/api/v1/cleanup/enforce', {
    method: 'POST',
    body: { project: options.project, ...(options.environment ? { environment: options.environment } : {}) },
  });
  const human = result.enforced
    .map(
      (p) => `Enforced ${p.project}/${p.environment}: ${p.action} after ${p.afterInactivity} of inactivity.`,
    )
    .join('\n');
  return { data: result, human, exitCode: 0 };
}

export async function cleanupHaltCommand(
  halt: boolean,
  options: ServerCommandOptions,
): Promise<CommandResult<{ halted: boolean; changed: boolean }>> {
  const connection = requireServer(options);
  const result = await apiRequest<{ halted: boolean; changed: boolean }>(
    connection,
    `/api/v1/cleanup/${halt ? 'halt' : 'resume'}`,
    { method: 'POST' },
  );
  const human = halt
    ? result.changed
      ? 'Cleanup halted: nothing is planned or started until `tend cleanup unhalt`.'
      : 'Cleanup was already halted.'
    : result.changed
      ? 'Cleanup unhalted: automatic cleanup plans and runs again.'
      : 'Cleanup was not halted.';
  return { data: result, human, exitCode: 0 };
}

/** How `tend cleanup status` words the last pass's outcome. */
const passWords: Record<NonNullable<CleanupStatusView['lastPassOutcome']>, string> = {
  ok: 'ok',
  partial: 'PARTIAL (some environments were left out)',
  failed: 'FAILED',
  skipped: 'SKIPPED (it planned nothing)',
};

export async function cleanupStatusCommand(
  options: ServerCommandOptions,
): Promise<CommandResult<CleanupStatusView>> {
  const connection = requireServer(options);
  const status = await apiRequest<CleanupStatusView>(connection, '/api/v1/cleanup/status');
  const now = new Date();
  const lines: string[] = [
    status.halted
      ? `Cleanup is HALTED${status.haltedBy ? ` (by ${status.haltedBy})` : ''}: nothing is deleted until \`tend cleanup resume\`.`
      : 'Cleanup is running.',
    status.lastPassAt
      ? `Last planning pass ${relative(status.lastPassAt, now)}: ${passWords[status.lastPassOutcome ?? 'ok']}${status.lastPassNote ? ` — ${status.lastPassNote}` : ''}.`
      : 'No planning pass has run yet.',
  ];
  const section = (title: string, headers: string[], rows: string[][]) =>
    lines.push('', `${title}:`, rows.length === 0 ? '  none' : formatTable(headers, rows));
  section(
    'Inventories held back as suspect (nothing applied, nothing cleaned on the target)',
    ['TARGET', 'WHY', 'SINCE'],
    status.suspectInventories.map((i) => [i.targetKey, i.reason, relative(i.since, now)]),
  );
  section(
    'Open circuit breakers',
    ['PROJECT', 'OPENED', 'DUE', 'ACTIVE'],
    status.breakers.map((b) => [b.project, relative(b.openedAt, now), String(b.due), String(b.active)]),
  );
  section(
    'Executors',
    ['TARGET', 'EXECUTOR', 'LAST SEEN'],
    status.executors.map((e) => [
      e.description || e.targetKey,
      `${e.name} (${e.kind})`,
      relative(e.lastSeenAt, now),
    ]),
  );
  section(
    'Unrecorded (marked as tend’s, never recorded: shown, never deleted)',
    ['TARGET', 'NAME', 'MARKED AS'],
    status.unrecorded.map((u) => [u.targetKey, u.namespace, `${u.project ?? '?'} / ${u.environment ?? '?'}`]),
  );
  return { data: status, human: lines.join('\n'), exitCode: 0 };
}

export async function breakerResetCommand(
  options: ServerCommandOptions & { project: string },
): Promise<CommandResult<{ project: string; reset: boolean }>> {
  const connection = requireServer(options);
  const result = await apiRequest<{ project: string; reset: boolean }>(
    connection,
    `/api/v1/cleanup/breakers/${encodeURIComponent(options.project)}/reset`,
    { method: 'POST' },
  );
  return { data: result, human: `The circuit breaker of ${options.project} is closed again.`, exitCode: 0 };
}

/** The server's record of the project's current environment (by project, name and namespace). */
async function currentEnvironment(
  connection: Connection,
  where: { project: string; environment: string; namespace: string },
): Promise<EnvironmentView> {
  const query = new URLSearchParams({ project: where.project, environment: where.environment, limit: '500' });
  const page = await apiRequest<{ items: EnvironmentView[] }>(
    connection,
    `/api/v1/environments?${query.toString()}`,
  );
  const env = page.items.find((e) => e.namespace === where.namespace);
  if (!env) {
    throw new TendError(
      'TEND_ENVIRONMENT_NOT_FOUND',
      `${redactUrl(connection.url)} has no record of ${where.project}/${where.environment} in namespace ${where.namespace}`,
      {
        detail: {
          hint: 'run a tend command in it first (tend deploy, tend build), so the server records it',
        },
      },
    );
  }
  return env;
}

export async function keepAliveCommand(
  options: ServerCommandOptions & { for?: string },
): Promise<CommandResult<{ environment: EnvironmentView }>> {
  const opened = await openProject(options);
  const connection = requireServer({ server: options.server ?? opened.project.server, token: options.token });
  const env = await currentEnvironment(connection, {
    project: opened.project.name,
    environment: opened.environment.name,
    namespace: opened.environment.namespace,
  });
  const result = await apiRequest<{ environment: EnvironmentView }>(
    connection,
    `/api/v1/environments/${encodeURIComponent(env.id)}/keep-alive`,
    { method: 'POST', body: { for: options.for ?? '24h' } },
  );
  return {
    data: result,
    human: `Kept ${env.project}/${env.name} (${env.namespace}) alive until ${result.environment.keepAliveUntil}: no automatic cleanup before then.`,
    exitCode: 0,
  };
}

/**
 * `tend protect|unprotect [<id>]` (admin): the environment with that id, else the project's
 * current one; automatic cleanup never touches a protected environment.
 */
export async function protectCommand(
  protect: boolean,
  id: string | undefined,
  options: ServerCommandOptions,
): Promise<CommandResult<{ environment: EnvironmentView }>> {
  let connection: Connection;
  let envId: string;
  if (id !== undefined) {
    connection = requireServer(options);
    envId = id;
  } else {
    const opened = await openProject(options);
    connection = requireServer({ server: options.server ?? opened.project.server, token: options.token });
    envId = (
      await currentEnvironment(connection, {
        project: opened.project.name,
        environment: opened.environment.name,
        namespace: opened.environment.namespace,
      })
    ).id;
  }
  const result = await apiRequest<{ environment: EnvironmentView }>(
    connection,
    `/api/v1/environments/${encodeURIComponent(envId)}/${protect ? 'protect' : 'unprotect'}`,
    { method: 'POST' },
  );
  const e = result.environment;
  return {
    data: result,
    human: protect
      ? `Protected ${e.project}/${e.name} (${e.namespace}): automatic cleanup never touches it until \`tend unprotect\`.`
      : `Unprotected ${e.project}/${e.name} (${e.namespace}): its cleanup policy applies again.`,
    exitCode: 0,
  };
}
