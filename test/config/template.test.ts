import { afterAll, describe, expect, it } from 'vitest';
import { TendError } from '../../src/errors.js';
import type { SourceLocation } from '../../src/errors.js';
import type { ConfigPath } from '../../src/config/project.js';
import { createTemplateContext, resolveActionSpec, selectEnvironment } from '../../src/config/environment.js';
import { loadProjectConfig } from '../../src/config/pipeline.js';
import {
  actionReferencesOf,
  findActionReferences,
  parseTemplate,
  resolveTemplates,
} from '../../src/config/template.js';
import type { TemplateContext } from '../../src/config/template.js';
import { testPlugins } from './fixtures/plugins.js';
import { removeProjects, writeProject, yaml } from './fixtures/project.js';

afterAll(removeProjects);

const context: TemplateContext = {
  project: { name: 'shop' },
  environment: { name: 'dev', namespace: 'shop-alice' },
  var: { team: 'payments', replicas: 2, debug: false },
  local: { username: 'alice', env: { HOME: '/home/alice', EMPTY: '' } },
  actions: { build: { api: { outputs: { image: 'registry/api:v1', digest: 'sha256:1' } } } },
};

/** Locations that encode the path, so tests can see which value an error points at. */
const locate = (path: ConfigPath): SourceLocation => ({ file: `at:${path.join('.')}`, line: 1, column: 1 });

const resolve = (value: unknown, ctx: TemplateContext = context) => resolveTemplates(value, ctx, locate);

function errorOf(fn: () => unknown): TendError {
  try {
    fn();
  } catch (error) {
    if (error instanceof TendError) return error;
    throw error;
  }
  throw new Error('expected an error');
}

describe('resolveTemplates', () => {
  it.each([
    ['${project.name}', 'shop'],
    ['${environment.name}', 'dev'],
    ['${environment.namespace}', 'shop-alice'],
    ['${var.team}', 'payments'],
    ['${local.username}', 'alice'],
    ['${local.env.HOME}', '/home/alice'],
    ['${local.env.EMPTY}', ''],
    ['${actions.build.api.outputs.image}', 'registry/api:v1'],
    ['${ var.team }', 'payments'],
  ])('resolves %s', (template, expected) => {
    expect(resolve(template)).toBe(expected);
  });

  it('keeps the type of a value that is exactly one expression', () => {
    expect(resolve('${var.replicas}')).toBe(2);
    expect(resolve('${var.debug}')).toBe(false);
    expect(resolve('n=${var.replicas} debug=${var.debug}')).toBe('n=2 debug=false');
  });

  it('resolves deeply and returns a new value', () => {
    const spec = {
      command: ['deploy', '--image=${actions.build.api.outputs.image}', 3, true, null],
      env: { TEAM: '${var.team}', NS: '${environment.namespace}', PLAIN: 'no templates' },
      replicas: '${var.replicas}',
    };
    const before = structuredClone(spec);
    expect(resolve(spec)).toEqual({
      command: ['deploy', '--image=registry/api:v1', 3, true, null],
      env: { TEAM: 'payments', NS: 'shop-alice', PLAIN: 'no templates' },
      replicas: 2,
    });
    expect(spec).toEqual(before);
  });

  it('turns $${ into a literal ${', () => {
    expect(resolve('$${var.team}')).toBe('${var.team}');
    expect(resolve('echo $${HOME} ${var.team}')).toBe('echo ${HOME} payments');
    expect(resolve('cost: $5 {braces} $')).toBe('cost: $5 {braces} $');
  });

  it('can leave action outputs for later, escapes included', () => {
    const partial = resolveTemplates(
      { a: '${actions.build.api.outputs.image}', b: '${var.team}:${actions.build.api.outputs.digest}:$${x}' },
      { ...context, actions: undefined },
      locate,
      { keepActionOutputs: true },
    );
    expect(partial).toEqual({
      a: '${actions.build.api.outputs.image}',
      b: 'payments:${actions.build.api.outputs.digest}:$${x}',
    });
    expect(resolve(partial)).toEqual({ a: 'registry/api:v1', b: 'payments:sha256:1:${x}' });
  });

  it.each([
    [
      '${var.tem}',
      // A declared variable misspelt: its name, not a --var to pass.
      'unknown variable "var.tem"; did you mean "var.team"? available: var.team, var.replicas, var.debug',
    ],
    ['${project.nam}', 'unknown key "project.nam"; available: project.name'],
    [
      '${environment.namespac}',
      'unknown key "environment.namespac"; available: environment.name, environment.namespace',
    ],
    ['${local.user}', 'unknown key "local.user"; available: local.username, local.env'],
    ['${projects.name}', 'unknown key "projects.name"; available: project, environment, var, local, actions'],
    ['${local.env.NOPE}', 'environment variable "NOPE" is not set (used as "local.env.NOPE")'],
    ['${project}', 'incomplete template expression "project"; expected one of: project.name'],
    ['${local.env}', 'incomplete template expression "local.env"; expected one of: local.env.<NAME>'],
    ['${var.team.x}', 'unknown key "var.team.x"; "var.team" is a value, not a mapping'],
    [
      '${actions.build.api.outputs.imag}',
      'action build.api has no output "imag"; available: actions.build.api.outputs.image, actions.build.api.outputs.digest',
    ],
    [
      '${actions.build.web.outputs.image}',
      'outputs of build.web are not available for "actions.build.web.outputs.image": it has not run before this action',
    ],
    [
      '${actions.compile.api.outputs.x}',
      'unknown action kind "compile" in "actions.compile.api.outputs.x"; expected one of: build, deploy, test, run',
    ],
    ['a ${var.team', 'unterminated template expression "${var.team"; expected a closing "}"'],
    [
      '${var.team + }',
      'invalid template expression "${var.team + }"; expected a value (a key, a literal, a function call or "("), found "}" at offset 13',
    ],
  ])('rejects %s', (template, message) => {
    const error = errorOf(() => resolve({ spec: { list: ['ok', template] } }));
    expect(error.code).toBe('TEND_TEMPLATE');
    expect(error.message).toBe(message);
    expect(error.location).toEqual({ file: 'at:spec.list.1', line: 1, column: 1 });
  });

  it('points at the string in its file', async () => {
    const root = await writeProject({
      'tend.yml': yaml`
        kind: Project
        name: shop
        variables: { team: payments }
        environments: [{ name: dev, defaultNamespace: shop-dev }]
        providers: [{ name: local }]
        ---
        kind: Run
        type: cmd
        name: hello
        spec:
          command:
            - echo
            - "team \${var.tem}"
      `,
    });
    const { project, actions } = await loadProjectConfig({ cwd: root, plugins: testPlugins });
    const environment = selectEnvironment(project, { vars: {} });
    const ctx = createTemplateContext(project, environment, { username: 'alice', env: {} });
    const error = errorOf(() => resolveActionSpec(actions[0]!, ctx));
    expect(error.toString()).toBe(
      'tend.yml:13:7: unknown variable "var.tem"; did you mean "var.team"? available: var.team',
    );
    expect(error.exitCode).toBe(2);
  });
});

describe('findActionReferences', () => {
  it('returns each action referenced by an output expression, once', () => {
    expect(
      findActionReferences({
        image: '${actions.build.api.outputs.image}',
        args: [
          '--url=${actions.deploy.api-v2.outputs.url}',
          '${actions.build.api.outputs.digest}',
          '${var.x}',
        ],
        escaped: '$${actions.build.escaped.outputs.x}',
        n: 3,
      }),
    ).toEqual(['build.api', 'deploy.api-v2']);
    expect(findActionReferences('no templates')).toEqual([]);
  });

  it('says a spec reads outputs when the action is chosen by an expression (known only when resolved)', () => {
    expect(
      actionReferencesOf({ image: '${actions.build[parent.name].outputs.deployment-image-id}' }),
    ).toEqual({
      refs: [],
      fieldRefs: [],
      readsOutputs: true,
    });
    expect(actionReferencesOf({ image: '${var.image}' })).toEqual({
      refs: [],
      fieldRefs: [],
      readsOutputs: false,
    });
  });

  it("tells what the configuration says of an action (buildPath…) from its outputs; Garden's runtime and modules roots read actions", () => {
    expect(
      actionReferencesOf({
        dir: '${actions.build.manifests.buildPath}',
        both: '${actions.build.api.sourcePath}/${actions.build.api.outputs.image}',
        off: '${actions.deploy.db.disabled}',
        image: '${modules.fetch.outputs.local-image-id}',
        url: '${runtime.services.web.outputs.url}',
        task: '${runtime.tasks.seed.version}',
      }),
    ).toEqual({
      refs: ['build.api', 'build.fetch', 'deploy.web', 'run.seed'],
      fieldRefs: ['build.manifests', 'deploy.db'],
      readsOutputs: true,
    });
    expect(actionReferencesOf({ dir: '${actions.build.manifests.buildPath}' }).readsOutputs).toBe(false);
  });
});

describe('parseTemplate', () => {
  it('splits literals and expressions', () => {
    expect(parseTemplate('a-${var.x}-$${b}')).toEqual([
      { literal: 'a-' },
      { expression: 'var.x', path: ['var', 'x'] },
      { literal: '-${b}' },
    ]);
  });

  it('gives an optional expression ("${…}?") as its expression alone', () => {
    expect(parseTemplate('${var.x}?')).toEqual([{ expression: 'var.x', path: ['var', 'x'] }]);
    expect(parseTemplate('a-${var.x}?')).toEqual([
      { literal: 'a-' },
      { expression: 'var.x', path: ['var', 'x'] },
      { literal: '?' },
    ]);
  });
});
