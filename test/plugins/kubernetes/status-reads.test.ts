/**
 * `tend status` asks the cluster about independent actions, and about a Deploy's objects, at once:
 * on a cluster far away, one round trip's wait for all of them rather than one each. Observed on
 * the wire, not timed: kube-sim holds every answer to a ConfigMap read back for a while, and the
 * reads of all four ConfigMaps (two Deploys, two each) are seen waiting for their answers together.
 */
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { makeProject, removeProjects, runTend, startTend, waitFor } from '../../helpers/project.js';
import { projectYaml, startSim, type SimHandle } from './helpers.js';

let h: SimHandle;
beforeAll(async () => {
  h = await startSim();
});
afterAll(async () => h?.stop());
afterEach(() => {
  h.sim.faults.clear();
  removeProjects();
});

const deploy = (name: string) =>
  `kind: Deploy\ntype: kubernetes\nname: ${name}\nspec:\n  manifests:\n` +
  [1, 2]
    .map(
      (i) =>
        `    - { apiVersion: v1, kind: ConfigMap, metadata: { name: ${name}-${i} }, data: { n: "${i}" } }\n`,
    )
    .join('');

it('reads the objects of independent Deploys at once', async () => {
  const root = makeProject({
    'tend.yml': projectYaml({ registry: h.sim.registryHost, namespace: 'status-reads' }),
    'a.tend.yml': deploy('a'),
    'b.tend.yml': deploy('b'),
  });
  const deployed = await runTend(['deploy'], { cwd: root });
  expect(deployed.code, deployed.stderr).toBe(0);

  h.sim.faults.add({
    type: 'latency',
    verb: 'get',
    resource: 'configmaps',
    namespace: 'status-reads',
    ms: 1500,
  });
  const since = h.sim.requests.latest();
  const status = startTend(['status', '--json'], { cwd: root });
  // The most reads seen waiting for their answers at one time.
  let most: string[] = [];
  const together = await waitFor(
    () => {
      const waiting = h.sim.requests
        .list({ since })
        .filter((r) => r.verb === 'get' && r.resource === 'configmaps' && r.status === undefined)
        .map((r) => r.path.split('/').at(-1)!);
      if (waiting.length > most.length) most = waiting;
      return waiting.length === 4 && waiting;
    },
    () => `the four ConfigMap reads waiting together (at most seen at once: ${most.join(', ') || 'none'})`,
    30_000,
  );
  expect(together.sort()).toEqual(['a-1', 'a-2', 'b-1', 'b-2']);

  const done = await status.exited;
  expect(done.code, done.stderr).toBe(0);
  const data = JSON.parse(done.stdout) as { actions: { ref: string; state: string }[] };
  expect(data.actions.map((a) => [a.ref, a.state])).toEqual([
    ['deploy.a', 'ready'],
    ['deploy.b', 'ready'],
  ]);
});
