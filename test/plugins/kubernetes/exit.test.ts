/**
 * No exit waits on a timer: a command against a cluster ends when its work does. The real CLI runs
 * as a child process with test/fixtures/exit-watch.cjs preloaded, which fails the process (exit
 * code 86, the timers and where they were made on stderr) when a ref'd timer is still armed once
 * the command has printed its result — observed, not timed.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { makeProject, removeProjects, repoRoot, runTend } from '../../helpers/project.js';
import { projectYaml, sessionEvents, shopProject, startSim, type SimHandle } from './helpers.js';

const exitWatch = path.join(repoRoot, 'test', 'fixtures', 'exit-watch.cjs');

let h: SimHandle;
beforeAll(async () => {
  h = await startSim();
});
afterAll(async () => h?.stop());
afterEach(removeProjects);

const watched = (args: string[], cwd: string) =>
  runTend([...args, '--json'], {
    cwd,
    env: { KUBECONFIG: h.kubeconfig, NODE_OPTIONS: `--require ${exitWatch}` },
  });

describe('a command exits when its work ends', () => {
  it('the watch fails a process that still has a timer armed after its result', async () => {
    const script = "setTimeout(() => {}, 60_000); process.stdout.write('{}\\n');";
    const run = promisify(execFile)(process.execPath, ['--require', exitWatch, '-e', script]);
    const failed = (await run.catch((error: unknown) => error)) as { code?: number; stderr?: string };
    expect(failed.code).toBe(86);
    expect(failed.stderr).toMatch(
      /exit-watch: 1 timer\(s\) keep the process alive after its result:\na 60000 ms timer/,
    );
  });

  it('tend test of a short pod: every log line, and no timer left when the result is out', async () => {
    const root = makeProject({
      'tend.yml': projectYaml({ registry: h.sim.registryHost, namespace: 'exit-pod' }),
      'pod.tend.yml':
        'kind: Test\ntype: kubernetes-pod\nname: short\n' +
        'spec: { image: alpine, command: [sh, -c, "echo one && sleep 0.3 && echo two"] }\n',
    });
    const tested = await watched(['test'], root);
    expect(tested.code, tested.stderr).toBe(0);
    const data = JSON.parse(tested.stdout) as { sessionId: string; actions: { state: string }[] };
    expect(data.actions.map((a) => a.state)).toEqual(['ready']);
    const lines = sessionEvents(root, data.sessionId)
      .filter((e) => e.type === 'log' && (e.payload as { handler?: string }).handler === 'run')
      .map((e) => (e.payload as { message: string }).message);
    expect(lines).toEqual(['one', 'two']);
  });

  it('tend deploy (a cluster build, a rollout), a cached deploy and tend status', async () => {
    const root = shopProject({ registry: h.sim.registryHost, namespace: 'exit-shop' });
    for (const args of [['deploy'], ['deploy'], ['status']]) {
      const run = await watched(args, root);
      expect(run.code, `${args.join(' ')}: ${run.stderr}`).toBe(0);
    }
  });
});
