/**
 * Attack: forged environment records. A project's ingest token can post sessions that claim to
 * have created namespaces nobody created.
 * - Eight of them on a cluster no executor serves must not dilute the project's circuit breaker:
 *   three real environments falling idle at once are three of three, not three of eleven — the
 *   breaker opens and nothing is deleted.
 * - Eight of them on the real cluster must not make its inventory "suspect" (which would stop
 *   cleanup of every project there until someone removed each record by hand): no list ever
 *   showed them, so their absence is not a disappearance. They are marked missing, and another
 *   project's idle environment is cleaned as usual.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { TendEvent } from '../../src/events/catalog.js';
import { removeProjects } from '../helpers/project.js';
import { dialects, newId, postEvents } from '../server/helpers.js';
import { recordedStreamedEvents } from '../stream/helpers.js';
import { stage, type Stage } from './harness.js';

const hour = 3_600_000;

describe.each(dialects)('forged environment records, on %s', (dialect) => {
  let s: Stage;
  beforeEach(async () => {
    s = await stage(dialect);
  });
  afterEach(async () => {
    await s.stop();
    removeProjects();
  });

  /**
   * Eight records of `project`, each a session that claims to have created a namespace (with a
   * uid no cluster has) on the target of `template`'s deploy, or on `clusterId` instead.
   */
  async function forge(template: string, project: string, clusterId?: string) {
    const events = recordedStreamedEvents(template);
    const started = events.find(
      (e): e is Extract<TendEvent, { type: 'sessionStarted' }> => e.type === 'sessionStarted',
    )!;
    const observed = events.find(
      (e): e is Extract<TendEvent, { type: 'namespaceStatus' }> =>
        e.type === 'namespaceStatus' && e.payload.role === 'app',
    )!;
    const { sequence: _s1, ...startedEvent } = started;
    const { sequence: _s2, ...observedEvent } = observed;
    const target = clusterId ? { ...observed.payload.target, clusterId } : observed.payload.target;
    const forged = [];
    for (let i = 0; i < 8; i++) {
      const sessionId = newId();
      const environment = `forged-${i}`;
      forged.push(
        {
          ...startedEvent,
          id: newId(),
          sessionId,
          payload: { ...started.payload, project, environment, namespace: `${project}-forged-${i}` },
        },
        {
          ...observedEvent,
          id: newId(),
          sessionId,
          payload: {
            ...observed.payload,
            project,
            environment,
            namespaceName: `${project}-forged-${i}`,
            namespaceUid: `forged-uid-${i}`,
            cause: 'created' as const,
            state: 'ready' as const,
            target,
          },
        },
      );
    }
    expect((await postEvents(s.server, forged)).statusCode).toBe(200);
  }

  const api = async <T>(url: string) =>
    (
      await s.server.app.inject({ method: 'GET', url, headers: s.server.auth(s.server.tokens.admin) })
    ).json<T>();

  it('records on a cluster no executor serves do not dilute the breaker', async () => {
    const root = s.project({
      name: 'diluted',
      namespace: 'diluted-a',
      environmentExtra: ['b', 'c']
        .map(
          (n) =>
            `  - { name: ${n}, defaultNamespace: diluted-${n}, cleanup: { afterInactivity: 1h, action: delete } }`,
        )
        .join('\n'),
    });
    for (const env of ['dev', 'b', 'c']) {
      const run = await s.tend(root, 'deploy', '--env', env);
      expect(run.code, run.stderr).toBe(0);
    }
    await forge(root, 'diluted', 'a-cluster-no-executor-serves');
    await s.enforce('diluted');
    s.advance(2 * hour);
    await s.cleanupRound();
    await s.cleanupRound();
    const status = await api<{ breakers: { project: string }[] }>('/api/v1/cleanup/status');
    expect(status.breakers.map((b) => b.project)).toEqual(['diluted']);
    for (const n of ['a', 'b', 'c']) expect(s.namespaceExists(`diluted-${n}`)).toBe(true);
  });

  it('namespaces tend did not create, listed with their recorded uid, do not dilute the breaker', async () => {
    // Three environments in namespaces someone else created, marked as the project's: tend
    // deploys into them (never owned, so never deleted) — they must not count as deletable.
    const others = ['d', 'e', 'f'];
    for (const n of others) {
      s.sim.sim.store.create('namespaces', '', {
        metadata: {
          name: `mixed-${n}`,
          labels: { 'app.kubernetes.io/managed-by': 'tend' },
          annotations: { 'tend.dev/project': 'mixed', 'tend.dev/environment': n },
        },
      });
    }
    const root = s.project({
      name: 'mixed',
      namespace: 'mixed-a',
      environmentExtra: ['b', 'c', ...others]
        .map(
          (n) =>
            `  - { name: ${n}, defaultNamespace: mixed-${n}, cleanup: { afterInactivity: 1h, action: delete } }`,
        )
        .join('\n'),
    });
    for (const env of ['dev', 'b', 'c', ...others]) {
      const run = await s.tend(root, 'deploy', '--env', env);
      expect(run.code, run.stderr).toBe(0);
    }
    await s.enforce('mixed');
    s.advance(2 * hour);
    await s.cleanupRound();
    await s.cleanupRound();
    const status = await api<{ breakers: { project: string }[] }>('/api/v1/cleanup/status');
    expect(status.breakers.map((b) => b.project)).toEqual(['mixed']);
    for (const n of ['a', 'b', 'c', ...others]) expect(s.namespaceExists(`mixed-${n}`)).toBe(true);
  });

  it("records on the real cluster do not make its inventory suspect nor stop another project's cleanup", async () => {
    const attacker = s.project({ name: 'attacker', namespace: 'attacker-dev' });
    const victim = s.project({ name: 'victim', namespace: 'victim-dev' });
    for (const root of [attacker, victim]) {
      const run = await s.tend(root, 'deploy');
      expect(run.code, run.stderr).toBe(0);
    }
    await s.cleanupRound(); // the cluster's first inventories list both namespaces
    await forge(attacker, 'attacker');
    await s.enforce('victim');
    s.advance(2 * hour);
    const round = await s.cleanupRound();
    expect(round.before.inventories.map((i) => i.response?.suspect)).toEqual([undefined]);
    await s.cleanupRound();
    const status = await api<{ suspectInventories: unknown[] }>('/api/v1/cleanup/status');
    expect(status.suspectInventories).toEqual([]);
    expect(s.namespaceExists('victim-dev')).toBe(false);
    expect(s.namespaceExists('attacker-dev')).toBe(true);
  });
});
