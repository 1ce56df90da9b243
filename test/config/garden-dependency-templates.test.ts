/**
 * `dependencies:` written as a template (`dependencies: ${var.deps}`), or holding one
 * (`- deploy.${var.db}`), in a Garden 0.12 module (its own, a service's or task's, its build's)
 * and in an action (Garden's files and tend's): resolved in the chosen environment as Garden
 * resolves them, and checked as written references are, each problem at its line.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { configure } from '../../src/config/pipeline.js';
import { builtinPlugins } from '../../src/plugins/builtin.js';
import { configureError, describedError } from '../helpers/configure.js';
import { makeProject, removeProjects } from '../helpers/project.js';

afterEach(removeProjects);

/** apiVersion v1: Garden 0.13 reads `${…}?` as optional there. */
const gardenProject = `apiVersion: garden.io/v1
kind: Project
name: shop
defaultEnvironment: local
environments:
  - name: local
    variables: { deps: [deploy.db], backend: db, cacheDeps: [db], other: cache, builds: [db-image] }
  - name: ci
    variables: { deps: [], backend: cache, cacheDeps: [], other: db, builds: [] }
providers:
  - name: exec
`;

const modules = `kind: Module
type: exec
name: db
services:
  - name: db
    deployCommand: [echo, db]
  - name: cache
    deployCommand: [echo, cache]
    dependencies: \${var.cacheDeps}
---
kind: Module
type: exec
name: db-image
build: { command: [echo, built] }
---
kind: Module
type: exec
name: jobs
build:
  dependencies: \${var.builds}
tasks:
  - name: job
    command: [echo]
    dependencies:
      - db
      - \${var.other}
`;

const actions = `kind: Run
type: exec
name: later
dependencies: \${var.deps}
spec: { command: [echo] }
---
kind: Run
type: exec
name: entries
dependencies: [deploy.db, "\${var.missing}?", "\${deploy.gone}?", "deploy.\${var.backend}"]
spec: { command: [echo] }
`;

async function dependenciesIn(root: string, o: { env?: string; vars?: string[] } = {}) {
  const configuration = await configure({
    cwd: root,
    plugins: builtinPlugins(),
    secrets: () => Promise.resolve(undefined),
    ...o,
  });
  return Object.fromEntries(configuration.actions.map((a) => [a.ref, [...a.dependencies].sort()]));
}

describe('templated dependencies', () => {
  it('are resolved in each environment: a module’s, an entry’s, a build’s, an action’s whole list and its entries', async () => {
    const root = makeProject({
      'project.garden.yml': gardenProject,
      'garden.yml': modules,
      'actions.garden.yml': actions,
    });
    expect(await dependenciesIn(root)).toEqual({
      'deploy.db': [],
      'deploy.cache': ['deploy.db'],
      'build.db-image': [],
      // jobs has no build command, so no Build: its task depends on what the build would have.
      'run.job': ['build.db-image', 'deploy.cache', 'deploy.db'],
      'run.later': ['deploy.db'],
      // `${var.missing}?` and `${deploy.gone}?` (an unknown context, as worldofgeese/little_bits_of_buddha
      // writes it) are optional in a garden.io/v1 project: no dependency.
      'run.entries': ['deploy.db'],
    });
    expect(await dependenciesIn(root, { env: 'ci' })).toEqual({
      'deploy.db': [],
      'deploy.cache': [],
      'build.db-image': [],
      'run.job': ['deploy.db'],
      'run.later': [],
      'run.entries': ['deploy.cache', 'deploy.db'],
    });
    // --var reaches them as any template.
    expect((await dependenciesIn(root, { vars: ['backend=cache'] }))['run.entries']).toEqual([
      'deploy.cache',
      'deploy.db',
    ]);
  });

  it('in tend’s own files too, with the action’s own variables', async () => {
    const root = makeProject({
      'tend.yml': `kind: Project
name: shop
environments: [{ name: dev }]
providers: [{ name: exec }]
`,
      'db.tend.yml': `kind: Deploy
type: exec
name: db
spec: { command: [echo] }
---
kind: Run
type: exec
name: seed
variables: { needs: [deploy.db] }
dependencies: \${var.needs}
spec: { command: [echo] }
`,
    });
    expect(await dependenciesIn(root)).toEqual({ 'deploy.db': [], 'run.seed': ['deploy.db'] });
  });

  it('keep every written reference beside them, whatever its name', async () => {
    const root = makeProject({
      'project.garden.yml': gardenProject,
      'actions.garden.yml': `kind: Build
type: exec
name: templated-dependency
---
kind: Run
type: exec
name: uses
dependencies: [build.templated-dependency, "deploy.\${var.backend}"]
spec: { command: [echo] }
---
kind: Deploy
type: exec
name: db
spec: { deployCommand: [echo] }
`,
    });
    expect((await dependenciesIn(root))['run.uses']).toEqual(['build.templated-dependency', 'deploy.db']);
  });

  it('what they resolve to is checked as a written reference is, at the template’s line', async () => {
    const root = makeProject({
      'project.garden.yml': gardenProject,
      'garden.yml': modules,
      'actions.garden.yml': actions,
    });
    expect(describedError(await configureError(root, ['backend=nope']))).toBe(
      'TEND_CONFIG_INVALID actions.garden.yml:10 dependency "deploy.${var.backend}" of run.entries resolves to deploy.nope, which is not an action of this project',
    );
    expect(describedError(await configureError(root, ['other=nope']))).toBe(
      'TEND_CONFIG_INVALID garden.yml:26 dependency "${var.other}" of run.job resolves to deploy.nope, which is not an action of this project',
    );
    expect(describedError(await configureError(root, ['cacheDeps=cache']))).toBe(
      'TEND_CONFIG_INVALID garden.yml:9 dependency "${var.cacheDeps}" of deploy.cache resolves to deploy.cache: an action cannot depend on itself',
    );
    expect(describedError(await configureError(root, ['deps={"kind":1}']))).toBe(
      'TEND_CONFIG_INVALID actions.garden.yml:4 dependency "${var.deps}" resolves to "{\\"kind\\":1}"; expected an action reference (deploy.db) or a list of them',
    );
    expect(describedError(await configureError(root, ['builds=a b']))).toBe(
      'TEND_CONFIG_INVALID garden.yml:20 dependency "${var.builds}" resolves to "a b"; expected a module name or a list of them',
    );
  });

  it('a number that JSON has no word for is named as it is (.inf, not null)', async () => {
    const root = makeProject({
      'project.garden.yml': gardenProject,
      'actions.garden.yml': `kind: Run
type: exec
name: odd
variables: { deps: [.inf, -.inf] }
dependencies: \${var.deps}
spec: { command: [echo] }
`,
    });
    expect(describedError(await configureError(root))).toBe(
      'TEND_CONFIG_INVALID actions.garden.yml:5 dependency "${var.deps}" resolves to ["Infinity","-Infinity"]; expected an action reference (deploy.db) or a list of them',
    );
  });

  it('a template that cannot be read is the load’s error, at its line, listed with the load’s others', async () => {
    const root = makeProject({
      'project.garden.yml': gardenProject,
      'actions.garden.yml': `kind: Run
type: exec
name: broken
dependencies: ["deploy.\${var.backend"]
spec: { command: [echo] }
---
kind: Run
type: exec
name: other
dependencies: [deploy.nowhere]
spec: { command: [echo] }
`,
    });
    const error = await configureError(root);
    const errors = (error.detail as { errors: { message: string; location: { line: number } }[] }).errors;
    expect(errors.map((e) => [e.location.line, e.message.split(';')[0]])).toEqual([
      [4, 'unterminated template expression "${var.backend"'],
      [10, 'unknown dependency "deploy.nowhere" of run.other'],
    ]);
  });
});

describe("a ConfigTemplate's config with templated dependencies", () => {
  const template = (dependencies: string) => `kind: ConfigTemplate
name: job
inputs:
  build: { type: string }
configs:
  - kind: Run
    type: exec
    name: \${parent.name}
    dependencies: ${dependencies}
    spec: { command: [echo] }
`;
  const others = `kind: Build
type: exec
name: image
---
kind: Deploy
type: exec
name: db
spec: { deployCommand: [echo] }
---
kind: Deploy
type: exec
name: cache
spec: { deployCommand: [echo] }
---
kind: RenderTemplate
name: nightly
template: job
inputs: { build: image }
`;

  it('reading other contexts than inputs, parent and template: resolved in the environment, with them', async () => {
    const root = makeProject({
      'project.garden.yml': gardenProject,
      'templates.garden.yml': template('["build.${inputs.build}", "deploy.${var.backend}"]'),
      'actions.garden.yml': others,
    });
    expect((await dependenciesIn(root))['run.nightly']).toEqual(['build.image', 'deploy.db']);
    expect((await dependenciesIn(root, { env: 'ci' }))['run.nightly']).toEqual([
      'build.image',
      'deploy.cache',
    ]);
    expect(describedError(await configureError(root, ['backend=nope']))).toBe(
      'TEND_CONFIG_INVALID templates.garden.yml:9 dependency "deploy.${var.backend}" of run.nightly resolves to deploy.nope, which is not an action of this project (in ConfigTemplate job rendered by RenderTemplate nightly at actions.garden.yml:15:1)',
    );

    // The whole list as one template.
    writeFileSync(path.join(root, 'templates.garden.yml'), template('"${var.deps}"'));
    expect((await dependenciesIn(root))['run.nightly']).toEqual(['deploy.db']);
    expect((await dependenciesIn(root, { env: 'ci' }))['run.nightly']).toEqual([]);
  });

  it('a $concat reading other contexts stays the error at its line: it is read when the configuration loads', async () => {
    const root = makeProject({
      'project.garden.yml': gardenProject,
      'templates.garden.yml': template('[{ $concat: "${var.deps}" }]'),
      'actions.garden.yml': others,
    });
    expect(describedError(await configureError(root))).toMatch(
      /^TEND_CONFIG_INVALID templates\.garden\.yml:9 .*; a templated config's dependencies is read when tend loads the configuration, so it may use inputs, parent and template only \(in ConfigTemplate \S+ rendered by RenderTemplate nightly at actions\.garden\.yml:\d+:1\)$/,
    );
  });
});
