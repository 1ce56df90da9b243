/**
 * A server with a clock the test moves, and the steps of a cleanup story: environments recorded
 * through ingest, executors heartbeating and reporting inventories through the agent routes.
 */
import type { InventoryItem } from '../../../src/cleanup/protocol.js';
import type { PullRequestRef } from '../../../src/events/catalog.js';
import type { BuildServerOptions } from '../../../src/server/app.js';
import { createTestServer, postEvents, session, type Dialect, type TestServer } from '../helpers.js';

export const target = 'kubernetes/cluster-1';

export interface CleanupFixture {
  server: TestServer;
  now(): Date;
  advance(ms: number): void;
  /** The answer's JSON is read loosely: tests check its shape with expect. */
  call(
    method: 'GET' | 'POST',
    url: string,
    payload?: unknown,
    token?: string,
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
  ): Promise<{ status: number; body: any }>;
  /** Records an environment with one namespace (uid) through ingest; returns its ids. */
  environment(spec: {
    user: string;
    policy?: string | null;
    uid?: string;
    project?: string;
    /** The environment's name (default `dev`). */
    environment?: string;
    /** More of the policy: warnBefore, afterClose. */
    policyExtra?: { warnBefore?: string; afterClose?: string };
    pullRequest?: PullRequestRef;
  }): Promise<{ id: string; namespace: string; resourceId: string; project: string }>;
  /** Heartbeat and a complete inventory of `target` from an executor. */
  report(executorId: string, items: InventoryItem[], complete?: boolean): Promise<void>;
  /** An item marked as tend's for project `shop` (or `project`), environment `dev`; `extra` on top. */
  item(namespace: string, uid: string, extra?: Partial<InventoryItem>, project?: string): InventoryItem;
  close(): Promise<void>;
}

export async function cleanupFixture(
  dialect: Dialect,
  maxPerPass = 10,
  options: Partial<BuildServerOptions> = {},
): Promise<CleanupFixture> {
  let clock = Date.parse('2026-03-29T00:00:00.000Z');
  const server = await createTestServer(dialect, {
    now: () => new Date(clock),
    cleanup: { intervalMs: 30_000, maxPerPass, protectPatterns: ['prod-*'] },
    ...options,
  });
  const call: CleanupFixture['call'] = async (method, url, payload, token = server.tokens.admin) => {
    const res = await server.app.inject({
      method,
      url,
      headers: server.auth(token),
      ...(payload === undefined ? {} : { payload: payload as object }),
    });
    return { status: res.statusCode, body: res.body ? res.json() : undefined };
  };
  const fixture: CleanupFixture = {
    server,
    now: () => new Date(clock),
    advance: (ms) => {
      clock += ms;
    },
    call,
    async environment({
      user,
      policy = '8h',
      uid = `uid-${user}`,
      project = 'shop',
      environment = 'dev',
      policyExtra,
      pullRequest,
    }) {
      const s = session({ user, project, environment, command: 'build' });
      const res = await postEvents(server, [
        s.started(
          policy ? { afterInactivity: policy, action: 'delete', ...policyExtra } : undefined,
          pullRequest,
        ),
        s.ns('ready', { uid, role: 'build' }),
        s.completed(),
      ]);
      if (res.statusCode !== 200) throw new Error(res.body);
      const list = await call('GET', `/api/v1/environments?project=${project}&limit=500`);
      const env = (list.body.items as { id: string; namespace: string }[]).find(
        (e) => e.namespace === s.namespace,
      )!;
      const detail = await call('GET', `/api/v1/environments/${env.id}`);
      return { id: env.id, namespace: s.namespace, resourceId: detail.body.resources[0].id, project };
    },
    async report(executorId, items, complete = true) {
      const hb = await call(
        'POST',
        '/api/v1/agents/heartbeat',
        {
          executorId,
          name: executorId,
          kind: 'agent',
          version: '0.1.0',
          targets: [{ targetKey: target, pluginName: 'kubernetes', description: 'dev cluster' }],
        },
        server.tokens.agent,
      );
      if (hb.status !== 200) throw new Error(JSON.stringify(hb.body));
      const inv = await call(
        'POST',
        '/api/v1/agents/inventory',
        { executorId, targetKey: target, pluginName: 'kubernetes', complete, items },
        server.tokens.agent,
      );
      if (inv.status !== 200) throw new Error(JSON.stringify(inv.body));
    },
    item(namespace, uid, extra = {}, project = 'shop') {
      return {
        namespaceName: namespace,
        uid,
        version: '1',
        state: 'active',
        managedByTend: true,
        project,
        environment: 'dev',
        adopted: false,
        ...extra,
      };
    },
    close: () => server.close(),
  };
  return fixture;
}
