/**
 * Attack: one namespace, two environment records. `defaultNamespace: dev-${var.who}` with the
 * provider's `namespace: team-shared`: alice's and bob's deploys make two records that both
 * hold `team-shared`. Protection, keep-alive and use belong to the namespace as well as the
 * record: the namespace is due only when every record holding it is — and a `namespaceStatus`
 * claiming creation, sent with an ingest token, is no way around it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TendEvent } from '../../src/events/catalog.js';
import { newId, postEvents, dialects } from '../server/helpers.js';
import { removeProjects } from '../helpers/project.js';
import { recordedStreamedEvents } from '../stream/helpers.js';
import { stage, type Stage } from './harness.js';

const hour = 3_600_000;

interface PlanItem {
  namespace: string;
  environment: string;
  kind: string;
  reason: string | null;
  sentence: string;
}

describe.each(dialects)('a namespace two records hold, on %s', (dialect) => {
  let s: Stage;
  let root: string;
  beforeAll(async () => {
    s = await stage(dialect);
    root = s.project({
      name: 'team',
      namespace: 'dev-${var.who}',
      providerExtra: '    namespace: team-shared',
    });
  });
  afterAll(async () => {
    await s.stop();
    removeProjects();
  });

  const deploy = async (who: string) => {
    const run = await s.tend(root, '--var', `who=${who}`, 'deploy');
    expect(run.code, run.stderr).toBe(0);
  };
  const api = (method: 'GET' | 'POST', url: string) =>
    s.server.app.inject({ method, url, headers: s.server.auth(s.server.tokens.admin) });
  const envId = async (namespace: string) => {
    const list = await api('GET', '/api/v1/environments?project=team');
    const env = list
      .json<{ items: { id: string; namespace: string }[] }>()
      .items.find((e) => e.namespace === namespace);
    expect(env, `environment with namespace ${namespace}`).toBeDefined();
    return env!.id;
  };
  const sharedDecisions = async () => {
    const plan = await api('GET', '/api/v1/cleanup/plan?limit=50');
    return plan.json<{ items: PlanItem[] }>().items.filter((d) => d.namespace === 'team-shared');
  };

  it('is kept while any record holding it is used, protected or kept alive, and cleaned once none is', async () => {
    await deploy('alice');
    await deploy('bob');
    await s.enforce('team');
    const alice = await envId('dev-alice');
    const bob = await envId('dev-bob');

    // Both idle past the wait but bob deployed again a minute ago: bob's use keeps it.
    s.advance(2 * hour);
    await deploy('bob');
    await s.cleanupRound();
    await s.cleanupRound();
    expect(s.namespaceExists('team-shared')).toBe(true);
    expect((await sharedDecisions()).some((d) => d.reason === 'held-elsewhere')).toBe(true);

    // Both idle, bob's environment protected: still kept, and the plan says why.
    expect((await api('POST', `/api/v1/environments/${bob}/protect`)).statusCode).toBe(200);
    s.advance(2 * hour);
    await s.cleanupRound();
    await s.cleanupRound();
    expect(s.namespaceExists('team-shared')).toBe(true);
    const held = (await sharedDecisions()).find((d) => d.environment === 'dev' && d.reason === 'protected');
    expect(held?.sentence).toMatch(/team\/dev holds it too and is protected/);

    // An ingest token claims bob's record created the namespace: nothing changes while alice is
    // protected (bob unprotected, so bob's record could otherwise be the one to delete it).
    expect((await api('POST', `/api/v1/environments/${bob}/unprotect`)).statusCode).toBe(200);
    expect((await api('POST', `/api/v1/environments/${alice}/protect`)).statusCode).toBe(200);
    const events = recordedStreamedEvents(root);
    const bobSessions = new Set(
      events
        .filter((e) => e.type === 'sessionStarted' && e.payload.namespace === 'dev-bob')
        .map((e) => e.sessionId),
    );
    const observed = events.find(
      (e): e is Extract<TendEvent, { type: 'namespaceStatus' }> =>
        e.type === 'namespaceStatus' &&
        bobSessions.has(e.sessionId) &&
        e.payload.namespaceName === 'team-shared' &&
        e.payload.cause !== 'created',
    );
    expect(observed, 'bob recorded team-shared as existing').toBeDefined();
    const forged = {
      ...observed!,
      id: newId(),
      payload: { ...observed!.payload, cause: 'created' as const },
    };
    expect((await postEvents(s.server, [forged])).statusCode).toBe(200);
    s.advance(2 * hour);
    await s.cleanupRound();
    await s.cleanupRound();
    expect(s.namespaceExists('team-shared')).toBe(true);
    expect(s.sim.sim.store.get('configmaps', 'team-shared', 'settings')).toBeDefined();

    // The other way round: alice's record (which created it) unprotected, bob's protected. An
    // ingest token says bob's record saw the namespace gone, to take it off the holders so that
    // alice's record may delete it: the executor lists it with the same uid, so the claim is
    // contradicted, bob's record holds it again, and it is kept.
    expect((await api('POST', `/api/v1/environments/${alice}/unprotect`)).statusCode).toBe(200);
    expect((await api('POST', `/api/v1/environments/${bob}/protect`)).statusCode).toBe(200);
    const forgedGone = {
      ...observed!,
      id: newId(),
      payload: { ...observed!.payload, state: 'missing' as const, cause: 'observed' as const },
      // Later than anything bob's host sent, so that the record's order lets it through.
      ...(observed!.sequence
        ? { sequence: { counter: observed!.sequence.counter, number: Number.MAX_SAFE_INTEGER } }
        : {}),
    };
    expect((await postEvents(s.server, [forgedGone])).statusCode).toBe(200);
    const bobHolds = async () =>
      (await api('GET', `/api/v1/environments/${bob}`))
        .json<{ resources: { namespace: string; state: string }[] }>()
        .resources.filter((r) => r.namespace === 'team-shared')
        .map((r) => r.state);
    expect(await bobHolds()).toEqual(['missing']);
    s.advance(2 * hour);
    await s.cleanupRound();
    await s.cleanupRound();
    expect(s.namespaceExists('team-shared')).toBe(true);
    expect(await bobHolds()).toEqual(['ready']);
    const restored = await api('GET', '/api/v1/audit?action=resource-restored');
    expect(restored.json<{ items: { environmentId: string }[] }>().items).toMatchObject([
      { environmentId: bob },
    ]);

    // Bob's record kept alive (a day, the default): alice's decision names the record that holds
    // the namespace and until when — not a keep-alive of its own that it does not have.
    expect((await api('POST', `/api/v1/environments/${bob}/unprotect`)).statusCode).toBe(200);
    expect((await api('POST', `/api/v1/environments/${bob}/keep-alive`)).statusCode).toBe(200);
    s.advance(2 * hour);
    await s.cleanupRound();
    await s.cleanupRound();
    expect(s.namespaceExists('team-shared')).toBe(true);
    const kept = (await sharedDecisions()).filter((d) => d.reason === 'kept-alive');
    expect(kept.length).toBeGreaterThan(0);
    for (const d of kept) expect(d.sentence).not.toContain('1970');
    expect(kept.map((d) => d.sentence).join('\n')).toMatch(/team\/dev holds it too and is kept alive until /);

    // Nobody protects, keeps or uses it any more: it is cleaned (the checks are not merely broken).
    s.advance(24 * hour);
    await s.cleanupRound();
    await s.cleanupRound();
    expect(s.namespaceExists('team-shared')).toBe(false);
  });
});
