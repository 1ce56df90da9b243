/**
 * What an action's version covers: its resolved configuration (variables, --var, per-environment
 * variables, the values of expressions in its source files), its own document and files, what its
 * type reads beyond them (versionInputs), and nothing of its neighbours' documents.
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { actionVersions, openProject } from '../../src/commands/context.js';
import { ActionGraph } from '../../src/graph/graph.js';
import { stableStringify } from '../../src/stable-json.js';
import { clearSourceCache } from '../../src/graph/sources.js';
import { makeProject, removeProjects } from '../helpers/project.js';

const projectYaml = (variables = '{ replicas: 1, team: payments }') => `kind: Project
name: vers
variables: ${variables}
environments:
  - name: dev
    defaultNamespace: vers-dev
  - name: preview
    defaultNamespace: vers-preview
    variables: { replicas: 2 }
providers:
  - name: exec
`;

const webYaml = (testCommand = 'echo test') => `kind: Deploy
type: exec
name: web
spec:
  command: [sh, -c, 'echo replicas=\${var.replicas}']
---
kind: Test
type: exec
name: web
dependencies: [deploy.web]
spec:
  command: [sh, -c, '${testCommand}']
`;

async function versionsOf(root: string, options: { var?: string[]; env?: string } = {}) {
  clearSourceCache();
  const opened = await openProject({ root, ...options });
  const graph = new ActionGraph(opened.actions);
  const versions = await actionVersions(opened, graph, graph.topologicalOrder());
  return Object.fromEntries([...versions].map(([ref, v]) => [ref, v.version]));
}

afterEach(removeProjects);

describe('action versions', () => {
  it('cover the resolved spec: a --var or a changed variable gives a new version; the same value does not', async () => {
    const root = makeProject({ 'tend.yml': projectYaml(), 'web/web.tend.yml': webYaml() });
    const base = await versionsOf(root);
    expect(await versionsOf(root)).toEqual(base);
    expect(await versionsOf(root, { var: ['replicas=1'] })).toEqual(base);

    const three = await versionsOf(root, { var: ['replicas=3'] });
    expect(three['deploy.web']).not.toBe(base['deploy.web']);
    // The Test depends on the Deploy: its version follows.
    expect(three['test.web']).not.toBe(base['test.web']);

    // A variable the action does not use changes nothing.
    expect(await versionsOf(root, { var: ['team=search'] })).toEqual(base);

    writeFileSync(path.join(root, 'tend.yml'), projectYaml('{ replicas: 3, team: payments }'));
    expect((await versionsOf(root))['deploy.web']).toBe(three['deploy.web']);
  });

  it('cover the values of template expressions in source files (a manifest with ${var.replicas})', async () => {
    const root = makeProject({
      'tend.yml': projectYaml(),
      'api/api.tend.yml': 'kind: Deploy\ntype: exec\nname: api\nspec: { command: [cat, manifest.yaml] }\n',
      'api/manifest.yaml': 'replicas: ${var.replicas}\nliteral: $${var.team}\nshell: ${HOME}\n',
    });
    const base = await versionsOf(root);
    expect((await versionsOf(root, { var: ['replicas=3'] }))['deploy.api']).not.toBe(base['deploy.api']);
    // `$${var.team}` is a literal, `${HOME}` is not tend's: neither is part of the version.
    expect(await versionsOf(root, { var: ['team=search'] })).toEqual(base);
  });

  it("cover the action's own document, not its neighbours' in the same file", async () => {
    const root = makeProject({ 'tend.yml': projectYaml(), 'web/web.tend.yml': webYaml() });
    const base = await versionsOf(root);
    writeFileSync(path.join(root, 'web', 'web.tend.yml'), webYaml('echo another test'));
    const edited = await versionsOf(root);
    expect(edited['deploy.web']).toBe(base['deploy.web']);
    expect(edited['test.web']).not.toBe(base['test.web']);

    // The project's tend.yml is configuration too: an action whose source is the root ignores
    // a change to it that its configuration does not see.
    const atRoot = makeProject({
      'tend.yml': projectYaml() + '---\n' + webYaml(),
    });
    const before = await versionsOf(atRoot);
    writeFileSync(
      path.join(atRoot, 'tend.yml'),
      projectYaml('{ replicas: 1, team: search }') + '---\n' + webYaml(),
    );
    expect(await versionsOf(atRoot)).toEqual(before);
  });

  it('cover the files the action includes: a new file changes it unless exclude leaves it out', async () => {
    const root = makeProject({
      'tend.yml': projectYaml(),
      'worker/worker.tend.yml': `kind: Deploy
type: exec
name: worker
exclude: ['**/*.test.js', docs/**]
spec: { command: [node, main.js] }
---
kind: Deploy
type: exec
name: only-src
include: [src/**]
spec: { command: [node, src/main.js] }
`,
      'worker/main.js': 'run()',
      'worker/src/main.js': 'run()',
    });
    const base = await versionsOf(root);
    writeFileSync(path.join(root, 'worker', 'check.test.js'), 'test()');
    writeFileSync(path.join(root, 'worker', 'README.md'), 'notes');
    const added = await versionsOf(root);
    // README.md is a source file of the worker; check.test.js is excluded; only-src includes src/ only.
    expect(added['deploy.worker']).not.toBe(base['deploy.worker']);
    expect(added['deploy.only-src']).toBe(base['deploy.only-src']);
    writeFileSync(path.join(root, 'worker', 'check.test.js'), 'test(2)');
    expect(await versionsOf(root)).toEqual(added);
    writeFileSync(path.join(root, 'worker', 'src', 'main.js'), 'run(2)');
    expect((await versionsOf(root))['deploy.only-src']).not.toBe(base['deploy.only-src']);
  });

  it("leave out the files a Garden project's ignore files list (several lines, in any directory)", async () => {
    const root = makeProject({
      'project.garden.yml':
        'apiVersion: garden.io/v2\nkind: Project\nname: ign\nenvironments: [{ name: dev }]\n',
      '.gardenignore': '# build output\ndist/\n\n*.log\n',
      'worker/.gardenignore': '# local notes\nnotes/*\n!notes/shipped.md\n',
      'worker/garden.yml': 'kind: Build\ntype: exec\nname: worker\nspec: { command: [node, main.js] }\n',
      'worker/main.js': 'run()',
      'worker/notes/shipped.md': 'shipped',
    });
    const base = await versionsOf(root);
    for (const ignored of ['worker/dist/main.js', 'worker/run.log', 'worker/notes/todo.md']) {
      mkdirSync(path.dirname(path.join(root, ignored)), { recursive: true });
      writeFileSync(path.join(root, ignored), 'x');
      expect(await versionsOf(root), ignored).toEqual(base);
    }
    writeFileSync(path.join(root, 'worker', 'notes', 'shipped.md'), 'shipped (2)');
    expect((await versionsOf(root))['build.worker']).not.toBe(base['build.worker']);
  });

  it("cover the environment's variables, which --var overrides", async () => {
    const root = makeProject({ 'tend.yml': projectYaml(), 'web/web.tend.yml': webYaml() });
    const dev = await versionsOf(root);
    const preview = await versionsOf(root, { env: 'preview' });
    expect(preview['deploy.web']).not.toBe(dev['deploy.web']);
    expect(await versionsOf(root, { var: ['replicas=2'] })).toEqual(preview);
    expect(await versionsOf(root, { env: 'preview', var: ['replicas=1'] })).toEqual(dev);
  });
});

describe("what an action type reads beyond its sources (the kubernetes Deploy's versionInputs)", () => {
  const k8sProject = (spec: string, files: Record<string, string>) =>
    makeProject({
      'tend.yml': projectYaml().replace('  - name: exec', '  - name: kubernetes'),
      'deploy/web.tend.yml': `kind: Deploy\ntype: kubernetes\nname: web\nspec:\n${spec}`,
      ...files,
    });
  const configMap = (data: string) =>
    `apiVersion: v1\nkind: ConfigMap\nmetadata: { name: web }\ndata: ${data}\n`;

  it('manifest files outside the source: their content and the values of expressions in them', async () => {
    const root = k8sProject('  files: [../k8s/*.yaml]\n', {
      'k8s/web.yaml': configMap('{ n: "${var.replicas}" }'),
    });
    const base = await versionsOf(root);
    expect(await versionsOf(root)).toEqual(base);
    expect((await versionsOf(root, { var: ['replicas=3'] }))['deploy.web']).not.toBe(base['deploy.web']);
    writeFileSync(path.join(root, 'k8s', 'more.yaml'), configMap('{}').replace('name: web', 'name: more'));
    const added = await versionsOf(root);
    expect(added['deploy.web']).not.toBe(base['deploy.web']);
    writeFileSync(path.join(root, 'k8s', 'notes.txt'), 'not matched');
    expect(await versionsOf(root)).toEqual(added);
  });

  it('a kustomization as kustomize renders it: a change of what it renders is a new version, a comment is not; a failure is hashed, not thrown', async () => {
    const root = k8sProject('  kustomize: { path: ../k8s }\n', {
      'k8s/kustomization.yaml': 'resources: [web.yaml]\n',
      'k8s/web.yaml': configMap('{ a: "1" }'),
    });
    const base = await versionsOf(root);
    writeFileSync(path.join(root, 'k8s', 'kustomization.yaml'), '# the app\nresources: [web.yaml]\n');
    expect(await versionsOf(root)).toEqual(base);
    writeFileSync(path.join(root, 'k8s', 'web.yaml'), configMap('{ a: "2" }'));
    const changed = await versionsOf(root);
    expect(changed['deploy.web']).not.toBe(base['deploy.web']);
    writeFileSync(path.join(root, 'k8s', 'kustomization.yaml'), 'resources: [gone.yaml]\n');
    const broken = await versionsOf(root);
    expect(broken['deploy.web']).toMatch(/^v-[0-9a-f]{12}$/);
    expect(broken['deploy.web']).not.toBe(changed['deploy.web']);
  });
});

describe('versions across tend releases', () => {
  it('stay what they were: an unchanged action is not run again after an upgrade', async () => {
    // Computed by an earlier tend; a change here re-runs every action of every project.
    const root = makeProject({
      'tend.yml':
        'kind: Project\nname: bench\ndefaultEnvironment: dev\n' +
        'environments: [{ name: dev, defaultNamespace: bench-dev }]\nproviders: [{ name: exec }]\n---\n' +
        'kind: Build\ntype: exec\nname: b0\nspec: { command: [echo, built 0] }\n',
    });
    expect((await versionsOf(root))['build.b0']).toBe('v-ac8144a0de4e');
  });

  it('hash configurations through the same JSON as before, for any value', () => {
    // The implementation versions were first computed with.
    const reference = (value: unknown): string => {
      if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
      if (Array.isArray(value)) return `[${value.map(reference).join(',')}]`;
      const entries = Object.entries(value as Record<string, unknown>)
        .filter(([, v]) => v !== undefined)
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
      return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${reference(v)}`).join(',')}}`;
    };
    const value = fc.letrec((tie) => ({
      any: fc.oneof(
        { depthSize: 'small' },
        fc.jsonValue(),
        fc.constant(undefined),
        fc.array(tie('any')),
        fc.dictionary(fc.string({ unit: 'binary' }), tie('any')),
      ),
    })).any;
    fc.assert(
      fc.property(value, (v) => stableStringify(v) === reference(v)),
      { numRuns: 2000 },
    );
  });
});
