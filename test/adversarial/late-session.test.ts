/**
 * Attack: activity after `start`. A planned deletion is claimed and started; while the executor
 * reads the namespace (kube-sim holds its GET for a while), a tend command starts in the
 * environment. The executor confirms with the server right before the DELETE, so the session
 * wins: the namespace stays, the job is cancelled saying why.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { removeProjects } from '../helpers/project.js';
import { dialects, postEvents, session } from '../server/helpers.js';
import { stage, type Stage } from './harness.js';

const hour = 3_600_000;

describe.each(dialects)('a session that starts between start and DELETE, on %s', (dialect) => {
  let s: Stage;
  beforeAll(async () => {
    s = await stage(dialect);
  });
  afterAll(async () => {
    await s.stop();
    removeProjects();
  });

  const jobs = async () =>
    (
      await s.server.app.inject({
        method: 'GET',
        url: '/api/v1/cleanup/jobs?limit=10',
        headers: s.server.auth(s.server.tokens.read),
      })
    ).json<{ items: { id: string; state: string; message: string | null }[] }>().items;

  it('keeps the namespace and cancels the job', async () => {
    const root = s.project({ name: 'late', namespace: 'late-dev' });
    const run = await s.tend(root, 'deploy');
    expect(run.code, run.stderr).toBe(0);
    await s.enforce('late');
    s.advance(2 * hour);
    await s.executor.runPass();
    await s.server.app.cleanup.pass.run();
    expect((await jobs()).map((j) => j.state)).toEqual(['planned']);

    // The executor's fresh read of the namespace is held 4 s: the window between start and DELETE.
    s.sim.sim.faults.add({ type: 'latency', verb: 'get', resource: 'namespaces', ms: 4000, times: 1 });
    const pass = s.executor.runPass();
    for (;;) {
      if ((await jobs())[0]?.state === 'executing') break;
      await new Promise((resolve) => setImmediate(resolve));
    }
    const late = session({ project: 'late', environment: 'dev', namespace: 'late-dev', command: 'test' });
    expect(
      (await postEvents(s.server, [late.started({ afterInactivity: '1h', action: 'delete' })])).statusCode,
    ).toBe(200);
    const report = await pass;

    expect(s.namespaceExists('late-dev')).toBe(true);
    expect(s.sim.sim.store.get('configmaps', 'late-dev', 'settings')).toBeDefined();
    expect(report.jobs.map((j) => j.outcome)).toEqual(['cancelled']);
    const [job] = await jobs();
    expect(job).toMatchObject({ state: 'cancelled' });
    expect(job!.message).toMatch(/the server withdrew the job/);
  });
});
