/**
 * `${providers.<name>.config.<key>}`: a provider's configuration in the environment, as Garden's
 * ProviderContext has it beside `outputs` (core/src/config/template-contexts/provider.ts) — the
 * entry as its file says it (Garden's shape: `namespace.name`, a registry mapping), its templates
 * resolved as the provider's are. Known when the configuration is read: `tend validate` resolves it,
 * and a provider or key that is not there is an error at the expression's file:line.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { validateCommand } from '../../src/commands/validate.js';
import { executeCommand } from '../../src/commands/execute.js';
import { failure, specCommand } from '../helpers/configure.js';
import { makeProject, removeProjects } from '../helpers/project.js';

afterEach(removeProjects);

/** A project whose Run `r` (at line 2 of r.garden.yml) echoes `words`, with the Project's `providers`. */
function projectReading(providers: string, words: readonly string[]): string {
  return makeProject({
    'project.garden.yml': `apiVersion: garden.io/v1
kind: Project
name: shop
environments:
  - name: dev
    variables: { host: shop.example.com }
providers:
${providers}`,
    'r.garden.yml': `kind: Run
type: exec
name: r
spec:
  command: ${JSON.stringify(['echo', ...words])}
`,
  });
}

/** The errors `tend validate` fails with: `file:line message`. */
async function validateErrors(root: string): Promise<string[]> {
  const error = await failure(validateCommand({ root, var: [] }));
  const detail = error.detail as { errors?: { message: string; location: { file: string; line: number } }[] };
  return (detail?.errors ?? [{ message: error.message, location: error.location! }]).map(
    (e) => `${e.location.file}:${e.location.line} ${e.message}`,
  );
}

describe('providers.<name>.config', () => {
  it("gives the exec provider's initScript: validate passes and the Run prints it", async () => {
    const root = projectReading(`  - name: exec\n    initScript: "echo hello"\n`, [
      'init=${providers.exec.config.initScript}',
    ]);
    expect((await validateCommand({ root, var: [] })).exitCode).toBe(0);
    expect(await specCommand(root, 'run.r')).toEqual(['echo', 'init=echo hello']);
    const result = await executeCommand('run', ['r'], { root });
    const ran = result.data.actions.find((a) => a.ref === 'run.r');
    expect([ran?.state, ran?.outputs?.log]).toEqual(['ready', 'init=echo hello']);
  });

  it('gives a kubernetes entry as Garden has it: namespace.name, defaultHostname, keys tend ignores; bracket forms too', async () => {
    const root = projectReading(
      `  - name: kubernetes
    context: my-cluster
    namespace:
      name: api-\${environment.name}
    defaultHostname: \${var.host}
    setupIngressController: traefik
    deploymentRegistry: { hostname: registry.example.com, namespace: team }
`,
      [
        '${providers["kubernetes"].config.namespace.name}',
        "${providers['kubernetes'].config['defaultHostname']}",
        '${providers.kubernetes.config.setupIngressController}',
        '${providers.kubernetes.config.deploymentRegistry.namespace}',
        '${providers.kubernetes.config.context}',
      ],
    );
    expect((await validateCommand({ root, var: [] })).exitCode).toBe(0);
    expect(await specCommand(root, 'run.r')).toEqual([
      'echo',
      'api-dev',
      'shop.example.com',
      'traefik',
      'team',
      'my-cluster',
    ]);
  });

  it('gives a namespace written as a string as namespace.name, and local-kubernetes its default hostname', async () => {
    const root = projectReading(`  - name: local-kubernetes\n    namespace: shop-dev\n`, [
      '${providers.local-kubernetes.config.namespace.name}',
      '${providers["local-kubernetes"].config.defaultHostname}',
    ]);
    expect(await specCommand(root, 'run.r')).toEqual(['echo', 'shop-dev', 'shop.local.demo.garden']);
  });

  it.each([
    [
      'a key not set',
      '${providers.exec.config.initScript}',
      /"providers\.exec\.config\.initScript".*available: providers\.exec\.config\.name/,
    ],
    [
      'a provider not configured',
      '${providers.terraform.config.workspace}',
      /no provider terraform .*providers: exec/,
    ],
    [
      'a field not there',
      '${providers.exec.settings.initScript}',
      /"providers\.exec\.settings\.initScript".*providers\.<name>\.config\.<key>/,
    ],
  ])("is an error in validate at the expression's line: %s", async (_case, expression, message) => {
    const errors = await validateErrors(projectReading(`  - name: exec\n`, [expression]));
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(/^r\.garden\.yml:5 /);
    expect(errors[0]).toMatch(message);
  });

  it("reads another provider's configuration in a provider's; its own is an error at the entry", async () => {
    const root = projectReading(
      `  - name: exec\n    initScript: "echo \${providers.kubernetes.config.context}"\n  - name: kubernetes\n    context: my-cluster\n`,
      ['${providers.exec.config.initScript}'],
    );
    expect(await specCommand(root, 'run.r')).toEqual(['echo', 'echo my-cluster']);
    const itself = projectReading(`  - name: exec\n    initScript: "\${providers.exec.config.name}"\n`, [
      '${providers.exec.config.initScript}',
    ]);
    const errors = await validateErrors(itself);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(/^project\.garden\.yml:8 .*provider exec reads providers\.exec\.config/);
  });
});
