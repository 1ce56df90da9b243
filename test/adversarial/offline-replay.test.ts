/**
 * Offline work replayed: `tend deploy`, `tend cleanup env`, `tend deploy`, `tend cleanup env`
 * while the server cannot be reached (or before `tend login`), then one `tend deploy` with the
 * server up. The server's record must end as the machine is: the environment active, its one
 * live resource the environment on disk (its uid), `ready` and owned, and a planning pass plans
 * it (no `not-owned`): with the host sequence on the events, and without one (the order the queue
 * is sent in, oldest first, is then all the server has). Also when the old sessions' events reach
 * the server after the current one's — their segments held by another process during the deploy,
 * then sent by `tend events push`: by the host sequence, a late replay never moves the record
 * backwards. The real CLI, the real `tend server`, on SQLite and PostgreSQL.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { PlanItemView } from '../../src/api/cleanup.js';
import type { EnvironmentView, ResourceView } from '../../src/api/views.js';
import { tryLock, type HeldLock } from '../../src/outbox/lock.js';
import { listSegmentIds, lockFile, segmentFile } from '../../src/outbox/segments.js';
import type { TendEvent } from '../../src/events/catalog.js';
import { copyExample, removeProjects, runTend, waitFor } from '../helpers/project.js';
import { createTestDatabase, dialects, type TestDatabase } from '../server/helpers.js';
import {
  createStreamServer,
  freePort,
  removeServerDirs,
  streamEnv,
  type StreamServer,
} from '../stream/helpers.js';

const scratch: string[] = [];
const tempDir = (prefix: string) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  scratch.push(dir);
  return dir;
};

afterAll(() => {
  removeProjects();
  removeServerDirs();
  for (const dir of scratch.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe.each(dialects)('offline work replayed to the server (%s)', (dialect) => {
  let database: TestDatabase | undefined;
  let server: StreamServer | undefined;
  /** Runs `tend cleanup env` for the projects a test deployed, so no service is left running. */
  const cleanups: (() => Promise<unknown>)[] = [];

  afterEach(async () => {
    for (const cleanup of cleanups.splice(0)) await cleanup();
    await server?.close();
    await database?.drop();
    server = undefined;
    database = undefined;
  });

  /** The server, on a database of the test's own. */
  async function startServer(port?: number): Promise<{ server: StreamServer; url: string }> {
    if (dialect === 'postgres') database = await createTestDatabase('postgres');
    server = await createStreamServer({
      ...(database ? { database } : {}),
      args: ['--cleanup-interval', '2s'],
    });
    const started = await server.start(port);
    return { server, url: started.url };
  }

  /** The local-shop example, and `tend` in it with `env`; its environment is cleaned after the test. */
  async function localShop(stateDir: string) {
    const root = copyExample('local-shop');
    const port = String(await freePort());
    const tend = (env: Record<string, string>, ...args: string[]) =>
      runTend(['--var', `port=${port}`, ...args], { cwd: root, env: { TEND_STATE_DIR: stateDir, ...env } });
    cleanups.push(() => tend(streamEnv(undefined, undefined), 'cleanup', 'env'));
    return { root, tend };
  }

  /** deploy, cleanup env, deploy, cleanup env: each succeeds, its events stay in the outbox. */
  async function workOffline(tend: (...args: string[]) => Promise<{ code: number | null; stderr: string }>) {
    for (const command of [['deploy'], ['cleanup', 'env'], ['deploy'], ['cleanup', 'env']]) {
      const run = await tend(...command);
      expect(run.code, `${command.join(' ')}: ${run.stderr}`).toBe(0);
    }
  }

  async function api<T>(s: StreamServer, url: string, route: string): Promise<T> {
    const res = await fetch(`${url}${route}`, { headers: { authorization: `Bearer ${s.tokens.read}` } });
    expect(res.status, route).toBe(200);
    return (await res.json()) as T;
  }

  /** The namespace on disk: its uid (the exec environment's record). */
  function uidOnDisk(root: string, namespace: string): string {
    return (
      JSON.parse(readFileSync(path.join(root, '.tend', 'envs', namespace, 'environment.json'), 'utf8')) as {
        uid: string;
      }
    ).uid;
  }

  /** The record must be as the machine is: active, the live uid ready and owned, nothing else live. */
  async function expectRecordMatches(s: StreamServer, url: string, root: string) {
    const { items } = await api<{ items: EnvironmentView[] }>(
      s,
      url,
      '/api/v1/environments?project=local-shop',
    );
    expect(items).toHaveLength(1);
    const environment = items[0]!;
    expect(environment.state).toBe('active');
    const { resources } = await api<{ resources: ResourceView[] }>(
      s,
      url,
      `/api/v1/environments/${environment.id}`,
    );
    const live = resources.filter((r) => r.state !== 'missing');
    expect(live.map((r) => [r.namespaceUid, r.state, r.ownership])).toEqual([
      [uidOnDisk(root, environment.namespace), 'ready', 'owned'],
    ]);
    return { environment, resource: live[0]! };
  }

  /**
   * After an inventory from the host's agent, a planning pass plans the resource: nothing blocks it
   * for ownership. The agent runs once, and the server (a pass every 2 s) trusts its heartbeat for
   * three intervals: a pass that a loaded machine delays past them finds no live executor, and the
   * agent runs again (at most five times).
   */
  async function expectPlanned(s: StreamServer, url: string, stateDir: string, resourceId: string) {
    let item: PlanItemView | undefined;
    let items: PlanItemView[] = [];
    for (let attempt = 1; attempt <= 5; attempt++) {
      const agent = await runTend(
        ['agent', '--server', url, '--token', s.tokens.agent, '--local', '--once'],
        {
          env: { TEND_STATE_DIR: stateDir },
        },
      );
      expect(agent.code, agent.stderr).toBe(0);
      // A plan's `generatedAt` is when its pass ended, and a pass reads the records when it starts:
      // the first pass to end after the inventory may have read them before it. The pass after
      // that one started after the inventory.
      const passEndedAfter = (after: string, what: string) =>
        waitFor(
          async () => {
            const p = await api<{ generatedAt: string | null; items: PlanItemView[] }>(
              s,
              url,
              '/api/v1/cleanup/plan?project=local-shop&within=365d',
            );
            return p.generatedAt !== null && p.generatedAt > after && { ...p, generatedAt: p.generatedAt };
          },
          what,
          20_000,
        );
      const straddling = await passEndedAfter(
        new Date().toISOString(),
        'a planning pass ending after the inventory',
      );
      ({ items } = await passEndedAfter(
        straddling.generatedAt,
        'a planning pass started after the inventory',
      ));
      item = items.find((i) => i.resourceId === resourceId);
      if (item?.reason !== 'no-executor') break;
    }
    expect(item, JSON.stringify(items)).toBeDefined();
    expect([item!.kind, item!.reason, item!.action]).toEqual([
      expect.not.stringMatching(/^blocked$/),
      null,
      'delete',
    ]);
  }

  /** The events the outbox holds, segment by segment (oldest segment first). */
  function queued(outbox: string): TendEvent[][] {
    return listSegmentIds(outbox).map((id) =>
      readFileSync(segmentFile(outbox, id), 'utf8')
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => JSON.parse(line) as TendEvent),
    );
  }

  // Without a host sequence (its directory unwritable, or a client from before it), the order the
  // queue is sent in is the only order the server has: oldest session first, the current one last.
  it.each([
    ['with the host sequence', true],
    ['without a host sequence', false],
  ])('commands run while the server was down, then a deploy with it up (%s)', async (_, withSequence) => {
    const stateDir = tempDir('tend-state-');
    if (!withSequence) writeFileSync(path.join(stateDir, 'sequence'), 'not a directory');
    const { root, tend } = await localShop(stateDir);
    const port = await freePort();
    // Nothing listens there yet: each command keeps its events in the outbox and says so.
    const offline = streamEnv(`http://127.0.0.1:${port}`, 'not-yet');
    await workOffline((...args) => tend(offline, ...args));
    const outbox = path.join(root, '.tend', 'outbox');
    const segments = queued(outbox);
    expect(segments).toHaveLength(4);
    // The events whose order matters carry the host's sequence, growing from session to session.
    const ordered = segments
      .flat()
      .filter((e) => e.type === 'sessionStarted' || e.type === 'namespaceStatus');
    if (withSequence) {
      const numbers = ordered.map((e) => e.sequence?.number);
      expect(numbers.every((n) => typeof n === 'number')).toBe(true);
      expect(numbers).toEqual([...(numbers as number[])].sort((a, b) => a - b));
      expect(new Set(ordered.map((e) => e.sequence?.counter)).size).toBe(1);
    } else {
      expect(ordered.filter((e) => e.sequence !== undefined)).toEqual([]);
    }

    const { server: s, url } = await startServer(port);
    const online = streamEnv(url, s.tokens.ingest);
    const deployed = await tend(online, 'deploy');
    expect(deployed.code, deployed.stderr).toBe(0);
    expect(deployed.stderr).not.toMatch(/wait in/);
    expect(listSegmentIds(outbox)).toEqual([]);

    const { resource } = await expectRecordMatches(s, url, root);
    await expectPlanned(s, url, stateDir, resource.id);
  });

  it('before tend login; the old sessions reach the server after the current one', async () => {
    const stateDir = tempDir('tend-state-');
    const configDir = tempDir('tend-config-');
    const { root, tend } = await localShop(stateDir);
    // No server configured at all: the outbox keeps every session's events.
    await workOffline((...args) =>
      tend(streamEnv(undefined, undefined, { TEND_CONFIG_DIR: configDir }), ...args),
    );
    const outbox = path.join(root, '.tend', 'outbox');
    const old = listSegmentIds(outbox);
    expect(old).toHaveLength(4);

    const { server: s, url } = await startServer();
    // The stored login is the only server and token there are.
    const loggedIn = { TEND_CONFIG_DIR: configDir };
    const login = await runTend(['login', '--server', url, '--token', s.tokens.ingest], { env: loggedIn });
    expect(login.code, login.stderr).toBe(0);

    // Another process holds the old segments: the deploy sends only its own session.
    const held: HeldLock[] = old.map((id) => {
      const attempt = tryLock(lockFile(outbox, id));
      if (!attempt.acquired) throw new Error(`could not hold ${id}`);
      return attempt.lock;
    });
    try {
      const deployed = await tend(loggedIn, 'deploy');
      expect(deployed.code, deployed.stderr).toBe(0);
    } finally {
      for (const lock of held) lock.release();
    }
    await expectRecordMatches(s, url, root);

    // Then the old sessions arrive, oldest first, after the newer one: nothing moves backwards.
    const pushed = await runTend(['events', 'push'], { cwd: root, env: loggedIn });
    expect(pushed.code, pushed.stderr).toBe(0);
    expect(listSegmentIds(outbox)).toEqual([]);
    const { resource } = await expectRecordMatches(s, url, root);
    await expectPlanned(s, url, stateDir, resource.id);
  });
});
