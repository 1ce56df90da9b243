/**
 * A server with something in every part of what it shows, for the checks that outside tools make
 * of it (promtool on /metrics, axe-core on the dashboard): environments active, protected, paused
 * (a pause job done) and cleaned (a deletion done, the namespace gone from the inventory), an
 * executor, a planning pass with a blocked decision, the audit entries of all that, and savings
 * with prices. Everything goes through the API as the CLI and an executor would send it.
 */
import type { Dialect } from './helpers.js';
import { postEvents, session } from './helpers.js';
import { cleanupFixture, target, type CleanupFixture } from './cleanup/fixture.js';

const hour = 3_600_000;

export interface PopulatedServer extends CleanupFixture {
  /** Environment ids by what they became. */
  ids: { active: string; protected: string; paused: string; cleaned: string };
}

export async function populatedServer(dialect: Dialect): Promise<PopulatedServer> {
  const f = await cleanupFixture(dialect, 10, { prices: { cpuHour: 0.04, gibHour: 0.005 } });
  const pausing = session({ user: 'bob', command: 'deploy' });
  const events = await postEvents(f.server, [
    pausing.started({ afterInactivity: '8h', action: 'pause' }),
    pausing.ns('ready', { uid: 'uid-bob' }),
    pausing.action(),
    pausing.completed(),
  ]);
  if (events.statusCode !== 200) throw new Error(events.body);
  const cleaned = await f.environment({ user: 'alice' });
  const kept = await f.environment({ user: 'carol', policy: '1d' });
  const guarded = await f.environment({ user: 'dave' });
  const idOf = async (namespace: string) =>
    (
      (await f.call('GET', '/api/v1/environments?limit=500')).body.items as {
        id: string;
        namespace: string;
      }[]
    ).find((e) => e.namespace === namespace)!.id;
  const paused = await idOf(pausing.namespace);
  await expectStatus(f.call('POST', `/api/v1/environments/${guarded.id}/protect`), 200);
  await expectStatus(f.call('POST', '/api/v1/cleanup/enforce', { project: 'shop' }), 200);

  // Nine hours idle: the 8h policies decide (alice deleted, bob paused), carol's 1d not yet.
  f.advance(9 * hour);
  const requests = { cpuMillicores: 1500, memoryBytes: 2 * 2 ** 30, pods: 3 };
  await f.report('e1', [
    f.item(cleaned.namespace, 'uid-alice', { requests }),
    f.item(pausing.namespace, 'uid-bob', { requests }),
    f.item(kept.namespace, 'uid-carol'),
    f.item(guarded.namespace, 'uid-dave'),
  ]);
  await f.server.app.cleanup.pass.run();
  const claimed = await f.call(
    'POST',
    '/api/v1/cleanup/jobs/claim',
    { executorId: 'e1', targetKeys: [target] },
    f.server.tokens.agent,
  );
  for (const job of claimed.body.jobs as { id: string }[]) {
    const agent = f.server.tokens.agent;
    await expectStatus(
      f.call('POST', `/api/v1/cleanup/jobs/${job.id}/start`, { executorId: 'e1' }, agent),
      200,
    );
    const done = { executorId: 'e1', outcome: 'done', message: 'done' };
    await expectStatus(f.call('POST', `/api/v1/cleanup/jobs/${job.id}/complete`, done, agent), 200);
  }
  // Three hours later the executor's inventory no longer lists the deleted namespace.
  f.advance(3 * hour);
  await f.report('e1', [
    f.item(pausing.namespace, 'uid-bob', { requests: { cpuMillicores: 0, memoryBytes: 0, pods: 0 } }),
    f.item(kept.namespace, 'uid-carol'),
    f.item(guarded.namespace, 'uid-dave'),
  ]);
  await f.server.app.cleanup.pass.run();
  const states = Object.fromEntries(
    await Promise.all(
      [cleaned.id, paused, kept.id, guarded.id].map(async (id) => [
        id,
        (await f.call('GET', `/api/v1/environments/${id}`)).body.environment.state as string,
      ]),
    ),
  );
  const expected = {
    [cleaned.id]: 'cleaned',
    [paused]: 'paused',
    [kept.id]: 'active',
    [guarded.id]: 'active',
  };
  if (JSON.stringify(states) !== JSON.stringify(expected)) {
    throw new Error(`the populated server's environments are ${JSON.stringify(states)}`);
  }
  return { ...f, ids: { active: kept.id, protected: guarded.id, paused, cleaned: cleaned.id } };
}

async function expectStatus(call: ReturnType<CleanupFixture['call']>, status: number): Promise<void> {
  const res = await call;
  if (res.status !== status)
    throw new Error(`expected ${status}, got ${res.status}: ${JSON.stringify(res.body)}`);
}
