/**
 * The argument table of `tend server` and its subcommands (run, migrate, backup, token, webhook),
 * apart from src/main.ts; the commands themselves are imported when one runs (cli.ts, admin-cli.ts).
 */
import { Option, type Command } from 'commander';
import { collect, execute } from '../cli/execute.js';

export function addServerCommands(program: Command): void {
  const server = addRunCommand(program);
  addMigrateCommand(server);
  addBackupCommand(server);
  addTokenCommands(server);
  addWebhookCommands(server);
}

/** The database options every subcommand that opens one takes. */
function db(c: Command): Command {
  return c
    .option(
      '--data-dir <dir>',
      'directory of the SQLite database tend.db (default: TEND_DATA_DIR, else $XDG_DATA_HOME/tend or ~/.local/share/tend)',
    )
    .option('--database-url <url>', 'PostgreSQL instead of SQLite: postgres://user:pass@host/db');
}

/** `tend server` itself: listen, plan and execute cleanup, serve the dashboard. */
function addRunCommand(program: Command): Command {
  const server = db(
    program
      .command('server')
      .description(
        'run the tend server: event ingest, registry, API, dashboard; with the global --kubeconfig ' +
          '(its current context, or each --context) it runs the embedded cleanup executor for those clusters',
      ),
  )
    .addOption(new Option('--port <port>', 'port to listen on').default(7420).argParser(Number))
    .option('--host <host>', 'address to listen on', '127.0.0.1')
    .option(
      '--cleanup-interval <duration>',
      'how often cleanup is planned (and executed), e.g. 30s, 5m',
      '30s',
    )
    .addOption(
      new Option('--cleanup-max-per-pass <n>', 'most new cleanup jobs one planning pass creates')
        .default(10)
        .argParser(Number),
    )
    .option(
      '--protect-namespace <glob>',
      'namespace names cleanup never touches, beyond kube-*, default and the system namespace (repeatable)',
      collect,
    )
    .option(
      '--system-namespace <name>',
      "the kubernetes provider's systemNamespace, never cleaned",
      'tend-system',
    )
    .option(
      '--plugin <module>',
      'a third-party plugin module the embedded cleanup executor serves (repeatable; with --set)',
      collect,
    )
    .option(
      '--set <plugin.key=value>',
      "a plugin's executor setting for the embedded executor (repeatable)",
      collect,
    )
    .option(
      '--public-url <url>',
      'the URL people open the dashboard at (keep-alive links in webhooks); default: the listening address',
    )
    .option(
      '--archive-retention <duration>',
      'how long the archive taken before a deletion can be restored with tend restore (1m to 365d)',
      '7d',
    )
    .addOption(
      new Option('--archive-max-size <MiB>', 'the largest compressed archive the server takes (MiB)')
        .default(8)
        .argParser(Number),
    )
    .option(
      '--archive-key-file <file>',
      'a 32-byte key (64 hex digits: openssl rand -hex 32) that seals archived Secrets with AES-256-GCM; without it they are kept by name only',
    )
    .option(
      '--secrets-key-file <file>',
      'a 32-byte key (64 hex digits: openssl rand -hex 32) that seals the project secrets ${secrets.NAME} reads (tend secrets set) with AES-256-GCM; without it the server keeps none',
    )
    .option(
      '--github-webhook-secret-file <file>',
      'enable POST /api/v1/integrations/github: the secret of the GitHub webhook, read from this file (or TEND_GITHUB_WEBHOOK_SECRET)',
    )
    .option(
      '--price-cpu-hour <price>',
      'what one CPU core-hour costs, for the savings report (`tend cleanup report`, dashboard, /metrics), e.g. 0.035',
    )
    .option(
      '--price-gib-hour <price>',
      'what one GiB-hour of memory costs, for the savings report, e.g. 0.004',
    );
  withSignIn(server).action(async (_opts, cmd: Command) =>
    execute(cmd, async () => (await import('./cli.js')).serverCommand(cmd.optsWithGlobals())),
  );
  return server;
}

/** Signing people in (OpenID Connect) and their roles. */
function withSignIn(c: Command): Command {
  return c
    .option(
      '--oidc-issuer <url>',
      'sign people in through this OpenID provider (its issuer URL; https://, or http:// on this host)',
    )
    .option('--oidc-client-id <id>', "the tend server's client id at the provider")
    .option('--oidc-client-secret-file <file>', 'the client secret, read from this file (never logged)')
    .option(
      '--oidc-groups-claim <claim>',
      "the ID token's claim that lists the person's groups (default: groups)",
    )
    .option(
      '--oidc-scope <scopes>',
      'the scopes asked for, space-separated (default: "openid email profile")',
    )
    .option(
      '--oidc-allow-http',
      'allow an http:// issuer that is not on this host (a test provider; never in production)',
    )
    .option(
      '--roles-file <file>',
      'YAML: the role (viewer, developer, admin) of groups and e-mail addresses per project; re-read when it changes',
    );
}

function addMigrateCommand(server: Command): void {
  db(server.command('migrate').description('apply pending database migrations and exit')).action(
    async (_opts, cmd: Command) =>
      execute(cmd, async () => (await import('./cli.js')).migrateCommand(cmd.optsWithGlobals())),
  );
}

const adminHelp = `
Without --server these work on the database of an existing server and never create one: without
--database-url they open tend.db in --data-dir, else TEND_DATA_DIR, else $XDG_DATA_HOME/tend
(~/.local/share/tend), and refuse (exit 2) when there is none. With --server URL they go through
that server's API with an admin token bound to no project (TEND_TOKEN, tend login, or --token).`;

/** Tokens and webhooks: on the database of a server on this host, or through a server's API (--server). */
function admin(c: Command): Command {
  return db(c.addHelpText('after', adminHelp))
    .option('--server <url>', 'administer that server through its API instead of a database here')
    .option('--token <token>', 'admin token for --server (default: TEND_TOKEN or tend login)');
}

const serverAdmin = () => import('./admin-cli.js');

function addBackupCommand(server: Command): void {
  db(
    server
      .command('backup <file>')
      .description(
        'write a consistent copy of the SQLite database to <file>, also while the server runs (PostgreSQL: pg_dump)',
      ),
  ).action(async (file: string, _opts, cmd: Command) =>
    execute(cmd, async () => (await serverAdmin()).backupCommand(file, cmd.optsWithGlobals())),
  );
}

function addTokenCommands(server: Command): void {
  const token = server.command('token').description('manage API tokens (prints a new token once)');
  admin(token.command('create').description('create a token'))
    .requiredOption('--name <name>', 'name of the token, e.g. ci')
    .option('--project <project>', 'restrict the token to one project')
    .option(
      '--scope <scope>',
      'ingest | agent | read | developer | admin (agent: ingest and the executor routes only; read: the viewer role, keep-alive and resume; developer and admin: those roles; all but agent include ingest)',
      'ingest',
    )
    .option('--cluster <clusterId>', 'agent scope: act only on this cluster (repeatable)', collect)
    .option(
      '--target <kind/id>',
      'agent scope: act only on this executor target of any plugin, e.g. dirs/<rootId> (repeatable)',
      collect,
    )
    .action(async (_opts, cmd: Command) =>
      execute(cmd, async () => (await serverAdmin()).tokenCreateCommand(cmd.optsWithGlobals())),
    );
  admin(token.command('list').description('list tokens (never their secrets)')).action(
    async (_opts, cmd: Command) =>
      execute(cmd, async () => (await serverAdmin()).tokenListCommand(cmd.optsWithGlobals())),
  );
  admin(token.command('revoke <idOrName>').description('revoke a token by id or name')).action(
    async (idOrName: string, _opts, cmd: Command) =>
      execute(cmd, async () => (await serverAdmin()).tokenRevokeCommand(idOrName, cmd.optsWithGlobals())),
  );
}

function addWebhookCommands(server: Command): void {
  const webhook = server
    .command('webhook')
    .description('manage webhooks: cleanup warnings and cleanup done, signed (prints a new secret once)');
  admin(webhook.command('add').description('add a webhook; prints its signing secret once'))
    .requiredOption('--url <url>', 'where deliveries are POSTed (http:// or https://)')
    .requiredOption('--event <event>', 'cleanup.warning | cleanup.done (repeatable)', collect)
    .option('--format <format>', "json (tend's payload) | slack (a Slack incoming-webhook message)", 'json')
    .option('--project <project>', "only this project's environments")
    .addHelpText(
      'after',
      `
Each delivery is signed: the header tend-signature is t=<unix seconds>,v1=<hex HMAC-SHA256 of
"<t>.<body>" with the secret>. A receiver recomputes it, compares in constant time and refuses a
t more than 5 minutes off (docs/cleanup.md#webhooks). Failed deliveries are retried with backoff.

Examples:
  tend server webhook add --url https://hooks.slack.com/services/T/B/X --event cleanup.warning --format slack
  tend server webhook add --url https://ops.example.com/tend --event cleanup.warning --event cleanup.done --project shop`,
    )
    .action(async (_opts, cmd: Command) =>
      execute(cmd, async () => (await serverAdmin()).webhookAddCommand(cmd.optsWithGlobals())),
    );
  admin(
    webhook.command('list').description('list webhooks (never their secrets) and their last deliveries'),
  ).action(async (_opts, cmd: Command) =>
    execute(cmd, async () => (await serverAdmin()).webhookListCommand(cmd.optsWithGlobals())),
  );
  admin(
    webhook.command('remove <id>').description('remove a webhook and its deliveries not sent yet'),
  ).action(async (id: string, _opts, cmd: Command) =>
    execute(cmd, async () => (await serverAdmin()).webhookRemoveCommand(id, cmd.optsWithGlobals())),
  );
}
