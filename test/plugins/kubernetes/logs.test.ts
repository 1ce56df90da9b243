/**
 * `tend logs` for kubernetes deploys through the real CLI against kube-sim: the logs of every pod
 * of the deploy's Deployment (its selector, through the namespace-tracking client and kube-sim's
 * log endpoint), the last N lines of each, following new lines until Ctrl-C (exit 130), and a
 * deploy that is not deployed: an error, and no namespace created.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { removeProjects, runTend, startTend } from '../../helpers/project.js';
import { deploymentYaml, kubectl, shopProject, startSim, type SimHandle } from './helpers.js';

let h: SimHandle;
beforeAll(async () => {
  h = await startSim();
});
afterAll(async () => h?.stop());
afterEach(removeProjects);

/** The shop project whose api pods (two replicas) log the given lines, `intervalMs` apart. */
function loggingProject(namespace: string, lines: string[], intervalMs?: number) {
  const annotations = [
    `        kube-sim.tend.dev/logs: "${lines.join('\\n')}"`,
    ...(intervalMs ? [`        kube-sim.tend.dev/log-interval-ms: "${intervalMs}"`] : []),
  ].join('\n');
  const manifest = deploymentYaml
    .replace('replicas: 1', 'replicas: 2')
    .replace(
      '      labels: { app: api }\n',
      `      labels: { app: api }\n      annotations:\n${annotations}\n`,
    );
  return shopProject({ registry: h.sim.registryHost, namespace, files: { 'api/k8s/api.yaml': manifest } });
}

interface Line {
  ref: string;
  source: string;
  text: string;
  time?: string;
}

describe('tend logs (kubernetes)', () => {
  it("prints the logs of every pod of the deploy's Deployment, and the last N lines of each", async () => {
    const root = loggingProject('logs-k8s', ['api listening on 8080', 'ready for requests']);
    const deployed = await runTend(['deploy'], { cwd: root });
    expect(deployed.code, deployed.stderr).toBe(0);
    const pods = (await kubectl(h.kubeconfig, '-n', 'logs-k8s', 'get', 'pods', '-l', 'app=api', '-o', 'name'))
      .trim()
      .split('\n')
      .sort();
    expect(pods).toHaveLength(2);

    const all = await runTend(['logs', 'api'], { cwd: root });
    expect(all.code, all.stderr).toBe(0);
    expect(all.stdout.trim().split('\n').sort()).toEqual(
      pods.flatMap((pod) => [
        `deploy.api ${pod}/api | api listening on 8080`,
        `deploy.api ${pod}/api | ready for requests`,
      ]),
    );

    const last = await runTend(['logs', '--tail', '1', '--json'], { cwd: root });
    expect(last.code, last.stderr).toBe(0);
    const lines = (JSON.parse(last.stdout) as { lines: Line[] }).lines;
    expect(lines.map((l) => [l.ref, l.source, l.text]).sort()).toEqual(
      pods.map((pod) => ['deploy.api', `${pod}/api`, 'ready for requests']),
    );
    for (const line of lines) expect(Number.isNaN(Date.parse(line.time!))).toBe(false);
  });

  it('follows the pods’ logs as they write (--tail 0: only new lines), until Ctrl-C (exit 130)', async () => {
    const lines = Array.from({ length: 60 }, (_, i) => `step ${i}`);
    const root = loggingProject('logs-k8s-follow', lines, 100);
    const deployed = await runTend(['deploy'], { cwd: root });
    expect(deployed.code, deployed.stderr).toBe(0);
    const following = startTend(['logs', 'api', '-f', '--tail', '0'], { cwd: root });
    const seen = await following.waitForOutput(/step \d+/, 'a first line');
    const first = Math.max(...[...seen.matchAll(/step (\d+)/g)].map((m) => Number(m[1])));
    // A line written after the follow began, from each of the two pods.
    const later = new RegExp(`step ${first + 5}\\b[\\s\\S]*step ${first + 5}\\b`);
    await following.waitForOutput(later, 'new lines from both pods');
    following.signal('SIGINT');
    const ended = await following.exited;
    expect(ended.code, ended.stderr).toBe(130);
    // Written before the follow began: not shown.
    expect(ended.stdout).not.toMatch(/\| step 0$/m);
  });

  it('a follow picks up the pods a rollout starts', async () => {
    const root = loggingProject('logs-k8s-rollout', ['first version'], 50);
    expect((await runTend(['deploy'], { cwd: root })).code).toBe(0);
    const following = startTend(['logs', 'api', '-f'], { cwd: root });
    await following.waitForOutput(/\| first version/, 'the first pods’ lines');
    // A new pod template: a new ReplicaSet, new pods with their own log.
    const manifest = path.join(root, 'api', 'k8s', 'api.yaml');
    writeFileSync(manifest, readFileSync(manifest, 'utf8').replace('first version', 'second version'));
    const redeployed = await runTend(['deploy'], { cwd: root });
    expect(redeployed.code, redeployed.stderr).toBe(0);
    await following.waitForOutput(/\| second version/, 'the new pods’ lines');
    following.signal('SIGINT');
    expect((await following.exited).code).toBe(130);
  });

  it('a deploy that is not deployed: exit 1, and no namespace is created', async () => {
    const root = loggingProject('logs-k8s-none', ['never']);
    const run = await runTend(['logs', 'api'], { cwd: root });
    expect(run.code, run.stderr).toBe(1);
    expect(run.stderr).toContain('deploy.api is not deployed: namespace logs-k8s-none is missing');
    expect(await kubectl(h.kubeconfig, 'get', 'ns', '-o', 'name')).not.toContain('logs-k8s-none');
  });
});
