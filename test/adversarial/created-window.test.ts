/**
 * Attack: a claim of creation for a namespace that existed before the claiming session. A
 * namespace created with kubectl a while ago, under a name no record holds yet, is claimed by a
 * forged session (started "now", through a project-bound ingest token) that says it created it,
 * with its real uid: no record of the server contradicts it, but the cluster does — it created
 * the namespace before the session started. It is never deleted (blocked `not-owned`), while a
 * namespace tend created in the same stage is cleaned. A session replayed late from an offline
 * queue, whose start came before the namespace's creation, keeps its ownership.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TendEvent } from '../../src/events/catalog.js';
import { TokenRepository } from '../../src/server/db/repositories/tokens.js';
import { deliveryGraceMs } from '../../src/server/registry/ingest.js';
import { removeProjects } from '../helpers/project.js';
import { dialects, newId, postEvents } from '../server/helpers.js';
import { recordedStreamedEvents } from '../stream/helpers.js';
import { stage, type Stage } from './harness.js';

const minute = 60_000;
const hour = 60 * minute;

describe.each(dialects)('a claim of creation the cluster contradicts, on %s', (dialect) => {
  let s: Stage;
  /** How far the stage's clocks were moved: the stage's "now" is the real clock plus this. */
  let advanced = 0;
  const advance = (ms: number) => {
    s.advance(ms);
    advanced += ms;
  };
  let deployEvents: TendEvent[];

  beforeAll(async () => {
    s = await stage(dialect);
  });
  afterAll(async () => {
    await s.stop();
    removeProjects();
  });

  /** A namespace created with kubectl (kube-sim stamps it with the real clock), marked as tend's for `project`'s `dev`: its uid. */
  const kubectlNamespace = (name: string, project: string): string => {
    s.sim.sim.store.create('namespaces', '', {
      metadata: {
        name,
        labels: { 'app.kubernetes.io/managed-by': 'tend' },
        annotations: { 'tend.dev/project': project, 'tend.dev/environment': 'dev' },
      },
    });
    return (s.sim.sim.store.get('namespaces', '', name) as { metadata: { uid: string } }).metadata.uid;
  };

  /**
   * A session of `project`'s `dev` in `namespace`, started at `startedAt`, that claims to have
   * created it with `uid`: the deploy's own events, re-addressed.
   */
  const claim = (project: string, namespace: string, uid: string, startedAt: Date): unknown[] => {
    const started = deployEvents.find(
      (e): e is Extract<TendEvent, { type: 'sessionStarted' }> => e.type === 'sessionStarted',
    )!;
    const observed = deployEvents.find(
      (e): e is Extract<TendEvent, { type: 'namespaceStatus' }> => e.type === 'namespaceStatus',
    )!;
    const sessionId = newId();
    const { sequence: _startedSequence, ...startedEvent } = started;
    const { sequence: _observedSequence, ...observedEvent } = observed;
    const timestamp = startedAt.toISOString();
    return [
      {
        ...startedEvent,
        id: newId(),
        sessionId,
        timestamp,
        payload: { ...started.payload, project, environment: 'dev', namespace },
      },
      {
        ...observedEvent,
        id: newId(),
        sessionId,
        timestamp,
        payload: {
          ...observed.payload,
          project,
          environment: 'dev',
          namespaceName: namespace,
          namespaceUid: uid,
          cause: 'created' as const,
          state: 'ready' as const,
        },
      },
    ];
  };

  const ownershipOf = async (namespace: string) =>
    (
      await s.server.database.db
        .selectFrom('resources')
        .select('ownership')
        .where('namespace_name', '=', namespace)
        .executeTakeFirstOrThrow()
    ).ownership;

  const ingestToken = (project: string) =>
    new TokenRepository(s.server.database.db)
      .create({ name: `claims-${project}`, scope: 'ingest', project })
      .then((t) => t.token);

  it('a namespace the cluster created before the claiming session is never deleted', async () => {
    const root = s.project({ name: 'made', namespace: 'made-dev' });
    const run = await s.tend(root, 'deploy');
    expect(run.code, run.stderr).toBe(0);
    deployEvents = recordedStreamedEvents(root);

    const uid = kubectlNamespace('claimed-dev', 'claimed');
    advance(10 * minute);
    const forged = claim('claimed', 'claimed-dev', uid, new Date(Date.now() + advanced));
    expect((await postEvents(s.server, forged, await ingestToken('claimed'))).statusCode).toBe(200);
    // No record of the server contradicts the claim: only the cluster's creationTimestamp does.
    expect(await ownershipOf('claimed-dev')).toBe('owned');

    await s.enforce('made');
    await s.enforce('claimed');
    advance(2 * hour);
    await s.cleanupRound();
    await s.cleanupRound();

    const plan = await s.server.app.inject({
      method: 'GET',
      url: '/api/v1/cleanup/plan?limit=50',
      headers: s.server.auth(s.server.tokens.admin),
    });
    const items = plan.json<{ items: { namespace: string; kind: string; reason: string | null }[] }>().items;
    const blocked = items.find((d) => d.namespace === 'claimed-dev');
    expect(blocked).toMatchObject({ kind: 'blocked', reason: 'not-owned' });
    expect(JSON.stringify(blocked)).toContain(
      'the cluster created the namespace before the session that claims to have created it',
    );
    expect(s.namespaceExists('claimed-dev')).toBe(true);
    // The namespace tend created itself, idle as long, is cleaned: the check is not merely broken.
    expect(s.namespaceExists('made-dev')).toBe(false);
  });

  it('a session replayed late from an offline queue keeps its ownership', async () => {
    // The session started (by its host's clock, the real one, as the cluster's) before the
    // cluster created the namespace; its events reach the server hours later.
    const startedAt = new Date(Date.now() - 30_000);
    const uid = kubectlNamespace('replayed-dev', 'replayed');
    advance(3 * hour);
    const late = claim('replayed', 'replayed-dev', uid, startedAt);
    expect((await postEvents(s.server, late, await ingestToken('replayed'))).statusCode).toBe(200);
    expect(await ownershipOf('replayed-dev')).toBe('owned');

    await s.enforce('replayed');
    advance(2 * hour);
    await s.cleanupRound();
    await s.cleanupRound();
    expect(s.namespaceExists('replayed-dev')).toBe(false);
  });
  it('a claim that reaches the server after an inventory listed its new namespace unrecorded keeps its ownership', async () => {
    // The command created the namespace; an inventory ran before its events arrived (a busy
    // machine, a slow network): the namespace was listed unrecorded a few seconds after creation.
    const startedAt = new Date(Date.now() + advanced - 5_000);
    const uid = kubectlNamespace('delayed-dev', 'delayed');
    advance(20_000);
    await s.cleanupRound();
    const listed = await s.server.database.db
      .selectFrom('cleanup_inventory_items')
      .select('recorded')
      .where('namespace_name', '=', 'delayed-dev')
      .executeTakeFirstOrThrow();
    expect(Number(listed.recorded)).toBe(0);
    advance(20_000);
    const late = claim('delayed', 'delayed-dev', uid, startedAt);
    expect((await postEvents(s.server, late, await ingestToken('delayed'))).statusCode).toBe(200);
    expect(await ownershipOf('delayed-dev')).toBe('owned');

    await s.enforce('delayed');
    advance(2 * hour);
    await s.cleanupRound();
    await s.cleanupRound();
    expect(s.namespaceExists('delayed-dev')).toBe(false);
  });

  it('a namespace an inventory listed unrecorded when it was older than the delivery grace is never claimed', async () => {
    const startedAt = new Date(Date.now() + advanced - 5_000);
    const uid = kubectlNamespace('listed-dev', 'listed');
    advance(deliveryGraceMs + minute);
    await s.cleanupRound();
    // The claim's session window holds (it started before the cluster created the namespace):
    // only the inventory's sighting contradicts it.
    const forged = claim('listed', 'listed-dev', uid, startedAt);
    expect((await postEvents(s.server, forged, await ingestToken('listed'))).statusCode).toBe(200);
    expect(await ownershipOf('listed-dev')).toBe('adopted');

    await s.enforce('listed');
    advance(2 * hour);
    await s.cleanupRound();
    await s.cleanupRound();
    expect(s.namespaceExists('listed-dev')).toBe(true);
  });
});
