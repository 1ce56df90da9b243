/**
 * Attack: the server's records are made to agree with a forged claim of creation, and only the
 * executor's own read of the cluster is left to contradict it. A namespace created with kubectl
 * is claimed, ten minutes later, by a forged session (a project-bound ingest token) that says it
 * created it, with its real uid. The planner would block it (its creationTimestamp lies before
 * the session), but a second agent token — a rogue executor — reports the target's inventory
 * right after the real executor's, the same list with that namespace's `createdAt` moved into the
 * claim's window. The planner and the server's re-check believe the records; the executor reads
 * the namespace fresh before the DELETE, compares its creationTimestamp with the window the job
 * carries, and keeps it (cancelled). A namespace tend created itself, idle as long, is cleaned.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type {
  CleanupJob,
  CleanupQueue,
  InventoryReport,
  InventoryResponse,
  StartResponse,
} from '../../src/cleanup/protocol.js';
import type { TendEvent } from '../../src/events/catalog.js';
import { CleanupExecutor } from '../../src/executor/executor.js';
import { TokenRepository } from '../../src/server/db/repositories/tokens.js';
import { servedClusters, testProtection } from '../cleanup/helpers.js';
import { removeProjects } from '../helpers/project.js';
import { dialects, newId, postEvents } from '../server/helpers.js';
import { recordedStreamedEvents } from '../stream/helpers.js';
import { stage, type Stage } from './harness.js';

const minute = 60_000;
const hour = 60 * minute;

describe.each(dialects)('records forged to agree with a claim the cluster contradicts, on %s', (dialect) => {
  let s: Stage;
  /** How far the stage's clocks were moved: the stage's "now" is the real clock plus this. */
  let advanced = 0;
  const advance = (ms: number) => {
    s.advance(ms);
    advanced += ms;
  };

  beforeAll(async () => {
    s = await stage(dialect);
  });
  afterAll(async () => {
    await s.stop();
    removeProjects();
  });

  /** A session of `project`'s `dev` that claims to have created `namespace` (uid `uid`): a deploy's events, re-addressed. */
  const claim = (deploy: TendEvent[], project: string, namespace: string, uid: string, at: Date) => {
    const started = deploy.find(
      (e): e is Extract<TendEvent, { type: 'sessionStarted' }> => e.type === 'sessionStarted',
    )!;
    const observed = deploy.find(
      (e): e is Extract<TendEvent, { type: 'namespaceStatus' }> => e.type === 'namespaceStatus',
    )!;
    const sessionId = newId();
    const { sequence: _s, ...startedEvent } = started;
    const { sequence: _o, ...observedEvent } = observed;
    const timestamp = at.toISOString();
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

  /**
   * An executor serving kube-sim through the server's queue, with `change` standing between them
   * (an attacker's call, an older server's answer); the jobs it started, as the server sent them.
   */
  const executorWith = (change: {
    inventory?: (real: CleanupQueue, body: InventoryReport) => Promise<InventoryResponse>;
    start?: (answer: StartResponse) => StartResponse;
  }) => {
    const real = s.server.app.cleanup.queue;
    const started: CleanupJob[] = [];
    const queue: CleanupQueue = {
      heartbeat: (b) => real.heartbeat(b),
      inventory: (b) => (change.inventory ? change.inventory(real, b) : real.inventory(b)),
      claim: (b) => real.claim(b),
      start: async (id, b) => {
        const answer = await real.start(id, b);
        if (answer.proceed) started.push(answer.job);
        return change.start ? change.start(answer) : answer;
      },
      complete: (id, b) => real.complete(id, b),
      archive: (id, e, a) => real.archive(id, e, a),
      restoreOrder: (id, e) => real.restoreOrder(id, e),
      restoreEvents: (id, b) => real.restoreEvents(id, b),
    };
    const executor = new CleanupExecutor({
      queue,
      plugins: servedClusters(s.sim.kubeconfig),
      protection: testProtection,
      kind: 'embedded',
      name: 'attacked',
      version: 'test',
    });
    return { executor, started };
  };

  it('the executor keeps a namespace whose creationTimestamp lies outside the job’s window', async () => {
    const root = s.project({ name: 'made', namespace: 'made-dev' });
    const run = await s.tend(root, 'deploy');
    expect(run.code, run.stderr).toBe(0);

    // Created with kubectl, marked as tend's; claimed ten minutes later.
    s.sim.sim.store.create('namespaces', '', {
      metadata: {
        name: 'claimed-dev',
        labels: { 'app.kubernetes.io/managed-by': 'tend' },
        annotations: { 'tend.dev/project': 'claimed', 'tend.dev/environment': 'dev' },
      },
    });
    const uid = (s.sim.sim.store.get('namespaces', '', 'claimed-dev') as { metadata: { uid: string } })
      .metadata.uid;
    advance(10 * minute);
    const claimedAt = new Date(Date.now() + advanced);
    const ingest = await new TokenRepository(s.server.database.db).create({
      name: 'claims',
      scope: 'ingest',
      project: 'claimed',
    });
    const forged = claim(recordedStreamedEvents(root), 'claimed', 'claimed-dev', uid, claimedAt);
    expect((await postEvents(s.server, forged, ingest.token)).statusCode).toBe(200);

    // The rogue executor: the real executor's list, sent right after it, with the claimed
    // namespace's creation moved into the claim's window.
    const rogue = (body: InventoryReport) =>
      s.server.app.inject({
        method: 'POST',
        url: '/api/v1/agents/inventory',
        headers: s.server.auth(s.server.tokens.agent),
        payload: {
          ...body,
          executorId: 'rogue',
          items: body.items.map((i) =>
            i.namespaceName === 'claimed-dev' ? { ...i, createdAt: claimedAt.toISOString() } : i,
          ),
        },
      });
    const { executor, started } = executorWith({
      inventory: async (real, b) => {
        const answer = await real.inventory(b);
        expect((await rogue(b)).statusCode).toBe(200);
        return answer;
      },
    });

    await s.enforce('made');
    await s.enforce('claimed');
    advance(2 * hour);
    await executor.runPass();
    await s.server.app.cleanup.pass.run();
    const after = await executor.runPass();

    // The records were fooled: a job was planned, started and re-checked for the namespace.
    const job = after.jobs.find((j) => j.namespaceName === 'claimed-dev');
    expect(job).toMatchObject({ outcome: 'cancelled' });
    expect(job!.message).toMatch(
      /namespace claimed-dev left alone: the cluster created it at .*, before the session that claims to have created it started/,
    );
    expect(s.namespaceExists('claimed-dev')).toBe(true);
    // The window the job carried: from the claiming session's start to the server's receipt of
    // the claim, each widened by the 60 s of clock skew the server tolerates.
    const resource = await s.server.database.db
      .selectFrom('resources')
      .select(['claim_started_at', 'claim_received_at'])
      .where('namespace_name', '=', 'claimed-dev')
      .executeTakeFirstOrThrow();
    expect(resource.claim_started_at).toBe(claimedAt.toISOString());
    expect(started.find((j) => j.namespaceName === 'claimed-dev')!.ownership).toEqual({
      proof: 'claim',
      createdFrom: new Date(claimedAt.getTime() - minute).toISOString(),
      createdUntil: new Date(Date.parse(resource.claim_received_at!) + minute).toISOString(),
    });
    const recorded = await s.server.database.db
      .selectFrom('cleanup_jobs')
      .select(['result', 'outcome_message'])
      .where('namespace_name', '=', 'claimed-dev')
      .executeTakeFirstOrThrow();
    expect(recorded).toMatchObject({ result: 'cancelled' });
    // The namespace tend created itself is cleaned by the same executor: the check is not merely broken.
    expect(after.jobs.find((j) => j.namespaceName === 'made-dev')).toMatchObject({ outcome: 'done' });
    expect(s.namespaceExists('made-dev')).toBe(false);
  });

  it('a job that does not say how ownership was proven changes nothing; one owned before windows were recorded is cleaned', async () => {
    const older = s.project({ name: 'older', namespace: 'older-dev' });
    const legacy = s.project({ name: 'legacy', namespace: 'legacy-dev' });
    for (const root of [older, legacy]) {
      const run = await s.tend(root, 'deploy');
      expect(run.code, run.stderr).toBe(0);
    }
    // Owned before the server recorded the window of a claim (the rows a migration left).
    await s.server.database.db
      .updateTable('resources')
      .set({ claim_started_at: null, claim_received_at: null })
      .where('namespace_name', '=', 'legacy-dev')
      .execute();
    // A server older than the executor sends no word on ownership.
    const { executor, started } = executorWith({
      start: (answer) => {
        if (!answer.proceed || answer.job.namespaceName !== 'older-dev') return answer;
        const { ownership: _ownership, ...job } = answer.job;
        return { proceed: true, job };
      },
    });
    await s.enforce('older');
    await s.enforce('legacy');
    advance(2 * hour);
    await executor.runPass();
    await s.server.app.cleanup.pass.run();
    const after = await executor.runPass();

    expect(after.jobs.find((j) => j.namespaceName === 'older-dev')).toMatchObject({
      outcome: 'cancelled',
      message:
        'namespace older-dev left alone: the job does not say how the server knows tend created it (a server older than this executor?)',
    });
    expect(s.namespaceExists('older-dev')).toBe(true);
    expect(started.find((j) => j.namespaceName === 'legacy-dev')!.ownership).toEqual({
      proof: 'recorded-uid',
    });
    expect(after.jobs.find((j) => j.namespaceName === 'legacy-dev')).toMatchObject({ outcome: 'done' });
    expect(s.namespaceExists('legacy-dev')).toBe(false);
  });
});
