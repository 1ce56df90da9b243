import { afterEach, describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { executeCommand } from '../../src/commands/execute.js';
import { createNoopPlugin } from '../fixtures/noop-plugin.js';
import { makeProject, removeProjects } from '../helpers/project.js';

const projectYaml = `kind: Project
name: demo
defaultEnvironment: dev
environments:
  - name: dev
    defaultNamespace: demo-dev
providers:
  - name: noop
`;

function actionsYaml(actions: { kind: string; name: string; deps?: string[]; spec?: string }[]): string {
  return actions
    .map(
      (a) =>
        `kind: ${a.kind}\ntype: noop\nname: ${a.name}\n` +
        (a.deps ? `dependencies: [${a.deps.join(', ')}]\n` : '') +
        `spec: ${a.spec ?? '{}'}\n`,
    )
    .join('---\n');
}

afterEach(removeProjects);

describe('the solver', () => {
  it('never runs more actions at once than --concurrency allows', async () => {
    const actions = Array.from({ length: 12 }, (_, i) => ({
      kind: 'Build',
      name: `b${i}`,
      spec: '{delayMs: 20}',
    }));
    const root = makeProject({ 'tend.yml': projectYaml, 'a.tend.yml': actionsYaml(actions) });
    const noop = createNoopPlugin();
    const result = await executeCommand('build', [], { root, concurrency: 3 }, [noop.plugin]);
    expect(result.exitCode).toBe(0);
    expect(result.data.actions.every((a) => a.state === 'ready')).toBe(true);
    expect(noop.maxActive).toBe(3);
  });

  it('aborts only the dependants of a failed action; unrelated actions finish', async () => {
    const root = makeProject({
      'tend.yml': projectYaml,
      'a.tend.yml': actionsYaml([
        { kind: 'Build', name: 'bad', spec: '{fail: true}' },
        { kind: 'Build', name: 'good' },
        { kind: 'Deploy', name: 'on-bad', deps: ['build.bad'] },
        { kind: 'Test', name: 'after', deps: ['deploy.on-bad'] },
        { kind: 'Deploy', name: 'on-good', deps: ['build.good'] },
      ]),
    });
    const noop = createNoopPlugin();
    const result = await executeCommand('deploy', [], { root }, [noop.plugin]);
    const state = Object.fromEntries(result.data.actions.map((a) => [a.ref, a.state]));
    expect(state).toEqual({
      'build.bad': 'failed',
      'build.good': 'ready',
      'deploy.on-bad': 'aborted',
      'deploy.on-good': 'ready',
    });
    expect(result.exitCode).toBe(1);
    expect(noop.calls.filter((c) => c.ref === 'deploy.on-bad')).toEqual([]);
  });

  it('asks for the status first and skips what is ready for its version, unless forced', async () => {
    const root = makeProject({
      'tend.yml': projectYaml,
      'a.tend.yml': actionsYaml([{ kind: 'Build', name: 'api' }]),
    });
    const noop = createNoopPlugin();
    const first = await executeCommand('build', [], { root }, [noop.plugin]);
    expect(first.data.actions[0]!.state).toBe('ready');
    const second = await executeCommand('build', [], { root }, [noop.plugin]);
    expect(second.data.actions[0]!.state).toBe('cached');
    const forced = await executeCommand('build', ['api'], { root, force: true }, [noop.plugin]);
    expect(forced.data.actions[0]!.state).toBe('ready');
    expect(noop.calls.map((c) => c.handler)).toEqual(['status', 'execute', 'status', 'status', 'execute']);
  });

  it('re-runs only the changed action and its dependants when a source file changes', async () => {
    const root = makeProject({
      'tend.yml': projectYaml,
      'api/api.tend.yml': actionsYaml([
        { kind: 'Build', name: 'api' },
        { kind: 'Deploy', name: 'api', deps: ['build.api'] },
      ]),
      'api/main.js': 'v1',
      'web/web.tend.yml': actionsYaml([
        { kind: 'Build', name: 'web' },
        { kind: 'Deploy', name: 'web', deps: ['build.web'] },
      ]),
      'web/main.js': 'v1',
    });
    const noop = createNoopPlugin();
    const first = await executeCommand('deploy', [], { root }, [noop.plugin]);
    const v1 = Object.fromEntries(first.data.actions.map((a) => [a.ref, a.version]));
    writeFileSync(path.join(root, 'api', 'main.js'), 'v2');
    const second = await executeCommand('deploy', [], { root }, [noop.plugin]);
    const state = Object.fromEntries(second.data.actions.map((a) => [a.ref, a.state]));
    const v2 = Object.fromEntries(second.data.actions.map((a) => [a.ref, a.version]));
    expect(state).toEqual({
      'build.api': 'ready',
      'deploy.api': 'ready',
      'build.web': 'cached',
      'deploy.web': 'cached',
    });
    expect(v2['build.api']).not.toBe(v1['build.api']);
    expect(v2['deploy.api']).not.toBe(v1['deploy.api']);
    expect(v2['build.web']).toBe(v1['build.web']);
  });

  it('passes outputs of dependencies into templates and adds the edge from the reference', async () => {
    const root = makeProject({
      'tend.yml': projectYaml,
      'a.tend.yml': actionsYaml([
        { kind: 'Build', name: 'api', spec: '{outputs: {image: "registry/api:1"}}' },
        { kind: 'Deploy', name: 'api', spec: '{outputs: {used: "${actions.build.api.outputs.image}"}}' },
      ]),
    });
    const noop = createNoopPlugin();
    const result = await executeCommand('deploy', ['api'], { root }, [noop.plugin]);
    const deploy = result.data.actions.find((a) => a.ref === 'deploy.api')!;
    expect(deploy.outputs).toEqual({ used: 'registry/api:1' });
    expect(result.data.actions.map((a) => a.ref)).toEqual(['build.api', 'deploy.api']);
  });

  it('reports a dependency cycle with its path', async () => {
    const root = makeProject({
      'tend.yml': projectYaml,
      'a.tend.yml': actionsYaml([
        { kind: 'Build', name: 'a', deps: ['deploy.b'] },
        { kind: 'Deploy', name: 'b', deps: ['build.a'] },
      ]),
    });
    const noop = createNoopPlugin();
    await expect(executeCommand('build', [], { root }, [noop.plugin])).rejects.toThrow(
      /dependency cycle: build\.a → deploy\.b → build\.a/,
    );
  });
});
