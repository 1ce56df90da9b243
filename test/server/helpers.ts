/**
 * Test fixtures for the server: a fresh database per test file (an SQLite temp file, or a
 * PostgreSQL database created for the file and dropped afterwards, so files run in parallel),
 * an app with tokens of every scope, and event factories.
 */
import {
  copyFileSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHash, randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import pg from 'pg';
import { monotonicFactory } from 'ulidx';
import type { CleanupPolicy } from '../../src/cleanup/policy.js';
import type { PullRequestRef, TendEvent } from '../../src/events/catalog.js';
import { buildServer, type BuildServerOptions } from '../../src/server/app.js';
import type { App } from '../../src/server/services.js';
import { migrateToLatest, openDatabase, type ServerDatabase } from '../../src/server/db/database.js';
import { TokenRepository } from '../../src/server/db/repositories/tokens.js';
import type { Database, TokenScope } from '../../src/server/db/schema.js';

export const dialects = ['sqlite', 'postgres'] as const;
export type Dialect = (typeof dialects)[number];

export const adminDatabaseUrl =
  process.env.TEND_TEST_DATABASE_URL ?? 'postgres://postgres:postgres@127.0.0.1:5432/postgres';

/** A database of its own for one test file: open it as often as needed, drop it at the end. */
export interface TestDatabase {
  dialect: Dialect;
  /** postgres://… for PostgreSQL, undefined for SQLite. */
  url?: string;
  /** The SQLite file, for SQLite. */
  file?: string;
  /** The directory holding the SQLite file (for `--data-dir`). */
  dir?: string;
  open(): Promise<ServerDatabase>;
  drop(): Promise<void>;
}

/**
 * A database of its own for one test file (or test): empty, or with `{ migrated: true }` a copy
 * of a database the migrations were applied to once (see `migratedTemplate`), as if
 * `migrateToLatest` had just run on it.
 */
export async function createTestDatabase(
  dialect: Dialect,
  o: { migrated?: boolean } = {},
): Promise<TestDatabase> {
  if (dialect === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'tend-server-test-'));
    const file = join(dir, 'tend.db');
    if (o.migrated) copyFileSync(await migratedTemplate('sqlite'), file);
    return {
      dialect,
      file,
      dir,
      open: () => openDatabase({ sqliteFile: file }),
      drop: async () => rmSync(dir, { recursive: true, force: true }),
    };
  }
  const name = `tend_test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminDatabaseUrl });
  await admin.connect();
  try {
    await admin.query(
      o.migrated
        ? `create database ${name} template ${await migratedTemplate('postgres')}`
        : `create database ${name}`,
    );
  } finally {
    await admin.end();
  }
  const url = new URL(adminDatabaseUrl);
  url.pathname = `/${name}`;
  return {
    dialect,
    url: url.toString(),
    open: () => openDatabase({ databaseUrl: url.toString() }),
    drop: async () => {
      const c = new pg.Client({ connectionString: adminDatabaseUrl });
      await c.connect();
      try {
        await c.query(`drop database if exists ${name} with (force)`);
      } finally {
        await c.end();
      }
    },
  };
}

/**
 * The migrations applied once to a database that is then only ever copied: an SQLite file in the
 * temp directory, a PostgreSQL database (CREATE DATABASE … TEMPLATE). Applying them costs about
 * a second of CPU (SQLite) or of the PostgreSQL server's time per database, paid by every test
 * that starts a server; a copy costs next to nothing. Named by a hash of src/server/db (the
 * migrations and what runs them), so a changed migration makes a new one; the template stays
 * for the next run, as a cache does. Published whole (renamed into place once migrated), so a
 * run killed while building one leaves no half-migrated template.
 */
const templates = new Map<Dialect, Promise<string>>();
export function migratedTemplate(dialect: Dialect): Promise<string> {
  let template = templates.get(dialect);
  if (!template) {
    template = dialect === 'sqlite' ? sqliteTemplate() : postgresTemplate();
    templates.set(dialect, template);
  }
  return template;
}

const dbSources = new URL('../../src/server/db/', import.meta.url);
function migrationsHash(): string {
  const hash = createHash('sha256');
  for (const entry of readdirSync(dbSources, { recursive: true, encoding: 'utf8' }).sort()) {
    if (!entry.endsWith('.ts')) continue;
    hash.update(entry).update(readFileSync(new URL(entry, dbSources)));
  }
  return hash.digest('hex').slice(0, 16);
}

async function sqliteTemplate(): Promise<string> {
  const file = join(tmpdir(), `tend-test-template-${migrationsHash()}.db`);
  if (existsSync(file)) return file;
  const dir = mkdtempSync(join(tmpdir(), 'tend-test-template-'));
  try {
    const building = join(dir, 'tend.db');
    const database = await openDatabase({ sqliteFile: building });
    try {
      await migrateToLatest(database);
    } finally {
      await database.close();
    }
    // Closing checkpoints the WAL into the file and removes it: the file alone is the database.
    if (existsSync(`${building}-wal`)) throw new Error(`${building}-wal remains after closing the database`);
    renameSync(building, file);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return file;
}

async function postgresTemplate(): Promise<string> {
  const name = `tend_test_template_${migrationsHash()}`;
  const admin = new pg.Client({ connectionString: adminDatabaseUrl });
  await admin.connect();
  try {
    // One builder at a time across the run's workers (and other runs on this server).
    await admin.query('select pg_advisory_lock(7420002)');
    const found = await admin.query('select 1 from pg_database where datname = $1', [name]);
    if (found.rowCount === 0) {
      const building = `${name}_${randomBytes(4).toString('hex')}`;
      await admin.query(`create database ${building}`);
      const url = new URL(adminDatabaseUrl);
      url.pathname = `/${building}`;
      try {
        const database = await openDatabase({ databaseUrl: url.toString() });
        try {
          await migrateToLatest(database);
        } finally {
          await database.close();
        }
      } catch (error) {
        await admin.query(`drop database if exists ${building} with (force)`);
        throw error;
      }
      await admin.query(`alter database ${building} rename to ${name}`);
    }
  } finally {
    await admin.end(); // ends the session: its advisory lock with it
  }
  return name;
}

export interface TestServer {
  app: App;
  database: ServerDatabase;
  testDb: TestDatabase;
  tokens: Record<TokenScope | 'revoked' | 'otherProject', string>;
  /** Authorization header for a token. */
  auth(token: string): { authorization: string };
  close(): Promise<void>;
}

export async function createTestServer(
  dialect: Dialect,
  options: Partial<BuildServerOptions> = {},
): Promise<TestServer> {
  const testDb = await createTestDatabase(dialect, { migrated: true });
  const database = await testDb.open();
  await migrateToLatest(database);
  const repo = new TokenRepository(database.db);
  const make = async (name: string, scope: TokenScope, project?: string) =>
    (await repo.create({ name, scope, project })).token;
  const tokens = {
    ingest: await make('ci', 'ingest'),
    agent: await make('agent', 'agent'),
    read: await make('dev', 'read'),
    developer: await make('maker', 'developer'),
    admin: await make('ops', 'admin'),
    revoked: await make('old', 'admin'),
    otherProject: await make('other', 'admin', 'other'),
  };
  await repo.revoke('old');
  const app = await buildServer({ db: database, ...options });
  await app.ready();
  return {
    app,
    database,
    testDb,
    tokens,
    auth: (token) => ({ authorization: `Bearer ${token}` }),
    close: async () => {
      await app.close();
      await testDb.drop();
    },
  };
}

const nextUlid = monotonicFactory();
export const newId = (): string => nextUlid();

export interface EnvSpec {
  project?: string;
  environment?: string;
  namespace?: string;
  user?: string;
  command?: string;
}

const k8sTarget = {
  kind: 'kubernetes' as const,
  clusterId: 'cluster-1',
  server: 'https://k8s:6443',
  context: 'dev',
};

/** Events of one CLI session in an environment, with helpers for the common event types. */
export function session(spec: EnvSpec = {}) {
  const sessionId = newId();
  const project = spec.project ?? 'shop';
  const environment = spec.environment ?? 'dev';
  const namespace = spec.namespace ?? `${project}-${spec.user ?? 'alice'}`;
  const base = <T extends TendEvent['type']>(type: T, payload: unknown) =>
    ({ id: newId(), type, sessionId, timestamp: new Date().toISOString(), payload }) as TendEvent;
  return {
    sessionId,
    project,
    environment,
    namespace,
    started: (policy?: CleanupPolicy, pullRequest?: PullRequestRef) =>
      base('sessionStarted', {
        command: spec.command ?? 'deploy',
        args: [],
        project,
        environment,
        namespace,
        user: spec.user ?? 'alice',
        hostId: 'host-1',
        cliVersion: '0.1.0',
        ...(policy ? { cleanupPolicy: policy } : {}),
        ...(pullRequest ? { pullRequest } : {}),
      }),
    heartbeat: () => base('sessionHeartbeat', { project, environment, namespace, uptimeMs: 30_000 }),
    completed: () =>
      base('sessionCompleted', { durationMs: 1200, succeeded: 2, cached: 1, failed: 0, aborted: 0 }),
    failed: (code = 'TEND_ACTION_FAILED', message = 'boom') =>
      base('sessionFailed', { durationMs: 10, error: { code, message } }),
    action: (actionRef = 'deploy.api') =>
      base('actionStatus', { actionRef, kind: 'Deploy', version: 'v-abc', state: 'ready', durationMs: 5 }),
    ns: (
      state: 'ready' | 'terminating' | 'missing',
      extra: {
        uid?: string;
        name?: string;
        role?: 'app' | 'build' | 'system';
        cause?: 'created' | 'observed' | 'deleted';
        detail?: Record<string, unknown>;
      } = {},
    ) =>
      base('namespaceStatus', {
        pluginName: 'kubernetes',
        providerName: 'kubernetes',
        namespaceName: extra.name ?? namespace,
        ...(extra.uid ? { namespaceUid: extra.uid } : {}),
        state,
        role: extra.role ?? 'app',
        cause: extra.cause ?? (state === 'missing' ? 'deleted' : 'created'),
        target: k8sTarget,
        project,
        environment,
        ...(extra.detail ? { detail: extra.detail } : {}),
      }),
  };
}

export async function postEvents(server: TestServer, events: unknown[], token = server.tokens.ingest) {
  return server.app.inject({
    method: 'POST',
    url: '/api/v1/events',
    headers: server.auth(token),
    payload: { events },
  });
}

export async function getJson<T = unknown>(server: TestServer, url: string, token = server.tokens.read) {
  const res = await server.app.inject({ method: 'GET', url, headers: server.auth(token) });
  return { status: res.statusCode, body: res.json<T>() };
}

/** How many rows a table holds. */
export async function countRows(db: Kysely<Database>, table: keyof Database): Promise<number> {
  const row = await db
    .selectFrom(table)
    .select((eb) => eb.fn.countAll().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/**
 * Posts the dashboard's login form as a browser does: its page first (the CSRF cookie and the
 * same value in the form), then the form with both. `payload` may override `_csrf`.
 */
export async function postLogin(app: App, payload: { token?: string; next?: string; _csrf?: string }) {
  const form = await app.inject({ method: 'GET', url: '/login' });
  const csrf = /name="_csrf" value="([^"]+)"/.exec(form.body)?.[1] ?? '';
  const cookie = form.cookies.find((c) => c.name === 'tend_login_csrf')!;
  return app.inject({
    method: 'POST',
    url: '/login',
    headers: { cookie: `tend_login_csrf=${cookie.value}` },
    payload: { _csrf: csrf, ...payload },
  });
}

/**
 * Logs in to a server listening at `url` as a browser does (the form's CSRF token and cookie,
 * then the POST); returns the `tend_session=…` cookie, or throws with the answer's status.
 */
export async function loginOverHttp(url: string, token: string): Promise<string> {
  const form = await fetch(`${url}/login`);
  const csrf = /name="_csrf" value="([^"]+)"/.exec(await form.text())?.[1] ?? '';
  const csrfCookie = /tend_login_csrf=[^;]+/.exec(form.headers.get('set-cookie') ?? '')?.[0] ?? '';
  const login = await fetch(`${url}/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: csrfCookie },
    body: new URLSearchParams({ token, next: '/', _csrf: csrf }).toString(),
    redirect: 'manual',
  });
  const session = /tend_session=[^;]+/.exec(login.headers.get('set-cookie') ?? '')?.[0];
  if (login.status !== 303 || !session) throw new Error(`login answered ${login.status}`);
  return session;
}
