/**
 * `tend server` (run the server) and `tend server migrate` (tokens, webhooks, backup: admin-cli.ts).
 * Without `--database-url` they use the SQLite file of one data directory per user
 * (`src/server/data-dir.ts`), whatever the working directory.
 */
import type { CommandResult, GlobalOptions } from '../cli/output.js';
import { TendError } from '../errors.js';
import { migrateToLatest, openDatabase } from './db/database.js';
import { serverDataDir } from './db/data-dir.js';
import { defaultArchiveMaxBytes } from '../cleanup/archive.js';
import { durationWording, parseDuration } from '../cleanup/policy.js';
import { oidcSettingsOf, type OidcFlags } from './oidc/settings.js';
import { readArchiveKey } from './cleanup/archive-key.js';
import { readSecretsKey } from './secrets.js';
import { readSecretText } from './secret-file.js';
import type { ArchiveSettings } from './cleanup/archives.js';

export interface ServerDatabaseOptions extends GlobalOptions {
  dataDir?: string;
  databaseUrl?: string;
}

export interface ServerOptions extends ServerDatabaseOptions, OidcFlags {
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
  /** `--price-cpu-hour`, `--price-gib-hour`: money per CPU core-hour and per GiB-hour in the savings report. */
  priceCpuHour?: string;
  priceGibHour?: string;
  /** `--archive-retention`: how long an archive taken before a deletion can be restored (default 7d). */
  archiveRetention?: string;
  /** `--archive-max-size`: the largest compressed archive taken, in MiB (default 8). */
  archiveMaxSize?: number;
  /** `--archive-key-file`: the key that seals archived Secrets; without it they are kept by name only. */
  archiveKeyFile?: string;
  /** `--secrets-key-file`: the key that seals the project secrets of `${secrets.*}`; without it the server keeps none. */
  secretsKeyFile?: string;
}

/** Highest price a flag takes: beyond it a typo, not a price. */
export const maxPrice = 1_000_000;

/** The savings report's prices of `tend server`'s flags, checked: finite decimal numbers from 0 to 1,000,000. */
export function pricesOf(options: ServerOptions): { cpuHour?: number; gibHour?: number } {
  const price = (flag: string, value: string | undefined) => {
    if (value === undefined) return undefined;
    const n = /^[0-9]+(\.[0-9]+)?$/.test(value.trim()) ? Number(value) : NaN;
    if (!Number.isFinite(n) || n < 0 || n > maxPrice) {
      throw new TendError(
        'TEND_USAGE',
        `--${flag} expects a price from 0 to ${maxPrice} such as 0.035, got "${value.slice(0, 64)}"`,
      );
    }
    return n;
  };
  const cpuHour = price('price-cpu-hour', options.priceCpuHour);
  const gibHour = price('price-gib-hour', options.priceGibHour);
  return { ...(cpuHour !== undefined ? { cpuHour } : {}), ...(gibHour !== undefined ? { gibHour } : {}) };
}

/** The GitHub webhook secret: the file's content (trimmed), else TEND_GITHUB_WEBHOOK_SECRET. */
export function githubSecretOf(options: ServerOptions): string | undefined {
  let secret: string | undefined;
  if (options.githubWebhookSecretFile !== undefined) {
    secret = readSecretText('--github-webhook-secret-file', options.githubWebhookSecretFile);
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
    archive: archiveSettingsOf(options),
  };
}

/** `--archive-retention` (1m to 365d), `--archive-max-size` (1 to 1024 MiB) and `--archive-key-file`, checked. */
export function archiveSettingsOf(options: ServerOptions): ArchiveSettings {
  const retention = options.archiveRetention ?? '7d';
  const retentionMs = /^[0-9]{1,9}[mhd]$/.test(retention) ? parseDuration(retention) : undefined;
  if (retentionMs === undefined || retentionMs < 60_000) {
    throw new TendError(
      'TEND_USAGE',
      `--archive-retention expects ${durationWording('from 1m to 365d')}, got "${retention.slice(0, 100)}"`,
    );
  }
  const maxSize = options.archiveMaxSize ?? defaultArchiveMaxBytes / 1_048_576;
  if (!Number.isInteger(maxSize) || maxSize < 1 || maxSize > 1024) {
    throw new TendError(
      'TEND_USAGE',
      `--archive-max-size expects a whole number of MiB from 1 to 1024, got "${options.archiveMaxSize}"`,
    );
  }
  return {
    retentionMs,
    maxBytes: maxSize * 1_048_576,
    ...(options.archiveKeyFile !== undefined ? { key: readArchiveKey(options.archiveKeyFile) } : {}),
  };
}

/** `--database-url` (or TEND_DATABASE_URL), else the SQLite file of the data directory (data-dir.ts). */
export function databaseOptions(options: ServerDatabaseOptions) {
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

/** Hosts that listen on every interface: where the server listens says nothing of how browsers reach it. */
const wildcardHosts = new Set(['0.0.0.0', '::', '[::]', '0:0:0:0:0:0:0:0']);

export async function serverCommand(options: ServerOptions): Promise<CommandResult<{ url: string }>> {
  const port = options.port ?? 7420;
  if (!Number.isInteger(port) || port < 0 || port > 65_535) parsePort(String(port));
  const cleanup = cleanupSettingsOf(options);
  const githubSecret = githubSecretOf(options);
  const secretsKey =
    options.secretsKeyFile !== undefined ? readSecretsKey(options.secretsKeyFile) : undefined;
  const publicUrl = publicUrlOf(options);
  const prices = pricesOf(options);
  const host = options.host ?? '127.0.0.1';
  const oidc = oidcSettingsOf(options, publicUrl);
  if (oidc && publicUrl === undefined && wildcardHosts.has(host)) {
    throw new TendError(
      'TEND_USAGE',
      `--oidc-issuer with --host ${host} needs --public-url: the provider sends browsers back to <public-url>/auth/callback, and ${host} (every interface) is no address a browser can reach`,
    );
  }
  const { runUntilSignalled } = await import('./start.js');
  const { url } = await runUntilSignalled({
    ...databaseOptions(options),
    cleanup,
    ...(githubSecret !== undefined ? { githubSecret } : {}),
    ...(secretsKey ? { secretsKey } : {}),
    ...(publicUrl !== undefined ? { publicUrl } : {}),
    prices,
    ...(oidc ? { oidc } : {}),
    port,
    host,
    logLevel: options.debug ? 'debug' : 'info',
    announceFirstStart: true,
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
