/**
 * `tend server` (run the server), `tend server migrate`, and `tend server token create|list|revoke`
 * (administration on the database directly: whoever can reach the database is an administrator).
 * Without `--database-url` they all use the SQLite file of one data directory per user
 * (`src/server/data-dir.ts`), whatever the working directory.
 */
import { formatTable, type CommandResult, type GlobalOptions } from '../cli/output.js';
import { TendError } from '../errors.js';
import { isTokenScope, tokenScopes } from '../server/auth.js';
import { migrateToLatest, openDatabase, type ServerDatabase } from '../server/db/database.js';
import { AuditRepository } from '../server/db/repositories/audit.js';
import { TokenRepository, type TokenInfo } from '../server/db/repositories/tokens.js';
import type { TokenScope } from '../server/db/schema.js';
import { serverDataDir } from '../server/data-dir.js';
import { parseDuration } from '../server/views.js';

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
  const { runUntilSignalled } = await import('../server/start.js');
  const { url } = await runUntilSignalled({
    ...databaseOptions(options),
    cleanup,
    port,
    host: options.host ?? '127.0.0.1',
    logLevel: options.debug ? 'debug' : 'info',
    ...(options.kubeconfig !== undefined || (options.context?.length ?? 0) > 0
      ? {
          executor: {
            ...(options.kubeconfig !== undefined ? { kubeconfig: options.kubeconfig } : {}),
            contexts: options.context ?? [],
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
