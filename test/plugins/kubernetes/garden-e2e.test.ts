/**
 * Garden's own end-to-end test projects (test/fixtures/garden-e2e, copied unmodified from
 * garden-io/garden's e2e/projects; most are Garden 0.12 module-format versions of its examples):
 * real Garden projects beside the examples. Each passes `tend validate` as it is, or fails it at
 * the file:line of what tend does not do (jib); the ones whose parts run here deploy into kube-sim
 * and their Tests pass.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateCommand } from '../../../src/commands/validate.js';
import type { TendError } from '../../../src/errors.js';
import { copyGardenExample, removeProjects } from '../../helpers/project.js';
import { execute, kubectlJson, startSim, type SimHandle } from './helpers.js';

let h: SimHandle;
beforeAll(async () => {
  // Garden's local-kubernetes projects name no registry: kube-sim advertises its own, as kind does.
  h = await startSim({ advertiseRegistry: true });
});
afterAll(async () => h?.stop());

afterAll(removeProjects);

const copy = (name: string) => copyGardenExample(name, 'garden-e2e');

/** What `tend validate` says of a project: its actions, and its notes as `file:line what`. */
async function validated(root: string): Promise<{ actions: string[]; notes: string[]; namespace: string }> {
  const { exitCode, data } = await validateCommand({ root, var: [] });
  expect(exitCode).toBe(0);
  return {
    actions: data.actions.map((a) => a.ref),
    notes: (data.notes ?? []).map((n) => `${n.file}:${n.line} ${n.message.split(':')[0]}`),
    namespace: data.namespace,
  };
}

describe("Garden's e2e projects", () => {
  it.each([
    ['code-synchronization-modules', 2, ['node-service/garden.yml:8 sync']],
    ['demo-project-modules', 7, []],
    ['kustomize-modules', 2, []],
    ['open-telemetry', 3, ['project.garden.yml:33 provider otel-collector']],
    ['tasks-modules', 9, []],
    ['templated-k8s-container-modules', 2, []],
    ['vote-helm-modules', 17, ['vote/garden.yml:5 sync']],
    ['vote-modules', 17, ['vote/garden.yml:9 sync']],
  ])('%s: valid as it is (%i actions), noting only what tend ignores', async (name, count, notes) => {
    const result = await validated(copy(name));
    expect(result.actions).toHaveLength(count);
    expect(result.notes).toEqual(notes);
  });

  it('jib-container-modules: the jib provider and its modules are errors at their lines, saying what to do', async () => {
    const error = await validateCommand({ root: copy('jib-container-modules'), var: [] }).then(
      () => undefined,
      (caught: TendError) => caught,
    );
    const errors = (error?.detail?.errors ?? []) as {
      message: string;
      location: { file: string; line: number };
    }[];
    expect(errors.map((e) => `${e.location.file}:${e.location.line} ${e.message}`)).toEqual([
      'project.garden.yml:8 provider jib is not supported by tend; build the image with a container Build (a Dockerfile) or an exec Build running jib',
      "helloworld/helloworld.garden.yml:2 module type jib-container is not converted by tend; write the module as actions (Garden 0.13's format)",
      "spring-boot/spring-boot.garden.yml:2 module type jib-container is not converted by tend; write the module as actions (Garden 0.13's format)",
    ]);
  });

  it("templated-k8s-container-modules: the ModuleTemplate's generateFiles source, beside the template, is the Deploy's manifests", async () => {
    const root = copy('templated-k8s-container-modules');
    const { namespace } = await validated(root);
    const deployed = await execute('deploy', root);
    expect(deployed.data.actions.map((a) => [a.ref, a.state, a.error?.message])).toEqual([
      ['build.my-service-image', 'ready', undefined],
      ['deploy.my-service-manifests', 'ready', undefined],
    ]);
    const deployment = await kubectlJson<{
      spec: { replicas: number; template: { spec: { containers: { image: string; ports: unknown[] }[] } } };
    }>(h.kubeconfig, '-n', namespace, 'get', 'deployment', 'my-service');
    // `${inputs.replicas || 3}`, `${inputs.containerPort}` and the image module's output, resolved.
    expect(deployment.spec.replicas).toBe(3);
    const [container] = deployment.spec.template.spec.containers;
    expect(container!.image).toMatch(/\/my-service-image:v-[0-9a-f]+$/);
    expect(container!.ports).toEqual([{ name: 'http', containerPort: 8080 }]);
  });

  it('demo-project-modules: its services deploy, its task runs and its tests pass', async () => {
    const root = copy('demo-project-modules');
    await validated(root);
    const deployed = await execute('deploy', root);
    expect(deployed.data.actions.map((a) => [a.ref, a.state, a.error?.message]).sort()).toEqual([
      ['build.backend', 'ready', undefined],
      ['build.frontend', 'ready', undefined],
      ['deploy.backend', 'ready', undefined],
      ['deploy.frontend', 'ready', undefined],
    ]);
    const tested = await execute('test', root);
    expect(tested.exitCode).toBe(0);
    expect(
      tested.data.actions
        .filter((a) => a.ref.startsWith('test.'))
        .map((a) => a.ref)
        .sort(),
    ).toEqual(['test.frontend-integ', 'test.frontend-unit']);
    const ran = await execute('run', root, ['test']);
    expect(ran.data.actions.find((a) => a.ref === 'run.test')?.state).toBe('ready');
  });

  it('tasks-modules: its test passes; its helm module (a remote chart) fails the deploy naming helm, which is not here', async () => {
    const root = copy('tasks-modules');
    await validated(root);
    const tested = await execute('test', root);
    expect(tested.exitCode).toBe(0);
    expect(tested.data.actions.find((a) => a.ref === 'test.hello-unit')?.state).toBe('ready');
    const deployed = await execute('deploy', root, ['postgres']);
    expect(deployed.data.actions.find((a) => a.ref === 'deploy.postgres')?.error).toMatchObject({
      code: 'TEND_TOOL_NOT_FOUND',
      message: expect.stringMatching(/^deploy\.postgres: helm is not on PATH/),
    });
  });
});
