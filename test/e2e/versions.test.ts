/**
 * Versions through the real CLI with the exec plugin: a changed variable (`--var`, tend.yml, the
 * environment's variables) redeploys; an unchanged one, or an edit of a neighbour's document,
 * prints `cached`.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { makeProject, removeProjects, runTend } from '../helpers/project.js';

const projectYaml = (replicas: number) => `kind: Project
name: loop
variables: { replicas: ${replicas} }
environments:
  - name: dev
    defaultNamespace: loop-dev
  - name: preview
    defaultNamespace: loop-pr-\${var.pr}
    variables: { pr: 7, replicas: 5 }
providers:
  - name: exec
`;

const webYaml = (testCommand: string) => `kind: Deploy
type: exec
name: web
spec:
  command: [sh, -c, 'echo \${var.replicas} > ../replicas-\${environment.name}.txt']
---
kind: Test
type: exec
name: web
dependencies: [deploy.web]
spec: { command: [sh, -c, '${testCommand}'] }
`;

afterEach(removeProjects);

describe('tend deploy after a change', () => {
  it('redeploys when a variable changes and prints cached only for the same resolved configuration', async () => {
    const root = makeProject({ 'tend.yml': projectYaml(1), 'web/web.tend.yml': webYaml('true') });
    const deploy = async (...args: string[]) => {
      const run = await runTend(['deploy', 'web', '--json', ...args], { cwd: root });
      expect(run.code, run.stderr).toBe(0);
      return (JSON.parse(run.stdout) as { actions: { ref: string; state: string }[] }).actions[0]!.state;
    };
    const replicas = (env = 'dev') => readFileSync(path.join(root, `replicas-${env}.txt`), 'utf8').trim();

    expect(await deploy()).toBe('ready');
    expect(replicas()).toBe('1');
    expect(await deploy()).toBe('cached');

    const human = await runTend(['deploy', 'web', '--var', 'replicas=3'], { cwd: root });
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout + human.stderr).not.toMatch(/cached\s+deploy\.web/);
    expect(replicas()).toBe('3');
    expect(await deploy('--var', 'replicas=3')).toBe('cached');

    // The same value written into tend.yml is the same configuration; another one is not.
    writeFileSync(path.join(root, 'tend.yml'), projectYaml(3));
    expect(await deploy()).toBe('cached');
    writeFileSync(path.join(root, 'tend.yml'), projectYaml(2));
    expect(await deploy()).toBe('ready');
    expect(replicas()).toBe('2');

    // Editing the Test's document next to it does not touch the Deploy.
    writeFileSync(path.join(root, 'web', 'web.tend.yml'), webYaml('echo changed'));
    expect(await deploy()).toBe('cached');

    // The preview environment's own variables need no --var.
    expect(await deploy('--env', 'preview')).toBe('ready');
    expect(replicas('preview')).toBe('5');
  });

  it('says how to set a variable that is missing', async () => {
    const root = makeProject({
      'tend.yml': projectYaml(1),
      'web/web.tend.yml': `kind: Deploy
type: exec
name: web
spec: { command: [echo, '\${var.port}'] }
`,
    });
    // validate leaves it to the command that runs the action, with a note (as Garden's validate).
    const validated = await runTend(['validate'], { cwd: root });
    expect(validated.code, validated.stderr).toBe(0);
    expect(validated.stdout).toContain(
      'deploy.web reads variable "port", which nothing declares: it runs only when given one (--var port=…)',
    );
    const run = await runTend(['deploy'], { cwd: root });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(
      /unknown variable "var\.port"; available: var\.replicas; set it with --var port=<value>, or under the Project's variables: \(or environment dev's variables:\)/,
    );
  });
});
