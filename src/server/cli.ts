/**
 * `tend server` (run the server), `tend server migrate`, and `tend server token create|list|revoke`
 * (administration on the database directly: whoever can reach the database is an administrator).
 * Without `--database-url` they all use the SQLite file of one data directory per user
 * (`src/server/data-dir.ts`), whatever the working directory.
 */
import { readFileSync } from 'node:fs';
import { formatTable, type CommandResult, type GlobalOptions } from '../cli/output.js';
import { TendError } from '../errors.js';
import { isTokenScope, tokenScopes } from './auth.js';
import { migrateToLatest, openDatabase, type ServerDatabase } from './db/database.js';
import { AuditRepository } from './db/repositories/audit.js';
import { TokenRepository, type TokenInfo } from './db/repositories/tokens.js';
import type { TokenScope } from './db/schema.js';
import { serverDataDir } from './data-dir.js';
import { parseDuration } from '../cleanup/policy.js';
import { NotificationService, type WebhookInfo } from './notifications/service.js';

export interface ServerDatabaseOptions extends GlobalOptions {
  dataDir?: string;
  databaseUrl?: string;
}

export interface ServerOptions extends ServerDatabaseOptions {
  port?: number;
  host?: string;
  /** `--cleanup-interval`: planning (and embedded executor) passes, e.g. `30s`. */
  cleanupInterval?: string;
  /** `--cleanup-max-per-pass`: most new cleanup jobs one planning pass creates. */
  cleanupMaxPerPass?: number;
  /** `--protect-namespace <glob>` (repeatable): names cleanup never touches. */
  protectNamespace?: string[];
  /** `--system-namespace`: the provider's shared namespace, never cleaned. */
  systemNamespace?: string;
  /** `--kubeconfig`, `--context` (repeatable): the embedded cleanup executor serves these clusters. */
  kubeconfig?: string;
  context?: string[];
  /** `--plugin`, `--set` (repeatable): third-party plugins the embedded executor serves, and settings. */
  plugin?: string[];
  set?: string[];
  /** `--public-url`: the dashboard's address in keep-alive links. */
  publicUrl?: string;
  /** `--github-webhook-secret-file` (else TEND_GITHUB_WEBHOOK_SECRET): enables the GitHub route. */
  githubWebhookSecretFile?: string;
}

/** The GitHub webhook secret: the file's content (trimmed), else TEND_GITHUB_WEBHOOK_SECRET. */
export function githubSecretOf(options: ServerOptions): string | undefined {
  let secret: string | undefined;
  if (options.githubWebhookSecretFile !== undefined) {
    try {
      secret = readFileSync(options.githubWebhookSecretFile, 'utf8').trim();
    } catch (error) {
      throw new TendError(
        'TEND_USAGE',
        `--github-webhook-secret-file: cannot read ${options.githubWebhookSecretFile}: ${(error as Error).message}`,
      );
    }
  } else {
    secret = process.env.TEND_GITHUB_WEBHOOK_SECRET?.trim() || undefined;
  }
  if (secret !== undefined && (secret.length < 16 || secret.length > 1024)) {
    throw new TendError(
      'TEND_USAGE',
      'the GitHub webhook secret must be 16 to 1024 characters (generate one with `openssl rand -hex 32`)',
    );
  }
  return secret;
}

function publicUrlOf(options: ServerOptions): string | undefined {
  if (options.publicUrl === undefined) return undefined;
  if (!/^https?:\/\/[^\s]{1,2000}$/.test(options.publicUrl)) {
    throw new TendError(
      'TEND_USAGE',
      `--public-url must be an http:// or https:// URL, got "${options.publicUrl.slice(0, 100)}"`,
    );
  }
  return options.publicUrl;
}

/** The cleanup settings of `tend server`'s flags, checked. */
export function cleanupSettingsOf(options: ServerOptions) {
  const intervalMs = parseDuration(options.cleanupInterval ?? '30s');
  if (intervalMs === undefined || intervalMs < 1000 || intervalMs > 86_400_000) {
    throw new TendError(
      'TEND_USAGE',
      `--cleanup-interval expects a duration from 1s to 1d such as "30s" or "5m", got "${options.cleanupInterval}"`,
    );
  }
  const maxPerPass = options.cleanupMaxPerPass ?? 10;
  if (!Number.isInteger(maxPerPass) || maxPerPass < 0 || maxPerPass > 100_000) {
    throw new TendError(
      'TEND_USAGE',
      `--cleanup-max-per-pass expects a whole number from 0 to 100000, got "${options.cleanupMaxPerPass}"`,
    );
  }
  return {
    intervalMs,
    maxPerPass,
    protectPatterns: options.protectNamespace ?? [],
    systemNamespace: options.systemNamespace ?? 'tend-system',
  };
}

/** `--database-url` (or TEND_DATABASE_URL), else the SQLite file of the data directory (data-dir.ts). */
function databaseOptions(options: ServerDatabaseOptions) {
  return {
    dataDir: serverDataDir(options.dataDir),
    databaseUrl: options.databaseUrl ?? process.env.TEND_DATABASE_URL,
  };
}

export function parsePort(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65_535) {
    throw new TendError('TEND_USAGE', `--port expects a port number from 0 to 65535, got "${value}"`);
  }
  return n;
}

export async function serverCommand(options: ServerOptions): Promise<CommandResult<{ url: string }>> {
  const port = options.port ?? 7420;
  if (!Number.isInteger(port) || port < 0 || port > 65_535) parsePort(String(port));
  const cleanup = cleanupSettingsOf(options);
  const githubSecret = githubSecretOf(options);
  const publicUrl = publicUrlOf(options);
  const { runUntilSignalled } = await import('./start.js');
  const { url } = await runUntilSignalled({
    ...databaseOptions(options),
    cleanup,
    ...(githubSecret !== undefined ? { githubSecret } : {}),
    ...(publicUrl !== undefined ? { publicUrl } : {}),
    port,
    host: options.host ?? '127.0.0.1',
    logLevel: options.debug ? 'debug' : 'info',
    ...(options.kubeconfig !== undefined ||
    (options.context?.length ?? 0) > 0 ||
    (options.plugin?.length ?? 0) > 0 ||
    (options.set?.length ?? 0) > 0
      ? {
          executor: {
            ...(options.kubeconfig !== undefined ? { kubeconfig: options.kubeconfig } : {}),
            contexts: options.context ?? [],
            pluginModules: options.plugin ?? [],
            sets: options.set ?? [],
          },
        }
      : {}),
  });
  return { data: { url }, human: '', exitCode: 0 };
}

/**
 * Opens an existing database with migrations applied, runs `work`, closes it. Token
 * administration never creates a database: a missing SQLite file is TEND_DATABASE_NOT_FOUND,
 * naming the directory looked in (a token in a fresh file no server reads would be lost).
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

export async function migrateCommand(
  options: ServerDatabaseOptions,
): Promise<CommandResult<{ database: string; applied: string[]; current: string[] }>> {
  const db = await openDatabase(databaseOptions(options));
  try {
    const report = await migrateToLatest(db);
    const human =
      report.applied.length > 0
        ? `Applied ${report.applied.join(', ')} to ${db.location}.`
        : `${db.location} is up to date (${report.current.at(-1)}).`;
    return { data: { database: db.location, ...report }, human, exitCode: 0 };
  } finally {
    await db.close();
  }
}

export interface TokenCreateOptions extends ServerDatabaseOptions {
  name: string;
  project?: string;
  scope?: string;
  /** `--cluster <clusterId>` (repeatable, agent scope only): the clusters the token may act on. */
  cluster?: string[];
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
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/.test(options.name)) {
    throw new TendError(
      'TEND_USAGE',
      `--name must be 1-63 letters, digits, ".", "_" or "-" (starting with a letter or digit), got "${options.name}"`,
    );
  }
  return withDatabase(options, async (db) => {
    const { token, info } = await new TokenRepository(db.db).create({
      name: options.name,
      scope: scope as TokenScope,
      project: options.project ?? null,
      clusters: options.cluster ?? null,
    });
    await new AuditRepository(db.db).record({
      actor: 'cli',
      action: 'token-create',
      detail: {
        id: info.id,
        name: info.name,
        scope: info.scope,
        project: info.project,
        clusters: info.clusters,
      },
    });
    const human = [
      `Created token "${info.name}" (id ${info.id}, scope ${info.scope}${info.project ? `, project ${info.project}` : ''}${info.clusters ? `, clusters ${info.clusters.join(', ')}` : ''}).`,
      'It is shown only now; store it somewhere safe:',
      '',
      `  ${token}`,
      '',
    ].join('\n');
    return { data: { ...info, token }, human, exitCode: 0 };
  });
}

export async function tokenListCommand(options: ServerDatabaseOptions): Promise<CommandResult<TokenInfo[]>> {
  return withDatabase(options, async (db) => {
    const tokens = await new TokenRepository(db.db).list();
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
  });
}

export async function tokenRevokeCommand(
  idOrName: string,
  options: ServerDatabaseOptions,
): Promise<CommandResult<TokenInfo>> {
  return withDatabase(options, async (db) => {
    const info = await new TokenRepository(db.db).revoke(idOrName);
    await new AuditRepository(db.db).record({
      actor: 'cli',
      action: 'token-revoke',
      detail: { id: info.id, name: info.name },
    });
    return { data: info, human: `Revoked token "${info.name}" (${info.id}).`, exitCode: 0 };
  });
}

export interface WebhookAddOptions extends ServerDatabaseOptions {
  url: string;
  event?: string[];
  format?: string;
  project?: string;
}

/** `tend server webhook add`: the webhook, and its signing secret shown this once. */
export async function webhookAddCommand(
  options: WebhookAddOptions,
): Promise<CommandResult<WebhookInfo & { secret: string }>> {
  return withDatabase(options, async (db) => {
    const service = new NotificationService(db.db, db.reader, () => new Date());
    const { webhook, secret } = await service.addWebhook(
      {
        url: options.url,
        events: options.event ?? [],
        ...(options.format !== undefined ? { format: options.format } : {}),
        ...(options.project !== undefined ? { project: options.project } : {}),
      },
      'cli',
    );
    await new AuditRepository(db.db).record({
      actor: 'cli',
      action: 'webhook-add',
      detail: {
        id: webhook.id,
        url: webhook.url,
        events: webhook.events,
        format: webhook.format,
        project: webhook.project,
      },
    });
    const human = [
      `Added webhook ${webhook.id}: ${webhook.events.join(', ')} to ${webhook.url} (${webhook.format}${webhook.project ? `, project ${webhook.project}` : ''}).`,
      'Its signing secret is shown only now; give it to the receiver (it verifies the tend-signature header):',
      '',
      `  ${secret}`,
      '',
    ].join('\n');
    return { data: { ...webhook, secret }, human, exitCode: 0 };
  });
}

export interface WebhookListing extends WebhookInfo {
  deliveries: { pending: number; delivered: number; failed: number; lastError: string | null };
}

export async function webhookListCommand(
  options: ServerDatabaseOptions,
): Promise<CommandResult<WebhookListing[]>> {
  return withDatabase(options, async (db) => {
    const service = new NotificationService(db.db, db.reader, () => new Date());
    const webhooks = await service.listWebhooks();
    const stats = await service.repository.deliveryCounts();
    const listing = webhooks.map((w) => ({
      ...w,
      deliveries: stats.get(w.id) ?? { pending: 0, delivered: 0, failed: 0, lastError: null },
    }));
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
  });
}

export async function webhookRemoveCommand(
  id: string,
  options: ServerDatabaseOptions,
): Promise<CommandResult<WebhookInfo>> {
  return withDatabase(options, async (db) => {
    const info = await new NotificationService(db.db, db.reader, () => new Date()).removeWebhook(id);
    await new AuditRepository(db.db).record({
      actor: 'cli',
      action: 'webhook-remove',
      detail: { id: info.id, url: info.url },
    });
    return { data: info, human: `Removed webhook ${info.id} (${info.url}).`, exitCode: 0 };
  });
}
