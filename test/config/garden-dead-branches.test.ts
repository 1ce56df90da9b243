/**
 * A reference to an action in a branch that the chosen environment does not use (`?:`,
 * `$if`/`$then`/`$else`, `${if}…${else}…${endif}`, `a && b || c`) is no dependency, as in Garden
 * (core/src/template/analysis.ts getContextLookupReferences follows the active branch only);
 * when the condition reads what is known only later (an action's outputs), both branches count.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { validateCommand } from '../../src/commands/validate.js';
import { describedError, failure } from '../helpers/configure.js';
import { makeProject, removeProjects } from '../helpers/project.js';

afterEach(removeProjects);

const gardenProject = `apiVersion: garden.io/v1
kind: Project
name: shop
environments:
  - name: dev
  - name: staging
providers:
  - name: local-kubernetes
`;

const deploy = (name: string, env: string) => `kind: Deploy
name: ${name}
type: exec
spec:
  deployCommand: ["true"]
  env:
    ${env.replaceAll('\n', '\n    ')}
`;

const db = `kind: Deploy
name: db
type: exec
spec:
  deployCommand: ["true"]
`;

/** Each form, with its live branch `'local'` in dev and `db`'s outputs in staging. */
const branchForms = [
  deploy('ternary', `X: "\${environment.name == 'dev' ? 'local' : actions.deploy.db.outputs.host}"`),
  deploy(
    'if-object',
    `X:\n  $if: \${environment.name == 'dev'}\n  $then: local\n  $else: \${actions.deploy.db.outputs.host}`,
  ),
  deploy(
    'if-block',
    `X: "\${if environment.name == 'dev'}local\${else}\${actions.deploy.db.outputs.host}\${endif}"`,
  ),
  deploy('or', `X: "\${environment.name == 'dev' && 'local' || actions.deploy.db.outputs.host}"`),
];

async function dependenciesIn(root: string, env: string) {
  const result = await validateCommand({ root, var: [], env });
  expect(result.exitCode).toBe(0);
  return Object.fromEntries(result.data.actions.map((a) => [a.ref, a.dependencies]));
}

describe('a reference in a branch the environment does not use', () => {
  it('is no dependency; in the environment that uses it, it is one', async () => {
    const root = makeProject({
      'project.garden.yml': gardenProject,
      'garden.yml': [db, ...branchForms].join('---\n'),
    });
    expect(await dependenciesIn(root, 'dev')).toEqual({
      'deploy.db': [],
      'deploy.ternary': [],
      'deploy.if-object': [],
      'deploy.if-block': [],
      'deploy.or': [],
    });
    expect(await dependenciesIn(root, 'staging')).toEqual({
      'deploy.db': [],
      'deploy.ternary': ['deploy.db'],
      'deploy.if-object': ['deploy.db'],
      'deploy.if-block': ['deploy.db'],
      'deploy.or': ['deploy.db'],
    });
  });

  it('of an action the environment disables validates (garden-example-cloud-sql)', async () => {
    const root = makeProject({
      'project.garden.yml': gardenProject,
      'garden.yml': [`${db}disabled: \${environment.name != "staging"}\n`, branchForms[0]].join('---\n'),
    });
    expect(await dependenciesIn(root, 'dev')).toEqual({ 'deploy.ternary': [] });
    expect(await dependenciesIn(root, 'staging')).toEqual({
      'deploy.db': [],
      'deploy.ternary': ['deploy.db'],
    });
  });

  it('of a Build the environment disables does not keep the Build (one a used branch reads, it does)', async () => {
    const root = makeProject({
      'project.garden.yml': gardenProject,
      'garden.yml': [
        `kind: Build\nname: image\ntype: exec\ndisabled: \${environment.name != "staging"}\n`,
        deploy('app', `X: "\${environment.name == 'staging' ? actions.build.image.outputs.log : 'local'}"`),
        deploy('reader', `X: "\${environment.name == 'dev' ? actions.build.image.outputs.log : 'local'}"`),
      ].join('---\n'),
    });
    const dev = await validateCommand({ root, var: [], env: 'dev' });
    expect(dev.data.actions.map((a) => [a.ref, a.dependencies])).toEqual([
      ['build.image', []],
      ['deploy.app', []],
      ['deploy.reader', ['build.image']],
    ]);
    writeFileSync(
      path.join(root, 'garden.yml'),
      readFileSync(path.join(root, 'garden.yml'), 'utf8').replace("== 'dev' ?", "== 'nowhere' ?"),
    );
    expect(await dependenciesIn(root, 'dev')).toEqual({ 'deploy.app': [], 'deploy.reader': [] });
  });

  it('in a 0.12 module reading runtime.services, of a module the environment disables, validates', async () => {
    const root = makeProject({
      'project.garden.yml': gardenProject,
      'd/garden.yml': `kind: Module
name: db
type: exec
disabled: \${environment.name != "staging"}
services:
  - name: db
    deployCommand: ["true"]
`,
      'b/garden.yml': `kind: Module
name: backend
type: exec
services:
  - name: backend
    deployCommand: ["true"]
    env:
      DB_HOST: "\${environment.name == 'dev' ? 'postgres' : runtime.services.db.outputs.host}"
`,
    });
    expect(await dependenciesIn(root, 'dev')).toEqual({ 'deploy.backend': [] });
    expect(await dependenciesIn(root, 'staging')).toEqual({
      'deploy.backend': ['deploy.db'],
      'deploy.db': [],
    });
  });

  it('counts both branches when the condition reads what is known only once an action ran', async () => {
    const root = makeProject({
      'project.garden.yml': gardenProject,
      'garden.yml': [
        db,
        deploy('cache', 'X: "1"'),
        deploy(
          'reader',
          `X: "\${actions.deploy.cache.outputs.log == '' ? 'local' : actions.deploy.db.outputs.host}"`,
        ),
      ].join('---\n'),
    });
    expect((await dependenciesIn(root, 'dev'))['deploy.reader']).toEqual(['deploy.cache', 'deploy.db']);
  });

  it('naming an action that does not exist is no error; where the branch is used, it is one at its line', async () => {
    const root = makeProject({
      'project.garden.yml': gardenProject,
      'garden.yml': branchForms.map((form) => form.replaceAll('deploy.db.', 'deploy.nope.')).join('---\n'),
    });
    expect(await dependenciesIn(root, 'dev')).toEqual({
      'deploy.ternary': [],
      'deploy.if-object': [],
      'deploy.if-block': [],
      'deploy.or': [],
    });
    const error = await failure(validateCommand({ root, var: [], env: 'staging' }));
    expect(describedError(error)).toBe(
      'TEND_TEMPLATE garden.yml:7 unknown action "deploy.nope" in a template expression; deploy actions: deploy.if-block, deploy.if-object, deploy.or, deploy.ternary',
    );
  });

  it('in a rendered action, where the branch is used, the error says which rendering it is of', async () => {
    const root = makeProject({
      'project.garden.yml': gardenProject,
      'garden.yml': `kind: ConfigTemplate
name: tpl
configs:
  - kind: Deploy
    type: exec
    name: \${parent.name}
    spec:
      deployCommand: ["true"]
      env:
        X: "\${environment.name == 'dev' ? 'local' : actions.deploy.nope.outputs.host}"
---
kind: RenderTemplate
template: tpl
name: api
`,
    });
    expect(await dependenciesIn(root, 'dev')).toEqual({ 'deploy.api': [] });
    const error = await failure(validateCommand({ root, var: [], env: 'staging' }));
    expect(describedError(error)).toMatch(
      /^TEND_TEMPLATE garden\.yml:10 unknown action "deploy\.nope" in a template expression; deploy actions: deploy\.api.*RenderTemplate api/s,
    );
  });
});
