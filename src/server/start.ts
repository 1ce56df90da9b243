/**
 * Running the server as a process: open the database, apply migrations, listen, prune old
 * events, record the environment counts per state (the dashboard's chart), run the cleanup planning loop (and the embedded executor), and shut down gracefully on SIGTERM/SIGINT (stop accepting, finish in-flight requests,
 * close the database).
 */
import type { ExecutorPluginOptions } from '../executor/settings.js';
import pino from 'pino';
import { buildServer, logRedaction, type BuildServerOptions } from './app.js';
import { startPlanningLoop } from './cleanup/loop.js';
import type { CleanupSettings } from './cleanup/settings.js';
import type { App } from './services.js';
import { migrateToLatest, openDatabase, type OpenDatabaseOptions } from './db/database.js';
import { firstStartSummary } from './first-start.js';
import { EnvironmentRepository, pruneEvents } from './db/repositories/environments.js';

export interface StartOptions extends OpenDatabaseOptions {
  port?: number;
  host?: string;
  /** Keep raw events this long (ms); default 30 days. */
  eventRetentionMs?: number;
  logLevel?: string;
  /** `--cleanup-interval`, `--cleanup-max-per-pass`, `--protect-namespace`, `--system-namespace`. */
  cleanup?: Partial<CleanupSettings>;
  /**
   * The embedded cleanup executor (`--kubeconfig`, `--context`, `--plugin`, `--set`): the server
   * cleans these targets itself. Undefined: no executor in this process (agents serve the targets).
   */
  executor?: Pick<ExecutorPluginOptions, 'kubeconfig' | 'contexts' | 'pluginModules' | 'sets'>;
  /**
   * `--public-url`: the dashboard's address in keep-alive links and, with sign-in, the redirect
   * URI's (default: where it listens).
   */
  publicUrl?: string;
  /** `--github-webhook-secret-file` / TEND_GITHUB_WEBHOOK_SECRET. */
  githubSecret?: string;
  /** `--secrets-key-file`: the key that seals project secrets. */
  secretsKey?: BuildServerOptions['secretsKey'];
  /** `--price-cpu-hour`, `--price-gib-hour`: the savings report's prices. */
  prices?: BuildServerOptions['prices'];
  /** `--oidc-issuer` and the rest: people sign in through the OpenID provider. */
  oidc?: BuildServerOptions['oidc'];
  notifications?: BuildServerOptions['notifications'];
  /** Print what to do next on stderr when this start created the database (`tend server`). */
  announceFirstStart?: boolean;
}

export interface RunningServer {
  app: App;
  url: string;
  /** Stops accepting connections, waits for in-flight requests, closes the database. */
  close(): Promise<void>;
}

export async function startServer(options: StartOptions = {}): Promise<RunningServer> {
  const logger = pino(
    { level: options.logLevel ?? 'info', redact: logRedaction, base: { pid: process.pid } },
    pino.destination(2),
  );
  // The executor's plugins and settings first: a mistake there is said before anything starts.
  const served = options.executor
    ? await (
        await import('../executor/settings.js')
      ).servedPlugins((await import('../plugins/builtin.js')).builtinPlugins(), {
        ...options.executor,
        local: false,
        clustersByDefault: false,
        cwd: process.cwd(),
      })
    : undefined;
  if (options.oidc) {
    options.oidc.roles.reportReloadError = (err) =>
      logger.error(
        { err, file: options.oidc?.roles.file },
        'the roles file changed but does not check; the roles before stay in force',
      );
  }
  const db = await openDatabase(options);
  let created: boolean;
  try {
    const report = await migrateToLatest(db);
    if (report.applied.length > 0) logger.info({ applied: report.applied }, 'database migrated');
    created = report.applied.length === report.current.length;
  } catch (error) {
    await db.close();
    throw error;
  }
  const app = await buildServer({
    db,
    logger,
    cleanup: options.cleanup,
    ...(options.githubSecret !== undefined ? { githubSecret: options.githubSecret } : {}),
    ...(options.secretsKey ? { secretsKey: options.secretsKey } : {}),
    ...(options.oidc ? { oidc: options.oidc } : {}),
    ...(options.notifications ? { notifications: options.notifications } : {}),
    ...(options.prices ? { prices: options.prices } : {}),
  });
  // Today's count of environments per state, for the dashboard's chart of states over time:
  // recorded before the server answers, then every 10 minutes.
  const environments = new EnvironmentRepository(db.db, db.reader);
  const recordStates = async () => {
    try {
      await environments.recordStateCounts(new Date());
    } catch (err) {
      logger.warn({ err }, 'recording the environment counts per state failed');
    }
  };
  await recordStates();
  const address = await app.listen({ port: options.port ?? 7420, host: options.host ?? '127.0.0.1' });
  const url = address.replace('[::1]', 'localhost');
  app.oidc?.listeningAt(url);
  logger.info({ url, database: db.location }, `tend server listening on ${url}`);
  if (created && options.announceFirstStart) {
    process.stderr.write(
      firstStartSummary({
        url,
        database: db.location,
        dialect: db.dialect,
        ...(options.executor ? { executor: options.executor } : {}),
        ...(app.oidc
          ? { signIn: { issuer: app.oidc.settings.issuer, redirectUri: app.oidc.redirectUri } }
          : {}),
        databaseUrlFromEnvironment:
          options.databaseUrl !== undefined && options.databaseUrl === process.env.TEND_DATABASE_URL,
      }),
    );
  }

  const retention = options.eventRetentionMs ?? 30 * 86_400_000;
  const prune = async () => {
    try {
      const removed = await pruneEvents(db.db, new Date(Date.now() - retention).toISOString());
      if (removed > 0) logger.info({ removed }, 'pruned events past retention');
    } catch (err) {
      logger.warn({ err }, 'pruning events failed');
    }
    // Expired archives are never offered for a restore (their reads filter them): this frees
    // their space, with the events, once an hour.
    try {
      const pruned = await app.cleanup.archives.prune(app.cleanup.clock.now());
      if (pruned > 0) logger.info({ pruned }, `archives: ${pruned} expired archive(s) pruned`);
    } catch (err) {
      logger.warn({ err }, 'pruning archives failed');
    }
  };
  // Once at start too: a restart with a lower --archive-retention prunes what it no longer keeps.
  void prune();
  const pruneTimer = setInterval(() => void prune(), 3600_000);
  pruneTimer.unref();

  const statesTimer = setInterval(() => void recordStates(), 600_000);
  statesTimer.unref();

  const planning = startPlanningLoop(app.cleanup.pass, logger);
  app.notifications.publicUrl = options.publicUrl ?? url;
  const notifying = app.notifications.startLoop(logger);
  const embedded = served
    ? (await import('../executor/embedded.js')).startEmbeddedExecutor({
        queue: app.cleanup.queue,
        plugins: served,
        protection: {
          patterns: app.cleanup.settings.protectPatterns,
          systemName: app.cleanup.settings.systemNamespace,
        },
        intervalMs: app.cleanup.settings.intervalMs,
        log: (level, message) => logger[level]({ executor: 'embedded' }, message),
      })
    : undefined;

  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= (async () => {
      await embedded?.stop();
      await planning.stop();
      await notifying.stop();
      clearInterval(pruneTimer);
      clearInterval(statesTimer);
      await app.close();
    })();
    return closing;
  };
  return { app, url, close };
}

/**
 * Runs until SIGTERM or SIGINT, then shuts down gracefully. Resolves when the server has
 * closed; a second signal exits at once.
 */
export async function runUntilSignalled(options: StartOptions): Promise<{ url: string }> {
  const server = await startServer(options);
  await new Promise<void>((resolve, reject) => {
    let signalled = false;
    const onSignal = (signal: NodeJS.Signals) => {
      if (signalled) process.exit(130);
      signalled = true;
      server.app.log.info({ signal }, 'shutting down: finishing in-flight requests');
      server.close().then(resolve, reject);
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
  });
  server.app.log.info('tend server stopped');
  return { url: server.url };
}
