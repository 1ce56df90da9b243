/**
 * What `tend server` prints on stderr when it started on an empty database, once: where it
 * listens, its database, who executes cleanup, whether people sign in through an OpenID provider
 * (and then the redirect URI to register there), and the exact command that creates the first
 * admin token. The token itself is never printed here: stderr ends up in logs (a container's,
 * systemd's), and a token must never be logged. The command runs where the database is (this
 * host, or `kubectl exec` into the server's pod), as a token needs no running server to be made.
 */
import { dirname } from 'node:path';
import { redactUrl } from '../redact.js';

export interface FirstStart {
  url: string;
  /** The SQLite file, or the PostgreSQL URL without its password (`ServerDatabase.location`). */
  database: string;
  dialect: 'sqlite' | 'postgres';
  /** The embedded executor's clusters, or undefined when agents execute cleanup. */
  executor?: { kubeconfig?: string; contexts: readonly string[] };
  /**
   * Sign-in through an OpenID provider, or undefined when only token login is on. `redirectUri`
   * is the one the server sends the provider (`OidcSignIn.redirectUri`), known once it listens.
   */
  signIn?: { issuer: string; redirectUri: string };
  /** Whether TEND_DATABASE_URL names the database (the command can then say "$TEND_DATABASE_URL"). */
  databaseUrlFromEnvironment: boolean;
}

/** The command that makes the first admin token against this server's database. */
export function firstTokenCommand(start: FirstStart): string {
  const create = 'tend server token create --name admin --scope admin';
  if (start.dialect === 'sqlite') return `${create} --data-dir ${shellWord(dirname(start.database))}`;
  return start.databaseUrlFromEnvironment
    ? `${create} --database-url "$TEND_DATABASE_URL"`
    : `${create} --database-url ${shellWord(start.database)}   # with the password`;
}

export function firstStartSummary(start: FirstStart): string {
  const executor = start.executor
    ? `embedded, for ${start.executor.contexts.length > 0 ? `the contexts ${start.executor.contexts.join(', ')}` : 'the current context'} of ${start.executor.kubeconfig ?? 'KUBECONFIG (or ~/.kube/config)'}`
    : 'none in this process: run `tend agent` next to each cluster (docs/install.md)';
  return [
    '',
    'tend server started on a new database.',
    `  URL        ${start.url}  (dashboard; API under /api/v1; /healthz, /readyz)`,
    `  database   ${start.database} (${start.dialect === 'sqlite' ? 'SQLite' : 'PostgreSQL'})`,
    `  cleanup    ${executor}`,
    ...signInLines(start.signIn),
    '',
    'There is no API token yet. Create the first admin token where the database is (this host, or',
    "inside the server's container), then manage the others through the API:",
    '',
    `  ${firstTokenCommand(start)}`,
    `  tend login --server ${start.url} --token <the token it prints>`,
    `  tend server token create --server ${start.url} --name ci --scope ingest`,
    '',
  ].join('\n');
}

function signInLines(signIn: FirstStart['signIn']): string[] {
  if (!signIn) {
    return ['  sign-in    off: token login only (--oidc-issuer and the rest sign people in; docs/server.md)'];
  }
  return [
    `  sign-in    on, through the OpenID provider ${redactUrl(signIn.issuer)}`,
    `             register this redirect URI with it: ${signIn.redirectUri}`,
  ];
}

/** A word the shell reads as it is: quoted when it has anything but safe characters. */
function shellWord(value: string): string {
  return /^[A-Za-z0-9_./:@%+=,-]+$/.test(value) ? value : `'${value.replace(/'/g, `'\\''`)}'`;
}
