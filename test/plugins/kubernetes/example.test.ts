/** examples/shop against kube-sim, through the real CLI: build, deploy, test, then clean up. */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { copyExample, removeProjects, repoRoot, runTend } from '../../helpers/project.js';
import { kubectlJson, namespaceEvents, sessionEvents, startSim, type SimHandle } from './helpers.js';

let h: SimHandle;
beforeAll(async () => {
  h = await startSim();
  if (!existsSync(path.join(repoRoot, 'dist', 'src', 'plugins', 'kubernetes', 'index.js'))) {
    throw new Error('run `npm run build` first: this test runs the built CLI');
  }
});
afterAll(async () => {
  removeProjects();
  await h?.stop();
});

it('examples/shop builds, deploys and tests on kube-sim, then `tend cleanup env` deletes its namespace', async () => {
  const root = copyExample('shop');
  const env = { KUBECONFIG: h.kubeconfig };
  const vars = ['--var', `registry=${h.sim.registryHost}`, '--env', 'preview', '--var', 'pr=7'];
  const run = await runTend([...vars, '--json', 'test'], { cwd: root, env, timeoutMs: 120_000 });
  expect(run.stderr).not.toMatch(/error/i);
  // No warning from Node either (a bundled node-fetch's url.parse() warned on Node 24).
  expect(run.stderr).not.toMatch(/Warning/);
  expect(run.code).toBe(0);
  const data = JSON.parse(run.stdout) as { sessionId: string; actions: { ref: string; state: string }[] };
  expect(data.actions.map((a) => [a.ref, a.state])).toEqual([
    ['build.api', 'ready'],
    ['deploy.api', 'ready'],
    ['test.api-integ', 'ready'],
  ]);
  const deployment = await kubectlJson<{ spec: { template: { spec: { containers: { image: string }[] } } } }>(
    h.kubeconfig,
    '-n',
    'shop-pr-7',
    'get',
    'deployment',
    'api',
  );
  expect(deployment.spec.template.spec.containers[0]!.image).toMatch(
    new RegExp(`^${h.sim.registryHost}/shop/api:v-[0-9a-f]+$`),
  );
  const pods = await kubectlJson<{ items: { metadata: { name: string } }[] }>(
    h.kubeconfig,
    '-n',
    'shop-pr-7',
    'get',
    'pods',
  );
  expect(pods.items.map((p) => p.metadata.name).filter((n) => !n.startsWith('api-'))).toEqual([]);
  const events = namespaceEvents(sessionEvents(root, data.sessionId));
  expect(events.some((e) => e.namespaceName === 'shop-pr-7' && e.role === 'app' && e.namespaceUid)).toBe(
    true,
  );

  const cleanup = await runTend([...vars, 'cleanup', 'env'], { cwd: root, env });
  expect(cleanup.code).toBe(0);
  expect(cleanup.stdout).toMatch(/kubernetes: deleted namespace shop-pr-7/);
  expect(h.sim.store.get('namespaces', '', 'shop-pr-7')).toBeUndefined();
});
