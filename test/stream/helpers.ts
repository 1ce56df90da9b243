/**
 * Fixtures for the event stream tests: the real server as a child process (so it can be killed)
 * on SQLite, or on a PostgreSQL database of the test's, tokens, what the server stored, what the
 * CLI recorded, and projects that emit many events quickly.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { streamedEventTypes, type TendEvent } from '../../src/events/catalog.js';
import { parseJsonLines } from '../../src/state/files.js';
import { migrateToLatest, openDatabase } from '../../src/server/db/database.js';
import { openSqlite } from '../../src/server/db/sqlite.js';
import { TokenRepository } from '../../src/server/db/repositories/tokens.js';
import type { TestDatabase } from '../server/helpers.js';
import { freePort, makeProject, repoRoot, tendBin, waitFor } from '../helpers/project.js';

export { freePort };

export interface ServerProcess {
  url: string;
  port: number;
  child: ChildProcess;
  stderr: () => string;
  /** Stops it (SIGKILL by default) and waits until it is gone. */
  kill(signal?: NodeJS.Signals): Promise<void>;
}

export interface StreamServer {
  dataDir: string;
  dbFile: string;
  tokens: { ingest: string; read: string; agent: string; admin: string };
  /** The running server process, if any. */
  current: ServerProcess | undefined;
  /**
   * Starts the server (again) on `port` (a free one by default); `prefix` runs it under another
   * program (`faketime -f +9h`), with `env` added to its environment.
   */
  start(port?: number, o?: { prefix?: string[]; env?: Record<string, string> }): Promise<ServerProcess>;
  /** Event ids the server stored, with how many times each (SQLite only). */
  eventIds(): string[];
  close(): Promise<void>;
}

const dirs: string[] = [];

/**
 * The server on an SQLite file of its own, or on `options.database` (PostgreSQL: `--database-url`);
 * `options.args` are more `tend server` flags.
 */
export async function createStreamServer(
  options: { database?: TestDatabase; args?: string[] } = {},
): Promise<StreamServer> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'tend-stream-server-'));
  dirs.push(dataDir);
  const dbFile = path.join(dataDir, 'tend.db');
  const databaseUrl = options.database?.url;
  const db = await (databaseUrl ? options.database!.open() : openDatabase({ sqliteFile: dbFile }));
  let tokens: StreamServer['tokens'];
  try {
    await migrateToLatest(db);
    const repo = new TokenRepository(db.db);
    tokens = {
      ingest: (await repo.create({ name: 'cli', scope: 'ingest' })).token,
      read: (await repo.create({ name: 'dev', scope: 'read' })).token,
      agent: (await repo.create({ name: 'agent', scope: 'agent' })).token,
      admin: (await repo.create({ name: 'ops', scope: 'admin' })).token,
    };
  } finally {
    await db.close();
  }
  const where = databaseUrl ? ['--database-url', databaseUrl] : ['--data-dir', dataDir];
  const server: StreamServer = {
    dataDir,
    dbFile,
    tokens,
    current: undefined,
    async start(port, o = {}) {
      const p = port ?? (await freePort());
      const args = [tendBin, 'server', '--port', String(p), ...where, ...(options.args ?? [])];
      const [command, ...rest] = [...(o.prefix ?? []), process.execPath, ...args];
      // Under a prefix (faketime) the server is the prefix's child: both in a process group of
      // their own, which kill() signals and waits out (a killed faketime left its server running).
      const group = o.prefix !== undefined;
      const child = spawn(command!, rest, {
        cwd: repoRoot,
        detached: group,
        stdio: ['ignore', 'ignore', 'pipe'],
        env: { ...process.env, CI: 'true', ...o.env },
      });
      let stderr = '';
      child.stderr!.on('data', (d) => (stderr += d));
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      const url = `http://127.0.0.1:${p}`;
      await waitFor(
        async () => {
          if (child.exitCode !== null) throw new Error(`the server exited: ${stderr}`);
          try {
            return (await fetch(`${url}/healthz`)).ok;
          } catch {
            return false;
          }
        },
        'the tend server to answer /healthz',
        20_000,
      );
      const proc: ServerProcess = {
        url,
        port: p,
        child,
        stderr: () => stderr,
        async kill(signal = 'SIGKILL') {
          if (group) {
            signalGroup(child.pid!, signal);
            await exited;
            await waitFor(() => !signalGroup(child.pid!, 0), 'the server under its prefix to end', 20_000);
          } else if (child.exitCode === null && child.signalCode === null) child.kill(signal);
          await exited;
          if (server.current === proc) server.current = undefined;
        },
      };
      server.current = proc;
      return proc;
    },
    eventIds() {
      if (databaseUrl) throw new Error('eventIds reads the SQLite file; this server runs on PostgreSQL');
      const sqlite = openSqlite(dbFile, { readOnly: true });
      try {
        return (sqlite.prepare('select id from events').all() as { id: string }[]).map((r) => r.id);
      } finally {
        sqlite.close();
      }
    },
    async close() {
      await server.current?.kill();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return server;
}

/** Signals every process of the group `pgid` leads; false when none is left. */
function signalGroup(pgid: number, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false;
  }
}

/** Every event the CLI recorded in its local logs, of the types that are streamed. */
export function recordedStreamedEvents(root: string): TendEvent[] {
  const dir = path.join(root, '.tend', 'events');
  let names: string[];
  try {
    names = readdirSync(dir).filter((n) => n.endsWith('.jsonl'));
  } catch {
    return [];
  }
  return names.flatMap((n) =>
    parseJsonLines<TendEvent>(readFileSync(path.join(dir, n), 'utf8')).records.filter((e) =>
      streamedEventTypes.has(e.type),
    ),
  );
}

/** Every event in the outbox segments right now (acknowledged or not). */
export function outboxEvents(root: string): TendEvent[] {
  const dir = path.join(root, '.tend', 'outbox');
  let names: string[];
  try {
    names = readdirSync(dir).filter((n) => n.endsWith('.jsonl'));
  } catch {
    return [];
  }
  return names.flatMap((n) => parseJsonLines<TendEvent>(readFileSync(path.join(dir, n), 'utf8')).records);
}

/** The outbox files (segments, acks, locks), for asserting that a drained outbox is empty. */
export function outboxFiles(root: string): string[] {
  try {
    return readdirSync(path.join(root, '.tend', 'outbox')).filter((n) => n !== 'quarantine');
  } catch {
    return [];
  }
}

/** Asserts nothing: returns the ids that appear more than once (for messages). */
export function repeated(ids: string[]): string[] {
  const seen = new Set<string>();
  const twice = new Set<string>();
  for (const id of ids) (seen.has(id) ? twice : seen).add(id);
  return [...twice];
}

/** A project of `builds` exec Build actions that do nothing: many events, quickly. */
export function busyProject(builds: number, name = 'busy'): string {
  const actions = Array.from(
    { length: builds },
    (_, i) => `kind: Build\ntype: exec\nname: b${i}\nspec: { command: ["true"] }\n`,
  ).join('---\n');
  return makeProject({
    'tend.yml': `kind: Project
name: ${name}
defaultEnvironment: dev
environments:
  - name: dev
    defaultNamespace: ${name}-dev
providers:
  - name: exec
`,
    'builds.tend.yml': actions,
  });
}

/** Environment for a CLI that streams to `url` with `token`, isolated from the user's login. */
export function streamEnv(
  url: string | undefined,
  token: string | undefined,
  extra: Record<string, string> = {},
) {
  return {
    TEND_CONFIG_DIR: path.join(os.tmpdir(), 'tend-stream-no-login'),
    TEND_SERVER_URL: url ?? '',
    TEND_TOKEN: token ?? '',
    ...extra,
  };
}

export function removeServerDirs(): void {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
}

/**
 * A started stream server for the test file (`stream.server`): created before its tests, closed
 * and its directory removed after them.
 */
export function useStreamServer(): { readonly server: StreamServer } {
  const stream = {} as { server: StreamServer };
  beforeAll(async () => {
    stream.server = await createStreamServer();
    await stream.server.start();
  });
  afterAll(async () => {
    await stream.server.close();
    removeServerDirs();
  });
  return stream;
}
