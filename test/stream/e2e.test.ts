/**
 * The local-shop example deployed through the real CLI with a real server (SQLite): the
 * environment, its resource and the session are in the server's registry and on its dashboard,
 * every streamed event exactly once, and the outbox is empty afterwards.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { EnvironmentView, ResourceView, SessionView } from '../../src/api/views.js';
import { copyExample, removeProjects, runTend } from '../helpers/project.js';
import {
  freePort,
  outboxFiles,
  recordedStreamedEvents,
  repeated,
  streamEnv,
  useStreamServer,
} from './helpers.js';

const stream = useStreamServer();

afterAll(removeProjects);

async function api<T>(path: string): Promise<T> {
  const res = await fetch(`${stream.server.current!.url}${path}`, {
    headers: { authorization: `Bearer ${stream.server.tokens.read}` },
  });
  expect(res.status, path).toBe(200);
  return (await res.json()) as T;
}

describe('streaming a deploy to the server', () => {
  it('records the environment, its resource and the session; each event exactly once', async () => {
    const root = copyExample('local-shop');
    const port = String(await freePort());
    const env = streamEnv(stream.server.current!.url, stream.server.tokens.ingest);
    const tend = (...args: string[]) => runTend(['--var', `port=${port}`, ...args], { cwd: root, env });

    const deployed = await tend('deploy', '--json');
    try {
      expect(deployed.code, deployed.stderr).toBe(0);
      expect(deployed.stderr).not.toMatch(/wait in/);
      const { sessionId, namespace } = JSON.parse(deployed.stdout) as {
        sessionId: string;
        namespace: string;
      };

      // The command waited for its events at exit: they are in the server already.
      const { items } = await api<{ items: EnvironmentView[] }>('/api/v1/environments?project=local-shop');
      const environment = items.find((e) => e.namespace === namespace);
      expect(environment).toMatchObject({ project: 'local-shop', name: 'dev', state: 'active' });
      expect(environment!.policy).toEqual({ afterInactivity: '8h', action: 'delete' });
      expect(environment!.lastActivity.sessionId).toBe(sessionId);

      const detail = await api<{ resources: ResourceView[]; sessions: SessionView[] }>(
        `/api/v1/environments/${environment!.id}`,
      );
      expect(detail.resources).toHaveLength(1);
      expect(detail.resources[0]).toMatchObject({
        plugin: 'exec',
        namespace,
        state: 'ready',
        role: 'app',
        ownership: 'owned',
      });
      expect(detail.resources[0]!.target).toMatchObject({ kind: 'local' });
      expect(detail.sessions.map((s) => [s.id, s.command, s.status])).toEqual([
        [sessionId, 'deploy', 'completed'],
      ]);

      // The dashboard shows it, to a developer logged in with a read token.
      const login = await fetch(`${stream.server.current!.url}/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ token: stream.server.tokens.read, next: '/' }).toString(),
        redirect: 'manual',
      });
      const cookie = /tend_session=[^;]+/.exec(login.headers.get('set-cookie') ?? '')?.[0];
      expect(cookie, `login answered ${login.status}`).toBeDefined();
      const dashboard = await fetch(`${stream.server.current!.url}/`, { headers: { cookie: cookie! } });
      expect(dashboard.status).toBe(200);
      expect(await dashboard.text()).toContain(namespace);

      const recorded = recordedStreamedEvents(root).map((e) => e.id);
      const stored = stream.server.eventIds();
      expect(repeated(recorded)).toEqual([]);
      expect(stored.sort()).toEqual([...recorded].sort());
      expect(outboxFiles(root)).toEqual([]);
    } finally {
      const cleaned = await tend('cleanup', 'env');
      expect(cleaned.code, cleaned.stderr).toBe(0);
    }

    // The cleanup is recorded too: the resource is gone, both sessions are there.
    const { items } = await api<{ items: EnvironmentView[] }>('/api/v1/environments?project=local-shop');
    const detail = await api<{ resources: ResourceView[]; sessions: SessionView[] }>(
      `/api/v1/environments/${items[0]!.id}`,
    );
    expect(detail.resources[0]!.state).toBe('missing');
    expect(detail.sessions.map((s) => s.command).sort()).toEqual(['cleanup env', 'deploy']);
    expect(stream.server.eventIds().sort()).toEqual(
      recordedStreamedEvents(root)
        .map((e) => e.id)
        .sort(),
    );
    expect(outboxFiles(root)).toEqual([]);
  });
});
