/**
 * Garden's example with a Workflow (vote, copied unmodified into test/fixtures/garden-examples):
 * `tend workflow full-test` runs its steps as Garden does — `garden test`, `garden run db-clear`
 * as tend's commands in kube-sim (with the workflow's --kubeconfig/--context), then its script.
 */
import os from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { copyGardenExample, removeProjects, runTend } from '../../helpers/project.js';
import { startSim, type SimHandle } from './helpers.js';

let h: SimHandle;
beforeAll(async () => {
  // Garden's local-kubernetes projects name no registry: kube-sim advertises its own, as kind does.
  h = await startSim({ advertiseRegistry: true });
});
afterAll(async () => h?.stop());
afterAll(removeProjects);

describe("Garden's example workflow", () => {
  it('vote: tend workflow lists full-test and runs its test, run and script steps in kube-sim', async () => {
    const root = copyGardenExample('vote');
    const listed = await runTend(['workflow'], { cwd: root });
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toMatch(
      /^full-test\s+3\s+workflows\.garden\.yml:1\s+An example workflow showing how to run garden commands and scripts$/m,
    );

    const cluster = ['--kubeconfig', h.kubeconfig, '--context', 'kube-sim'];
    const run = await runTend(['workflow', 'full-test', ...cluster], { cwd: root, timeoutMs: 240_000 });
    expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(0);
    expect(run.stderr).toContain(`tend test`);
    expect(run.stderr).toContain(`tend run db-clear`);
    expect(run.stdout).toContain(
      `Greetings ${os.userInfo().username}, your full-test script run succesfully.`,
    );
    const steps = run.stdout
      .split('\n')
      .filter((line) => /^step-\d/.test(line))
      .map((line) => line.split(/\s+/).slice(0, 2).join(' '));
    expect(steps).toEqual(['step-1 succeeded', 'step-2 succeeded', 'step-3 succeeded']);
    expect(run.stdout).toContain('workflow full-test completed');
  }, 300_000);
});
