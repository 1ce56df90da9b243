/**
 * Garden's `command.*` template context (the command's name and parameters, as the CLI passes
 * them), and Garden's varfiles: dotenv files, project-level `varfile`, the default `garden.env`
 * and `garden.<env>.env`, and varfile paths with `${…}`.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { makeProject, removeProjects, runTend } from '../helpers/project.js';

afterEach(removeProjects);

const commandProject = `kind: Project
name: shop
defaultEnvironment: "\${command.name == 'deploy' ? 'prod' : 'dev'}"
environments:
  - name: dev
  - name: prod
    defaultNamespace: shop-\${command.name}
providers:
  - name: exec
---
kind: Deploy
type: exec
name: skipped-by-validate
disabled: "\${command.name == 'validate'}"
spec:
  command: [echo]
`;

describe('command.* as the CLI passes it', () => {
  it('command.name chooses the environment, its namespace and what is disabled', async () => {
    const root = makeProject({ 'tend.yml': commandProject });
    const validated = await runTend(['validate'], { cwd: root });
    expect(validated.code, validated.stderr).toBe(0);
    expect(validated.stdout).toContain('environment dev, namespace shop-');
    expect(validated.stdout).toMatch(
      /note: tend\.yml:\d+:\d+: deploy\.skipped-by-validate is disabled in environment dev/,
    );

    const deployed = await runTend(['deploy', '--json'], { cwd: root });
    expect(deployed.code, deployed.stderr).toBe(0);
    const data = JSON.parse(deployed.stdout) as {
      environment: string;
      namespace: string;
      actions: { ref: string }[];
    };
    expect([data.environment, data.namespace]).toEqual(['prod', 'shop-deploy']);
    expect(data.actions.map((a) => a.ref)).toEqual(['deploy.skipped-by-validate']);
  });

  it('command.params: the arguments by name, the options by their long name, defaults included', async () => {
    const root = makeProject({
      'tend.yml': `kind: Project
name: shop
environments: [{ name: dev }]
providers: [{ name: exec }]
---
kind: Run
type: exec
name: hello
spec:
  command: [sh, -c, "echo \${command.name}/\${command.params.names[0]}/\${command.params.concurrency}/\${command.params.show-output}/\${command.params.env || 'none'}"]
`,
    });
    const ran = await runTend(['run', 'hello', '--show-output'], { cwd: root });
    expect(ran.code, ran.stderr).toBe(0);
    expect(ran.stdout).toContain('run/hello/8/true/none');
  });
});
