/**
 * Garden refuses two 0.12 modules of one name (Garden.addRawModuleConfig), and a service and a
 * task of one name (ModuleGraph: "Service and task names must be mutually unique"), whether or not
 * a module is disabled: tend refuses them too, naming both places.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { loadProjectConfig } from '../../src/config/pipeline.js';
import type { TendError } from '../../src/errors.js';
import { builtinPlugins } from '../../src/plugins/builtin.js';
import { makeProject, removeProjects } from '../helpers/project.js';

afterEach(removeProjects);

const project = 'apiVersion: garden.io/v2\nkind: Project\nname: dupes\nenvironments: [{ name: local }]\n';

/** The configuration errors loading `root` fails with, each as `file:line:column message (code)`. */
async function loadErrors(root: string): Promise<string[]> {
  const error = await loadProjectConfig({ cwd: root, plugins: builtinPlugins() }).then(
    () => undefined,
    (caught: unknown) => caught as TendError,
  );
  const { errors = [] } = (error?.detail ?? {}) as {
    errors?: { code: string; message: string; location: { file: string; line: number; column: number } }[];
  };
  return errors.map(
    (e) => `${e.location.file}:${e.location.line}:${e.location.column} ${e.message} (${e.code})`,
  );
}

const execModule = (name: string, service: string, extra = '') => `kind: Module
name: ${name}
type: exec
${extra}services:
  - name: ${service}
    deployCommand: [echo, ${service}]
`;

describe('0.12 module names', () => {
  it('two modules of one name are refused, naming both files, a disabled one too', async () => {
    const root = makeProject({
      'garden.yml': project,
      'a/garden.yml': execModule('shared', 'api', 'build:\n  command: [make]\n'),
      'b/garden.yml': execModule('shared', 'worker', 'disabled: true\nbuild:\n  command: [make]\n'),
      // What depends on the refused module's service is no second error.
      'c/garden.yml': `kind: Module
name: user
type: exec
services:
  - name: user
    deployCommand: [echo, user]
    dependencies: [worker]
`,
    });
    expect(await loadErrors(root)).toEqual([
      'b/garden.yml:2:7 duplicate module shared; first defined at a/garden.yml:2:7: Garden refuses a module name declared twice (a disabled module too); rename one (TEND_CONFIG_DUPLICATE_ACTION)',
    ]);
  });

  it('a service and a task of one name are refused, naming both', async () => {
    const root = makeProject({
      'garden.yml': `${project}---
${execModule('module-a', 'dupe')}---
kind: Module
name: module-b
type: exec
tasks:
  - name: dupe
    command: [echo, task]
---
${execModule('module-c', 'user').replace('[echo, user]\n', '[echo, user]\n    dependencies: [dupe]\n')}`,
    });
    expect(await loadErrors(root)).toEqual([
      'garden.yml:17:11 task dupe of module module-b has the name of service dupe of module module-a (garden.yml:10:11): Garden requires service and task names to be mutually unique; rename one (TEND_CONFIG_DUPLICATE_ACTION)',
    ]);
  });

  it('modules, services and tasks of distinct names load', async () => {
    const root = makeProject({
      'garden.yml': project,
      'a/garden.yml': execModule('a', 'api'),
      'b/garden.yml': `${execModule('b', 'worker')}tasks:\n  - name: migrate\n    command: [migrate]\n`,
    });
    const config = await loadProjectConfig({ cwd: root, plugins: builtinPlugins() });
    expect(config.actions.map((a) => a.ref).sort()).toEqual(['deploy.api', 'deploy.worker', 'run.migrate']);
  });
});
