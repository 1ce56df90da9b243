/**
 * Garden's own examples (test/fixtures/garden-examples, copied unmodified from garden-io/garden):
 * the ones tend reads today pass `tend validate` in their directory, and deploy into kube-sim;
 * the others fail validate at the file:line of what tend does not do yet (docs/garden.md lists
 * what blocks each).
 */

import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateCommand } from '../../../src/commands/validate.js';
import type { TendError } from '../../../src/errors.js';
import { copyGardenExample, removeProjects, runTend } from '../../helpers/project.js';
import { execute, kubectlJson, startSim, type SimHandle } from './helpers.js';

let h: SimHandle;
beforeAll(async () => {
  h = await startSim();
});
afterAll(async () => h?.stop());

afterAll(removeProjects);

async function validateErrors(root: string): Promise<string[]> {
  try {
    await validateCommand({ root, var: [] });
  } catch (error) {
    const { errors } = (error as TendError).detail as {
      errors: { code: string; location: { file: string; line: number } }[];
    };
    return errors.map((e) => `${e.code} ${e.location.file}:${e.location.line}`);
  }
  return [];
}

describe("Garden's examples", () => {
  it('kustomize: valid as it is, and both kustomizations deploy into kube-sim', async () => {
    const root = copyGardenExample('kustomize');
    const validated = await validateCommand({ root, var: [] });
    expect(validated.exitCode).toBe(0);
    expect(validated.data.actions.map((a) => `${a.ref} ${a.file}:${a.line}`)).toEqual([
      'deploy.hello-world helloWorld/garden.yml:1',
      'deploy.ldap ldap/garden.yml:1',
    ]);
    expect(validated.data.providers).toEqual(['kubernetes', 'exec']);

    const deployed = await execute('deploy', root);
    expect(deployed.data.actions.map((a) => [a.ref, a.state, a.error?.message])).toEqual([
      ['deploy.hello-world', 'ready', undefined],
      ['deploy.ldap', 'ready', undefined],
    ]);
    const namespace = validated.data.namespace;
    const deployments = await kubectlJson<{ items: { metadata: { name: string } }[] }>(
      h.kubeconfig,
      '-n',
      namespace,
      'get',
      'deployments',
    );
    // As kustomize renders them: ldap's local overlay prefixes its names with local-.
    expect(deployments.items.map((d) => d.metadata.name).sort()).toEqual(['local-ldap', 'the-deployment']);
  });

  it('kustomize through the CLI in its directory: tend validate, then tend deploy --kubeconfig --context', async () => {
    const root = copyGardenExample('kustomize');
    const validated = await runTend(['validate'], { cwd: path.join(root, 'ldap') });
    expect(validated.code, validated.stderr).toBe(0);
    expect(validated.stdout).toContain('configuration valid: 2 actions');
    // imagePullSecrets is ignored, with a note where its provider entry is used (testing), not here.
    expect(validated.stdout).not.toContain('note:');
    const testing = await runTend(['validate', '--env', 'testing'], { cwd: path.join(root, 'ldap') });
    expect(testing.code, testing.stderr).toBe(0);
    expect(testing.stdout).toContain('note: project.garden.yml:19:5: imagePullSecrets');
    const deployed = await runTend(
      ['deploy', '--kubeconfig', h.kubeconfig, '--context', 'kube-sim', '--json'],
      {
        cwd: root,
        timeoutMs: 120_000,
      },
    );
    expect(deployed.code, deployed.stderr).toBe(0);
    const { actions } = JSON.parse(deployed.stdout) as { actions: { ref: string; state: string }[] };
    // Deployed already by the test above (same version, same namespace) or now.
    expect(actions.map((a) => a.ref)).toEqual(['deploy.hello-world', 'deploy.ldap']);
    for (const action of actions) expect(['ready', 'cached']).toContain(action.state);
  });

  // Valid as they are, with the number of actions each declares (deployed in garden-container and
  // garden-templates tests, or here above).
  it.each([
    ['demo-project', 7],
    ['variables', 6],
    ['disabled-configs', 3],
    ['k8s-deploy-patch-resources', 11],
    ['k8s-deploy-config-templates', 8],
    ['k8s-deploy-shared-manifests', 11],
    ['run-actions', 9],
  ])('%s: valid as it is, %i actions', async (name, count) => {
    const validated = await validateCommand({ root: copyGardenExample(name), var: [] });
    expect(validated.exitCode).toBe(0);
    expect(validated.data.actions).toHaveLength(count);
  });

  // What blocks the others today, one problem per line (the plan for the next steps).
  it.each<[string, string[]]>([])(
    '%s: refused at the file:line of what tend does not do yet',
    async (name, first) => {
      const errors = await validateErrors(copyGardenExample(name));
      expect(errors.slice(0, first.length)).toEqual(first);
    },
  );
});
