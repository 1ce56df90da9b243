/**
 * `tend environments` (alias `envs`): the server's record of environments, as a table or JSON;
 * `tend envs <id>`: one environment with its resources, recent sessions and cleanup plan.
 */
import { formatTable, type CommandResult, type GlobalOptions } from '../cli/output.js';
import type { PlanItemView } from '../api/cleanup.js';
import type { EnvironmentView, ResourceView, SessionView } from '../api/views.js';
import { targetLabel } from '../api/views.js';
import type { ArchiveSummary } from '../cleanup/archive.js';
import { apiRequest } from '../remote/client.js';
import { redactUrl } from '../redact.js';
import { requireServer } from '../remote/credentials.js';

export interface EnvironmentsOptions extends GlobalOptions {
  project?: string;
  state?: string;
  environment?: string;
  search?: string;
  staleSince?: string;
  limit?: number;
  all?: boolean;
  server?: string;
  token?: string;
}

function ago(iso: string, now: Date): string {
  const s = Math.max(0, (now.getTime() - Date.parse(iso)) / 1000);
  if (s < 60) return `${Math.round(s)}s ago`;
  if (s < 3600) return `${Math.round(s / 60)}m ago`;
  if (s < 172_800) return `${Math.round(s / 3600)}h ago`;
  return `${Math.round(s / 86_400)}d ago`;
}

export async function environmentsCommand(
  options: EnvironmentsOptions,
): Promise<CommandResult<EnvironmentView[]>> {
  const connection = requireServer(options);
  const items: EnvironmentView[] = [];
  const wanted = options.all ? Infinity : (options.limit ?? 50);
  let cursor: string | null = null;
  do {
    const query = new URLSearchParams();
    if (options.search) query.set('search', options.search);
    if (options.project) query.set('project', options.project);
    if (options.state) query.set('state', options.state);
    if (options.environment) query.set('environment', options.environment);
    if (options.staleSince) query.set('staleSince', options.staleSince);
    query.set('limit', String(Math.min(500, wanted - items.length)));
    if (cursor) query.set('cursor', cursor);
    const page: { items: EnvironmentView[]; nextCursor: string | null } = await apiRequest(
      connection,
      `/api/v1/environments?${query.toString()}`,
    );
    items.push(...page.items);
    cursor = page.nextCursor;
  } while (cursor && items.length < wanted);

  const now = new Date();
  const human =
    items.length === 0
      ? `No environments recorded on ${redactUrl(connection.url)}${options.project || options.state || options.search ? ' match' : ''}.`
      : formatTable(
          [
            'PROJECT',
            'ENVIRONMENT',
            'NAMESPACE',
            'OWNER',
            'LAST ACTIVITY',
            'SOURCE',
            'STATE',
            'PROTECTED',
            'ID',
          ],
          items.map((e) => [
            e.project,
            e.name,
            e.namespace,
            e.owner ?? '-',
            ago(e.lastActivity.at, now),
            [
              e.lastActivity.command ? `tend ${e.lastActivity.command}` : e.lastActivity.type,
              e.lastActivity.user,
            ]
              .filter(Boolean)
              .join(' by ') || '-',
            e.state,
            e.protected ? 'yes' : 'no',
            e.id,
          ]),
        );
  return { data: items, human, exitCode: 0 };
}

export interface EnvironmentDetail {
  environment: EnvironmentView;
  /** The archive taken before its last deletion, while it can be restored (`tend restore`). */
  archive: ArchiveSummary | null;
  resources: ResourceView[];
  sessions: SessionView[];
  /** The last planning pass's decisions for the environment's namespaces. */
  plan: PlanItemView[];
}

/** "restorable until …": the archive's end of retention and what `tend restore` brings back. */
function restorable(archive: ArchiveSummary | null | undefined, id: string): string {
  if (!archive) return '-';
  const secrets =
    archive.secretsNotKept > 0
      ? `, ${archive.secretsNotKept} secret(s) by name only`
      : `, ${archive.secrets} secret(s)`;
  return (
    `${archive.restorableUntil} (archive of namespace ${archive.namespaceName}: ${archive.objects} object(s)${secrets}` +
    `${archive.restoredAt ? `; restored at ${archive.restoredAt}` : ''}; \`tend restore ${id}\`)`
  );
}

export async function environmentCommand(
  id: string,
  options: EnvironmentsOptions,
): Promise<CommandResult<EnvironmentDetail>> {
  const connection = requireServer(options);
  const detail = await apiRequest<Omit<EnvironmentDetail, 'plan'>>(
    connection,
    `/api/v1/environments/${encodeURIComponent(id)}`,
  );
  const e = detail.environment;
  const query = new URLSearchParams({
    within: '365d',
    project: e.project,
    environment: e.name,
    limit: '500',
  });
  const page = await apiRequest<{ serverTime: string; items: PlanItemView[] }>(
    connection,
    `/api/v1/cleanup/plan?${query.toString()}`,
  );
  const plan = page.items.filter((d) => d.environmentId === e.id);
  const now = new Date(page.serverTime);
  const source = [
    e.lastActivity.command ? `tend ${e.lastActivity.command}` : e.lastActivity.type,
    e.lastActivity.user,
  ]
    .filter(Boolean)
    .join(' by ');
  const facts: [string, string][] = [
    ['id', e.id],
    ['state', e.state],
    ['owner', e.owner ?? '-'],
    ['last activity', `${ago(e.lastActivity.at, now)} (${e.lastActivity.at})${source ? `, ${source}` : ''}`],
    ['policy', e.policy ? `${e.policy.action} after ${e.policy.afterInactivity} without activity` : 'none'],
    ['protected', e.protected ? `yes, by ${e.protectedBy ?? '?'} at ${e.protectedAt ?? '?'}` : 'no'],
    ['kept alive until', e.keepAliveUntil ? `${e.keepAliveUntil} (by ${e.keepAliveBy ?? '?'})` : '-'],
    ['first seen', e.createdAt],
    ['restorable until', restorable(detail.archive, e.id)],
  ];
  const width = Math.max(...facts.map(([k]) => k.length));
  const lines = [
    `${e.project} / ${e.name}  (namespace ${e.namespace})`,
    ...facts.map(([k, v]) => `  ${k.padEnd(width)}  ${v}`),
    '',
    'Resources:',
    detail.resources.length === 0
      ? '  none recorded'
      : formatTable(
          ['NAMESPACE', 'GEN', 'ROLE', 'OWNERSHIP', 'STATE', 'CLUSTER', 'LAST SEEN'],
          detail.resources.map((r) => [
            r.namespace,
            String(r.generation),
            r.role,
            r.ownership,
            r.state,
            targetLabel(r),
            ago(r.lastSeenAt, now),
          ]),
        ),
    '',
    'Cleanup plan:',
    plan.length === 0
      ? '  no decision (no policy applies, or no planning pass yet)'
      : formatTable(
          ['DECISION', 'DUE', 'NAMESPACE', 'WHY'],
          plan.map((d) => [
            d.kind === 'blocked' ? `blocked: ${d.reason}` : d.kind,
            d.kind === 'blocked' ? '-' : d.dueAt,
            d.namespace,
            d.sentence,
          ]),
        ),
    '',
    'Recent sessions:',
    detail.sessions.length === 0
      ? '  none'
      : formatTable(
          ['SESSION', 'COMMAND', 'USER', 'STATUS', 'LAST EVENT'],
          detail.sessions.map((s) => [
            s.id,
            s.command ? `tend ${s.command}` : '-',
            s.user ?? '-',
            s.status,
            ago(s.lastEventAt, now),
          ]),
        ),
  ];
  return {
    data: {
      environment: e,
      archive: detail.archive ?? null,
      resources: detail.resources,
      sessions: detail.sessions,
      plan,
    },
    human: lines.join('\n'),
    exitCode: 0,
  };
}
