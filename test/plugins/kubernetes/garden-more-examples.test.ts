/**
 * Three more of Garden's examples (copied unmodified into test/fixtures/garden-examples):
 * `base-image` (a Build whose Dockerfile starts from another Build's image), `istio` (helm charts
 * and the container Deploys behind them) and `local-service` (container Deploys in the cluster and
 * a persistent exec Deploy on this machine). Each validates as it is and deploys into kube-sim
 * with `--kubeconfig/--context` as far as this machine's tools let it.
 */

import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { copyGardenExample, makeProject, removeProjects, runTend } from '../../helpers/project.js';
import { kubectlJson, startSim, type SimHandle } from './helpers.js';

let h: SimHandle;
beforeAll(async () => {
  // Garden's local-kubernetes projects name no registry: kube-sim advertises its own, as kind does.
  h = await startSim({ advertiseRegistry: true });
});
afterAll(async () => h?.stop());

afterAll(removeProjects);

interface ActionResult {
  ref: string;
  state: string;
  error?: { code: string; message: string };
}

const cluster = () => ['--kubeconfig', h.kubeconfig, '--context', 'kube-sim'];

/** `tend <verb> --json` in the project's directory through the CLI. */
async function cli(
  root: string,
  args: string[],
  env?: Record<string, string>,
): Promise<{ code: number | null; actions: ActionResult[]; namespace: string; output: string }> {
  const run = await runTend([...args, ...cluster(), '--json'], { cwd: root, env, timeoutMs: 120_000 });
  const output = `${run.stdout}\n${run.stderr}`;
  const { actions, namespace } = JSON.parse(run.stdout) as { actions: ActionResult[]; namespace: string };
  return { code: run.code, actions, namespace, output };
}

interface Workload {
  spec: { template: { spec: { containers: { image: string; env?: { name: string; value?: string }[] }[] } } };
}
interface Ingress {
  spec: { rules: { http: { paths: { path: string }[] } }[] };
}

/** `ref state` of each action, sorted. */
const states = (actions: ActionResult[]) => actions.map((a) => `${a.ref} ${a.state}`).sort();

async function deploymentNames(namespace: string): Promise<string[]> {
  const { items } = await kubectlJson<{ items: { metadata: { name: string } }[] }>(
    h.kubeconfig,
    '-n',
    namespace,
    'get',
    'deployments',
  );
  return items.map((d) => d.metadata.name).sort();
}

describe("Garden's base-image, istio and local-service examples", () => {
  it('base-image: validates, builds both images and deploys the backend (it has no Tests or Runs)', async () => {
    const root = copyGardenExample('base-image');
    const validated = await runTend(['validate'], { cwd: root });
    expect(validated.code, validated.stderr).toBe(0);
    expect(validated.stdout).toContain('configuration valid: 3 actions');

    const deployed = await cli(root, ['deploy']);
    expect(deployed.code, deployed.output).toBe(0);
    expect(states(deployed.actions)).toEqual([
      'build.backend ready',
      'build.base-image ready',
      'deploy.backend ready',
    ]);
    expect(await deploymentNames(deployed.namespace)).toEqual(['backend']);
    // The backend's image, as `${actions.build.backend.outputs.deploymentImageId}` names it.
    const { spec } = await kubectlJson<Workload>(
      h.kubeconfig,
      '-n',
      deployed.namespace,
      'get',
      'deployment',
      'backend',
    );
    expect(spec.template.spec.containers[0]!.image).toMatch(
      new RegExp(`^${h.sim.registryHost}/${deployed.namespace}/backend:`),
    );
    // It has no Tests or Runs.
    const tested = await cli(root, ['test']);
    expect(tested.code, tested.output).toBe(0);
    expect(tested.actions.filter((a) => !a.ref.startsWith('build.') && !a.ref.startsWith('deploy.'))).toEqual(
      [],
    );
  }, 180_000);

  it('istio: validates; without helm the helm Deploys fail with TEND_TOOL_NOT_FOUND naming helm', async () => {
    const root = copyGardenExample('istio');
    const validated = await runTend(['validate'], { cwd: root });
    expect(validated.code, validated.stderr).toBe(0);
    expect(validated.stdout).toContain('configuration valid: 8 actions');
    // The provider's namespace is where its Deploys would go.
    expect(validated.stdout).toContain('namespace istio-garden-example (provider kubernetes');
    // Its gateway's manifests are written for istio-system: validate warns that deploy refuses them.
    expect(validated.stdout).toContain(
      'note: istio-system/istio.garden.yaml:37:20: deploy.istio-gateway: manifests[0]: Service istio-ingressgateway ' +
        'sets namespace "istio-system": tend deploy refuses it (it deploys into "istio-garden-example")',
    );

    const empty = makeProject({});
    const deployed = await cli(root, ['deploy'], {
      PATH: `${empty}${path.delimiter}${path.dirname(process.execPath)}`,
    });
    expect(deployed.code, deployed.output).not.toBe(0);
    // Every other Deploy needs istio-base first (the container ones through istio-gateway, which
    // waits for istiod): they wait for it, and nothing is applied.
    expect(states(deployed.actions)).toEqual([
      'deploy.bookinfo-gateway aborted',
      'deploy.details aborted',
      'deploy.istio-base failed',
      'deploy.istio-discovery aborted',
      'deploy.istio-gateway aborted',
      'deploy.productpage aborted',
      'deploy.ratings aborted',
      'deploy.reviews aborted',
    ]);
    expect(deployed.actions.find((a) => a.ref === 'deploy.istio-base')?.error).toMatchObject({
      code: 'TEND_TOOL_NOT_FOUND',
      message: expect.stringMatching(/^deploy\.istio-base: helm is not on PATH; .*install helm/),
    });
    expect(await deploymentNames('istio-garden-example')).toEqual([]);
  }, 180_000);

  it('local-service: validates, the cluster part deploys and its Tests and Run pass; the local frontend needs yarn', async () => {
    const root = copyGardenExample('local-service');
    const validated = await runTend(['validate'], { cwd: root });
    expect(validated.code, validated.stderr).toBe(0);
    expect(validated.stdout).toContain('configuration valid: 9 actions');

    // The exec Deploy starts `yarn run dev` on this machine: there is no yarn here (nor the
    // frontend's node_modules, which its README installs first), so it fails; the rest is ready.
    const deployed = await cli(root, ['deploy']);
    expect(deployed.code, deployed.output).not.toBe(0);
    expect(states(deployed.actions)).toEqual([
      'build.backend ready',
      'build.frontend ready',
      'build.frontend-local ready',
      'deploy.backend ready',
      'deploy.frontend ready',
      'deploy.frontend-local failed',
    ]);
    expect(deployed.actions.find((a) => a.ref === 'deploy.frontend-local')?.error).toEqual({
      code: 'TEND_EXEC_FAILED',
      message: 'could not start yarn: spawn yarn ENOENT',
    });
    expect(await deploymentNames(deployed.namespace)).toEqual(['backend', 'frontend']);
    const { items } = await kubectlJson<{ items: Ingress[] }>(
      h.kubeconfig,
      '-n',
      deployed.namespace,
      'get',
      'ingresses',
    );
    // The backend's path is its action variable `ingressPath`.
    expect(items.map((i) => i.spec.rules[0]!.http.paths[0]!.path).sort()).toEqual([
      '/call-backend',
      '/hello-backend',
      '/hello-frontend',
    ]);
    const frontend = await kubectlJson<Workload>(
      h.kubeconfig,
      '-n',
      deployed.namespace,
      'get',
      'deployment',
      'frontend',
    );
    // `env: ${var.env}`, the frontend Deploy's variable.
    expect(frontend.spec.template.spec.containers[0]!.env).toContainEqual({ name: 'PORT', value: '8080' });

    const tested = await cli(root, ['test', 'frontend-unit', 'frontend-integ']);
    expect(tested.code, tested.output).toBe(0);
    expect(states(tested.actions.filter((a) => a.ref.startsWith('test.')))).toEqual([
      'test.frontend-integ ready',
      'test.frontend-unit ready',
    ]);
    const ran = await cli(root, ['run', 'backend']);
    expect(ran.code, ran.output).toBe(0);
    expect(states(ran.actions.filter((a) => a.ref.startsWith('run.')))).toEqual(['run.backend ready']);
  }, 180_000);
});
