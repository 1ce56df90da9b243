/**
 * `tend server token create|list|revoke` and `tend server webhook add|list|remove`: on the
 * database of a server on this host (whoever can reach the database is an administrator), or,
 * with `--server URL`, through that server's API with an admin token (`routes/admin.ts`), so
 * that administration does not need the server's host. Both print the same. And
 * `tend server backup`: a consistent copy of the SQLite database.
 */
import { join } from 'node:path';
import { formatTable, type CommandResult } from '../cli/output.js';
import { targetKeyRegExp } from '../cleanup/targets.js';
import { TendError } from '../errors.js';
import { apiRequest, type Connection } from '../remote/client.js';
import { isTokenScope, projectBindingPattern, tokenNamePattern, tokenScopes } from './auth.js';
import { backupSqlite, type BackupReport } from './db/backup.js';
import { migrateToLatest, openDatabase, type ServerDatabase } from './db/database.js';
import { AuditRepository } from './db/repositories/audit.js';
import { TokenRepository, type TokenInfo } from './db/repositories/tokens.js';
import type { TokenScope } from './db/schema.js';
import { databaseFileName } from './db/data-dir.js';
import { NotificationService, type WebhookInfo, type WebhookListing } from './notifications/service.js';
import { checkWebhook } from './notifications/webhooks.js';
import { requireServer } from '../remote/credentials.js';
import { databaseOptions, type ServerDatabaseOptions } from './cli.js';

export interface AdminOptions extends ServerDatabaseOptions {
  /** `--server`: administer that server through its API instead of a database here. */
  server?: string;
  token?: string;
}

type NewToken = {
  name: string;
  scope: TokenScope;
  project: string | null;
  clusters: string[] | null;
  targets: string[] | null;
};
type NewWebhook = { url: string; events: string[]; format?: string; project?: string };

/** What administration does, wherever it happens. */
interface Administration {
  createToken(input: NewToken): Promise<TokenInfo & { token: string }>;
  listTokens(): Promise<TokenInfo[]>;
  revokeToken(idOrName: string): Promise<TokenInfo>;
  addWebhook(input: NewWebhook): Promise<WebhookInfo & { secret: string }>;
  listWebhooks(): Promise<WebhookListing[]>;
  removeWebhook(id: string): Promise<WebhookInfo>;
}

/**
 * Opens an existing database with migrations applied, runs `work`, closes it. Administration
 * never creates a database: a missing SQLite file is TEND_DATABASE_NOT_FOUND, naming the
 * directory looked in (a token in a fresh file no server reads would be lost).
 */
async function withDatabase<T>(
  options: ServerDatabaseOptions,
  work: (db: ServerDatabase) => Promise<T>,
): Promise<T> {
  const db = await openDatabase({ ...databaseOptions(options), mustExist: true });
  try {
    await migrateToLatest(db);
    return await work(db);
  } finally {
    await db.close();
  }
}

/** On the database: the changes are audited as made by `cli`. */
function onDatabase(options: ServerDatabaseOptions): Administration {
  const notifications = (db: ServerDatabase) => new NotificationService(db.db, db.reader, () => new Date());
  const audit = (db: ServerDatabase, action: string, detail: Record<string, unknown>) =>
    new AuditRepository(db.db).record({ actor: 'cli', action, detail });
  return {
    createToken: (input) =>
      withDatabase(options, async (db) => {
        const { token, info } = await new TokenRepository(db.db).create(input);
        await audit(db, 'token-create', {
          id: info.id,
          name: info.name,
          scope: info.scope,
          project: info.project,
          clusters: info.clusters,
          targets: info.targets,
        });
        return { ...info, token };
      }),
    listTokens: () => withDatabase(options, (db) => new TokenRepository(db.db).list()),
    revokeToken: (idOrName) =>
      withDatabase(options, async (db) => {
        const info = await new TokenRepository(db.db).revoke(idOrName);
        await audit(db, 'token-revoke', { id: info.id, name: info.name });
        return info;
      }),
    addWebhook: (input) =>
      withDatabase(options, async (db) => {
        const { webhook, secret } = await notifications(db).addWebhook(input, 'cli');
        await audit(db, 'webhook-add', {
          id: webhook.id,
          url: webhook.url,
          events: webhook.events,
          format: webhook.format,
          project: webhook.project,
        });
        return { ...webhook, secret };
      }),
    listWebhooks: () => withDatabase(options, (db) => notifications(db).listWebhooksWithDeliveries()),
    removeWebhook: (id) =>
      withDatabase(options, async (db) => {
        const info = await notifications(db).removeWebhook(id);
        await audit(db, 'webhook-remove', { id: info.id, url: info.url });
        return info;
      }),
  };
}

/** Through the API: the server audits the changes as made by the admin token. */
function throughApi(connection: Connection): Administration {
  const post = <T>(path: string, body: unknown) => apiRequest<T>(connection, path, { method: 'POST', body });
  return {
    createToken: ({ name, scope, project, clusters, targets }) =>
      post('/api/v1/tokens', {
        name,
        scope,
        ...(project !== null ? { project } : {}),
        ...(clusters !== null ? { clusters } : {}),
        ...(targets !== null ? { targets } : {}),
      }),
    listTokens: async () => (await apiRequest<{ items: TokenInfo[] }>(connection, '/api/v1/tokens')).items,
    revokeToken: (idOrName) => post(`/api/v1/tokens/${encodeURIComponent(idOrName)}/revoke`, {}),
    addWebhook: (input) => post('/api/v1/webhooks', input),
    listWebhooks: async () =>
      (await apiRequest<{ items: WebhookListing[] }>(connection, '/api/v1/webhooks')).items,
    removeWebhook: (id) =>
      apiRequest(connection, `/api/v1/webhooks/${encodeURIComponent(id)}`, { method: 'DELETE' }),
  };
}

function administration(options: AdminOptions): Administration {
  if (options.server === undefined) return onDatabase(options);
  if (options.dataDir !== undefined || options.databaseUrl !== undefined) {
    throw new TendError(
      'TEND_USAGE',
      '--server administers a server through its API: leave out --data-dir and --database-url',
    );
  }
  return throughApi(requireServer(options));
}

export interface TokenCreateOptions extends AdminOptions {
  name: string;
  project?: string;
  scope?: string;
  /** `--cluster <clusterId>` (repeatable, agent scope only): the clusters the token may act on. */
  cluster?: string[];
  /** `--target <kind>/<id>` (repeatable, agent scope only): executor targets of any plugin the token may act on. */
  target?: string[];
}

export async function tokenCreateCommand(
  options: TokenCreateOptions,
): Promise<CommandResult<TokenInfo & { token: string }>> {
  const scope = options.scope ?? 'ingest';
  if (!isTokenScope(scope)) {
    throw new TendError('TEND_USAGE', `--scope must be one of ${tokenScopes.join(', ')}, got "${scope}"`);
  }
  if (options.cluster && options.cluster.length > 0 && scope !== 'agent') {
    throw new TendError(
      'TEND_USAGE',
      '--cluster binds an agent token to clusters: use it with --scope agent',
    );
  }
  if (options.target && options.target.length > 0 && scope !== 'agent') {
    throw new TendError('TEND_USAGE', '--target binds an agent token to targets: use it with --scope agent');
  }
  // Checked here too: through --server, the API's schema error would name its body's fields.
  const badTarget = options.target?.find((t) => !targetKeyRegExp.test(t));
  if (badTarget !== undefined) {
    throw new TendError(
      'TEND_USAGE',
      `--target must be an executor target, <kind>/<id> (dirs/<rootId>, local/<hostId>, kubernetes/<clusterId>), got "${badTarget.slice(0, 100)}"`,
    );
  }
  // Checked here too: through --server, the API's schema error would name its body's fields, not the flags.
  if (options.project !== undefined && !projectBindingPattern.test(options.project)) {
    throw new TendError(
      'TEND_USAGE',
      `--project must be a project name, got "${options.project.slice(0, 64)}"`,
    );
  }
  if (!tokenNamePattern.test(options.name)) {
    throw new TendError(
      'TEND_USAGE',
      `--name must be 1-63 letters, digits, ".", "_" or "-" (starting with a letter or digit), got "${options.name}"`,
    );
  }
  const created = await administration(options).createToken({
    name: options.name,
    scope,
    project: options.project ?? null,
    clusters: options.cluster && options.cluster.length > 0 ? options.cluster : null,
    targets: options.target && options.target.length > 0 ? options.target : null,
  });
  const human = [
    `Created token "${created.name}" (id ${created.id}, scope ${created.scope}${created.project ? `, project ${created.project}` : ''}${created.clusters ? `, clusters ${created.clusters.join(', ')}` : ''}${created.targets ? `, targets ${created.targets.join(', ')}` : ''}).`,
    'It is shown only now; store it somewhere safe:',
    '',
    `  ${created.token}`,
    '',
  ].join('\n');
  return { data: created, human, exitCode: 0 };
}

export async function tokenListCommand(options: AdminOptions): Promise<CommandResult<TokenInfo[]>> {
  const tokens = await administration(options).listTokens();
  const human =
    tokens.length === 0
      ? 'No tokens yet. Create one with: tend server token create --name <name> --scope ingest|agent|read|admin'
      : formatTable(
          ['ID', 'NAME', 'SCOPE', 'PROJECT', 'PREFIX', 'CREATED', 'LAST USED', 'REVOKED'],
          tokens.map((t) => [
            t.id,
            t.name,
            t.scope,
            t.project ?? '-',
            `${t.prefix}…`,
            t.createdAt,
            t.lastUsedAt ?? '-',
            t.revokedAt ?? '-',
          ]),
        );
  return { data: tokens, human, exitCode: 0 };
}

export async function tokenRevokeCommand(
  idOrName: string,
  options: AdminOptions,
): Promise<CommandResult<TokenInfo>> {
  const info = await administration(options).revokeToken(idOrName);
  return { data: info, human: `Revoked token "${info.name}" (${info.id}).`, exitCode: 0 };
}

export interface WebhookAddOptions extends AdminOptions {
  url: string;
  event?: string[];
  format?: string;
  project?: string;
}

/** `tend server webhook add`: the webhook, and its signing secret shown this once. */
export async function webhookAddCommand(
  options: WebhookAddOptions,
): Promise<CommandResult<WebhookInfo & { secret: string }>> {
  const input = {
    url: options.url,
    events: options.event ?? [],
    ...(options.format !== undefined ? { format: options.format } : {}),
    ...(options.project !== undefined ? { project: options.project } : {}),
  };
  // Checked here too: through --server, the API's schema error would name its body's fields, not the flags.
  checkWebhook(input);
  const added = await administration(options).addWebhook(input);
  const human = [
    `Added webhook ${added.id}: ${added.events.join(', ')} to ${added.url} (${added.format}${added.project ? `, project ${added.project}` : ''}).`,
    'Its signing secret is shown only now; give it to the receiver (it verifies the tend-signature header):',
    '',
    `  ${added.secret}`,
    '',
  ].join('\n');
  return { data: added, human, exitCode: 0 };
}

export async function webhookListCommand(options: AdminOptions): Promise<CommandResult<WebhookListing[]>> {
  const listing = await administration(options).listWebhooks();
  const human =
    listing.length === 0
      ? 'No webhooks yet. Add one with: tend server webhook add --url URL --event cleanup.warning'
      : formatTable(
          ['ID', 'URL', 'EVENTS', 'FORMAT', 'PROJECT', 'DELIVERED', 'PENDING', 'FAILED', 'LAST ERROR'],
          listing.map((w) => [
            w.id,
            w.url,
            w.events.join(','),
            w.format,
            w.project ?? '-',
            String(w.deliveries.delivered),
            String(w.deliveries.pending),
            String(w.deliveries.failed),
            w.deliveries.lastError ?? '-',
          ]),
        );
  return { data: listing, human, exitCode: 0 };
}

export async function webhookRemoveCommand(
  id: string,
  options: AdminOptions,
): Promise<CommandResult<WebhookInfo>> {
  const info = await administration(options).removeWebhook(id);
  return { data: info, human: `Removed webhook ${info.id} (${info.url}).`, exitCode: 0 };
}

/** `tend server backup <file>`: SQLite only; PostgreSQL has pg_dump. */
export async function backupCommand(
  file: string,
  options: ServerDatabaseOptions,
): Promise<CommandResult<BackupReport>> {
  const { dataDir, databaseUrl } = databaseOptions(options);
  if (databaseUrl) {
    throw new TendError(
      'TEND_USAGE',
      'tend server backup copies an SQLite database; back up PostgreSQL with pg_dump (docs/install.md#upgrading)',
    );
  }
  const report = backupSqlite(join(dataDir, databaseFileName), file);
  const human = `Backed up ${report.source} to ${report.file} (${report.bytes} bytes).`;
  return { data: report, human, exitCode: 0 };
}
