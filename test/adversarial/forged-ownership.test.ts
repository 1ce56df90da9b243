/**
 * Attack: forged ownership. A namespace created with kubectl carrying tend's managed-by label
 * and the project's annotations, into which `tend deploy` then deploys, must not become tend's:
 * labels are not proof. Only a `created` event for its uid proves tend created it, so the
 * namespace is recorded without ownership, planned `blocked: not-owned`, and survives with its
 * ConfigMap however long it stays idle — while a namespace tend created itself is cleaned.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TendEvent } from '../../src/events/catalog.js';
import { removeProjects } from '../helpers/project.js';
import { dialects, newId, postEvents } from '../server/helpers.js';
import { recordedStreamedEvents } from '../stream/helpers.js';
import { stage, type Stage } from './harness.js';

describe.each(dialects)('forged ownership, on %s', (dialect) => {
  let s: Stage;
  beforeAll(async () => {
    s = await stage(dialect);
  });
  afterAll(async () => {
    await s.stop();
    removeProjects();
  });

  it("a namespace that carries tend's labels but was created by someone else is never deleted", async () => {
    s.sim.sim.store.create('namespaces', '', {
      metadata: {
        name: 'forged-dev',
        labels: { 'app.kubernetes.io/managed-by': 'tend' },
        annotations: { 'tend.dev/project': 'forged', 'tend.dev/environment': 'dev' },
      },
    });
    const forged = s.project({ name: 'forged', namespace: 'forged-dev' });
    const real = s.project({ name: 'real', namespace: 'real-dev' });
    for (const root of [forged, real]) {
      const run = await s.tend(root, 'deploy');
      expect(run.code, run.stderr).toBe(0);
    }
    expect(s.sim.sim.store.get('configmaps', 'forged-dev', 'settings')).toBeDefined();
    await s.enforce('forged');
    await s.enforce('real');
    s.advance(2 * 3600_000);
    await s.cleanupRound();
    await s.cleanupRound();

    const plan = await s.server.app.inject({
      method: 'GET',
      url: '/api/v1/cleanup/plan?limit=50',
      headers: s.server.auth(s.server.tokens.admin),
    });
    const items = plan.json<{ items: { namespace: string; kind: string; reason: string | null }[] }>().items;
    expect(items.find((d) => d.namespace === 'forged-dev')).toMatchObject({
      kind: 'blocked',
      reason: 'not-owned',
    });
    expect(s.namespaceExists('forged-dev')).toBe(true);
    expect(s.sim.sim.store.get('configmaps', 'forged-dev', 'settings')).toBeDefined();
    // The namespace tend created itself, idle as long, is cleaned: the check is not merely broken.
    expect(s.namespaceExists('real-dev')).toBe(false);
  });

  it('a forged claim of creation, under another environment record, does not make an adopted namespace owned', async () => {
    s.sim.sim.store.create('namespaces', '', {
      metadata: {
        name: 'taken-dev',
        labels: { 'app.kubernetes.io/managed-by': 'tend' },
        annotations: { 'tend.dev/project': 'taken', 'tend.dev/environment': 'dev' },
      },
    });
    const root = s.project({ name: 'taken', namespace: 'taken-dev' });
    const run = await s.tend(root, 'deploy');
    expect(run.code, run.stderr).toBe(0);
    const events = recordedStreamedEvents(root);
    const started = events.find(
      (e): e is Extract<TendEvent, { type: 'sessionStarted' }> => e.type === 'sessionStarted',
    )!;
    const observed = events.find(
      (e): e is Extract<TendEvent, { type: 'namespaceStatus' }> =>
        e.type === 'namespaceStatus' && e.payload.namespaceName === 'taken-dev',
    )!;
    expect(observed.payload.namespaceUid).toBeDefined();
    // An ingest token of the project: a session of "another" environment in the same namespace,
    // with a policy, that claims to have created it with its real uid.
    const sessionId = newId();
    const { sequence: _startedSequence, ...startedEvent } = started;
    const { sequence: _observedSequence, ...observedEvent } = observed;
    const forged = [
      {
        ...startedEvent,
        id: newId(),
        sessionId,
        payload: { ...started.payload, environment: 'other', command: 'deploy' },
      },
      {
        ...observedEvent,
        id: newId(),
        sessionId,
        payload: {
          ...observed.payload,
          environment: 'other',
          cause: 'created' as const,
          state: 'ready' as const,
        },
      },
    ];
    expect((await postEvents(s.server, forged)).statusCode).toBe(200);
    const ownership = await s.server.database.db
      .selectFrom('resources')
      .innerJoin('environments', 'environments.id', 'resources.environment_id')
      .select(['environments.name', 'resources.ownership'])
      .where('resources.namespace_name', '=', 'taken-dev')
      .orderBy('environments.name')
      .execute();
    // The deploy's record saw it existing (never owned); the forged record's claim is disputed.
    expect(ownership.map((r) => [r.name, r.ownership])).toEqual([
      ['dev', 'unknown'],
      ['other', 'adopted'],
    ]);
    await s.enforce('taken');
    s.advance(2 * 3600_000);
    await s.cleanupRound();
    await s.cleanupRound();
    expect(s.namespaceExists('taken-dev')).toBe(true);
    expect(s.sim.sim.store.get('configmaps', 'taken-dev', 'settings')).toBeDefined();
  });
});
