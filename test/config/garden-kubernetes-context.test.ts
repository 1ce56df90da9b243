/**
 * Garden's `kubernetes` provider requires a `context` (core/src/plugins/kubernetes/config.ts:
 * `context: joi.string().required()`); an entry that leaves it empty (garden-io/gardenbot's
 * `context: # ... your staging kubecontext here`) is refused where it is used, as Garden does,
 * rather than deployed to the kubeconfig's current context — unless `--context` names one.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { validateCommand } from '../../src/commands/validate.js';
import type { TendError } from '../../src/errors.js';
import { makeProject, removeProjects } from '../helpers/project.js';

afterEach(removeProjects);

/** gardenbot's project, as written. */
const gardenbot = `apiVersion: garden.io/v1
kind: Project
name: gardenbot
defaultEnvironment: local
environments:
  - name: local
    defaultNamespace: garden-local
  - name: remote
    defaultNamespace: garden-remote
  - name: staging
    production: true
    defaultNamespace: staging
providers:
  - name: local-kubernetes
    context: rancher-desktop
    environments:
      - local
  - name: kubernetes
    environments:
      - remote
    context: # ... your remote development kubecontext here
  - name: kubernetes
    environments:
      - staging
    context: # ... your staging kubecontext here
`;

async function validate(root: string, env: string, context?: string) {
  return validateCommand({ root, var: [], env, ...(context ? { context: [context] } : {}) }).then(
    (result) => ({ exitCode: result.exitCode, error: undefined }),
    (error: TendError) => ({ exitCode: undefined, error }),
  );
}

const said = (error: TendError | undefined) =>
  `${error?.code} ${error?.location?.file}:${error?.location?.line}:${error?.location?.column} ${error?.message}`;

const refusal = (env: string) =>
  `provider kubernetes of environment ${env} names no kubeconfig context: Garden's kubernetes provider requires ` +
  "one, and without it tend would deploy to the kubeconfig's current context, which may be another cluster; " +
  "set `context:` to the cluster's kubeconfig context (`kubectl config get-contexts`), or give `--context`";

describe("Garden's kubernetes provider without a context", () => {
  it('is refused at its context: in the environments that use it, not in the others', async () => {
    const root = makeProject({ 'project.garden.yml': gardenbot });
    expect((await validate(root, 'local')).exitCode).toBe(0);
    expect(said((await validate(root, 'remote')).error)).toBe(
      `TEND_CONFIG_INVALID project.garden.yml:21:14 ${refusal('remote')}`,
    );
    expect(said((await validate(root, 'staging')).error)).toBe(
      `TEND_CONFIG_INVALID project.garden.yml:25:14 ${refusal('staging')}`,
    );
  });

  it('--context names the cluster instead', async () => {
    const root = makeProject({ 'project.garden.yml': gardenbot });
    expect((await validate(root, 'staging', 'staging-cluster')).exitCode).toBe(0);
  });

  it('an entry without the key is refused at the entry, an empty string as any invalid value; a context merged in from another entry is taken', async () => {
    const project = (providers: string) =>
      `apiVersion: garden.io/v1\nkind: Project\nname: p\nenvironments:\n  - name: remote\nproviders:\n${providers}`;
    const bare = makeProject({ 'project.garden.yml': project('  - name: kubernetes\n') });
    expect(said((await validate(bare, 'remote')).error)).toBe(
      `TEND_CONFIG_INVALID project.garden.yml:7:5 ${refusal('remote')}`,
    );
    const empty = makeProject({ 'project.garden.yml': project('  - name: kubernetes\n    context: ""\n') });
    expect(said((await validate(empty, 'remote')).error)).toBe(
      'TEND_CONFIG_INVALID project.garden.yml:8:14 invalid value for providers[0].context: expected a non-empty string, got ""',
    );
    const merged = makeProject({
      'project.garden.yml': project(
        '  - name: kubernetes\n    context: shared\n  - name: kubernetes\n    environments: [remote]\n    namespace: n\n',
      ),
    });
    expect((await validate(merged, 'remote')).exitCode).toBe(0);
  });

  it("local-kubernetes, whose context Garden picks, and tend's own provider keep the current context", async () => {
    const local = makeProject({
      'project.garden.yml':
        'apiVersion: garden.io/v1\nkind: Project\nname: p\nenvironments:\n  - name: local\nproviders:\n  - name: local-kubernetes\n',
    });
    expect((await validate(local, 'local')).exitCode).toBe(0);
    const own = makeProject({
      'tend.yml': 'kind: Project\nname: p\nenvironments:\n  - name: dev\nproviders:\n  - name: kubernetes\n',
    });
    expect((await validate(own, 'dev')).exitCode).toBe(0);
  });
});
