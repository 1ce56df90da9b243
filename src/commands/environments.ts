/** `tend environments` (alias `envs`): the server's record of environments, as a table or JSON. */
import { formatTable, type CommandResult, type GlobalOptions } from '../cli/output.js';
import { TendError } from '../errors.js';
import type { EnvironmentView } from '../server/schemas.js';
import { apiRequest } from '../remote/client.js';
import { redactUrl } from '../redact.js';
import { requireServer } from './cleanup-server.js';

export interface EnvironmentsOptions extends GlobalOptions {
  project?: string;
  state?: string;
  environment?: string;
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
  if (options.state && !['active', 'paused', 'cleaned'].includes(options.state)) {
    throw new TendError('TEND_USAGE', `--state must be active, paused or cleaned, got "${options.state}"`);
  }
  const connection = requireServer(options);
  const items: EnvironmentView[] = [];
  const wanted = options.all ? Infinity : (options.limit ?? 50);
  let cursor: string | null = null;
  do {
    const query = new URLSearchParams();
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
      ? `No environments recorded on ${redactUrl(connection.url)}${options.project || options.state ? ' match' : ''}.`
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
