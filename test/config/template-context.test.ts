import { execFileSync } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { TendError } from '../../src/errors.js';
import type { SourceLocation } from '../../src/errors.js';
import type { ConfigPath } from '../../src/config/project.js';
import { createTemplateContext, resolveActionSpec, selectEnvironment } from '../../src/config/environment.js';
import { loadProjectConfig } from '../../src/config/pipeline.js';
import { checkVarFlagsRead } from '../../src/config/variables.js';
import { findActionReferences, findVariableReferences, resolveTemplates } from '../../src/config/template.js';
import type { TemplateContext } from '../../src/config/template.js';
import { testPlugins } from './fixtures/plugins.js';
import { removeProjects, writeProject, yaml } from './fixtures/project.js';

afterAll(removeProjects);

const locate = (path: ConfigPath): SourceLocation => ({ file: `at:${path.join('.')}`, line: 1, column: 1 });

const base: TemplateContext = {
  project: { name: 'shop' },
  environment: { name: 'dev', namespace: 'shop-alice' },
  var: {},
  local: { username: 'alice', env: { LOG_LEVEL: 'debug' } },
};

function errorOf(fn: () => unknown): TendError {
  try {
    fn();
  } catch (error) {
    if (error instanceof TendError) return error;
    throw error;
  }
  throw new Error('expected an error');
}

describe('variables', () => {
  it('resolve their own templates, reading other variables, when first read', () => {
    const ctx = {
      ...base,
      var: {
        host: '${var.service}.${environment.namespace}.svc',
        service: '${project.name}-api',
        url: 'http://${var.host}:${var.port}',
        port: 8080,
        level: '${local.env.LOG_LEVEL || "info"}',
        ports: [80, '${var.port}'],
        nested: { a: { b: '${var.port + 1}' } },
      },
    };
    expect(
      resolveTemplates(
        { url: '${var.url}', level: '${variables.level}', ports: '${var.ports}', deep: '${var.nested.a.b}' },
        ctx,
        locate,
      ),
    ).toEqual({ url: 'http://shop-api.shop-alice.svc:8080', level: 'debug', ports: [80, 8080], deep: 8081 });
  });

  it('that refer to each other in a cycle are an error naming the chain', () => {
    const ctx = { ...base, var: { a: '${var.b}-x', b: '${var.c}', c: 'c=${var.a}', d: '${var.a}' } };
    const error = errorOf(() => resolveTemplates({ spec: { x: '${var.d}' } }, ctx, locate));
    expect(error.code).toBe('TEND_TEMPLATE');
    expect(error.message).toBe(
      'variables refer to each other in a cycle: var.a → var.b → var.c → var.a; break it by giving one of them a plain value',
    );
    expect(error.location).toEqual({ file: 'at:spec.x', line: 1, column: 1 });
    expect(
      errorOf(() => resolveTemplates('${var.self}', { ...base, var: { self: '${var.self}' } }, locate))
        .message,
    ).toBe(
      'variables refer to each other in a cycle: var.self → var.self; break it by giving one of them a plain value',
    );
  });

  it('with a broken template say which variable', () => {
    const ctx = { ...base, var: { a: '${var.b}', b: '${var.nope}' } };
    expect(errorOf(() => resolveTemplates('${var.a}', ctx, locate)).message).toBe(
      'in variable "var.a": in variable "var.b": unknown variable "var.nope"; available: var.a, var.b; ' +
        "set it with --var nope=<value>, or under the Project's variables: (or environment dev's variables:)",
    );
  });

  it('are found where they are read, through var and variables, in variables too', () => {
    expect(
      [
        ...findVariableReferences(
          { a: '${var.x || variables.y} ${var.m[var.k]}', b: '${variables.z}' },
          new Set(),
        ),
      ].sort(),
    ).toEqual(['k', 'm', 'x', 'y', 'z']);
  });

  it('from tend.yml resolve in a command, and a --var read only by a variable is read', async () => {
    const root = await writeProject({
      'tend.yml': yaml`
        kind: Project
        name: shop
        variables:
          image: \${var.registry}/\${project.name}:\${var.tag}
          tag: latest
        environments: [{ name: dev, defaultNamespace: shop-dev }]
        providers: [{ name: local }]
        ---
        kind: Run
        type: cmd
        name: hello
        spec:
          command: [echo, "\${var.image}"]
      `,
    });
    const { project, actions } = await loadProjectConfig({ cwd: root, plugins: testPlugins });
    const vars = { registry: 'r.example' };
    expect(() => checkVarFlagsRead(project, actions, vars, {})).not.toThrow();
    const environment = selectEnvironment(project, { vars });
    const ctx = createTemplateContext(project, environment, { username: 'alice', env: {} });
    expect(resolveActionSpec(actions[0]!, ctx)).toEqual({ command: ['echo', 'r.example/shop:latest'] });
  });
});

describe('contexts', () => {
  it('have Garden keys: environment.fullName, local.*, this.*, datetime.*, command.*', async () => {
    const root = await writeProject({
      'tend.yml': yaml`
        kind: Project
        name: shop
        environments: [{ name: dev, defaultNamespace: shop-dev }]
        providers: [{ name: local }]
        ---
        kind: Run
        type: cmd
        name: hello
        spec:
          command:
            - \${environment.fullName}
            - \${local.usernameLowerCase}
            - \${local.platform}/\${local.arch}
            - \${local.projectPath}
            - \${this.name} \${this.mode}
            - \${datetime.today}
      `,
    });
    const { project, actions } = await loadProjectConfig({ cwd: root, plugins: testPlugins });
    const environment = selectEnvironment(project, { vars: {} });
    const ctx = createTemplateContext(project, environment, { username: 'Alice', env: {} });
    const before = new Date().toISOString().slice(0, 10);
    const { command } = resolveActionSpec(actions[0]!, ctx) as { command: string[] };
    expect(command.slice(0, 5)).toEqual([
      'shop-dev.dev',
      'alice',
      `${process.platform}/${process.arch}`,
      project.root,
      'hello default',
    ]);
    expect([before, new Date().toISOString().slice(0, 10)]).toContain(command[5]);
    const withCommand = { ...base, command: { name: 'deploy', params: { force: true } } };
    expect(resolveTemplates('${command.name} ${command.params.force}', withCommand, locate)).toBe(
      'deploy true',
    );
  });

  it('read git only when git.* is used, from the project repository', async () => {
    const root = await writeProject({
      'tend.yml': yaml`
        kind: Project
        name: shop
        environments: [{ name: dev, defaultNamespace: shop-dev }]
        providers: [{ name: local }]
      `,
    });
    const { project } = await loadProjectConfig({ cwd: root, plugins: testPlugins });
    const ctx = createTemplateContext(project, selectEnvironment(project, { vars: {} }), {
      username: 'a',
      env: {},
    });
    // Not a repository yet: a default stands in, and without one the message says what to do.
    expect(resolveTemplates('${git.branch || "none"}', ctx, locate)).toBe('none');
    const git = (...args: string[]) =>
      execFileSync('git', args, { cwd: root, stdio: 'pipe' }).toString().trim();
    git('init', '-q', '-b', 'feature-x');
    git('-c', 'user.name=t', '-c', 'user.email=t@example.com', 'commit', '-q', '--allow-empty', '-m', 'x');
    git('remote', 'add', 'origin', 'https://example.com/shop.git');
    const fresh = createTemplateContext(project, selectEnvironment(project, { vars: {} }), {
      username: 'a',
      env: {},
    });
    expect(resolveTemplates('${git.branch} ${git.commitHash} ${git.originUrl}', fresh, locate)).toBe(
      `feature-x ${git('rev-parse', 'HEAD')} https://example.com/shop.git`,
    );
  });

  it('report git.* outside a repository with what to do', () => {
    const ctx = { ...base, git: { branch: undefined } } as TemplateContext;
    expect(errorOf(() => resolveTemplates('${git.branch}', ctx, locate)).message).toBe(
      'unknown key "git.branch"; available: (none)',
    );
  });
});

describe('action outputs', () => {
  const withOutputs: TemplateContext = {
    ...base,
    var: { app: 'api' },
    actions: { build: { api: { outputs: { image: 'r/api:1' } } } },
  };

  it('can be indexed by an expression', () => {
    expect(resolveTemplates('${actions.build[var.app].outputs.image}', withOutputs, locate)).toBe('r/api:1');
    expect(resolveTemplates('${actions.build.web.outputs.image || "none"}', withOutputs, locate)).toBe(
      'none',
    );
  });

  it('are found statically where kind and name are written out', () => {
    expect(
      findActionReferences({
        a: '${actions.build.api.outputs.x == "y" ? actions.deploy.db.outputs.u : ""}',
        b: '${actions.build[var.app].outputs.x}',
      }),
    ).toEqual(['build.api', 'deploy.db']);
  });

  it('are left as written in a partial resolution, with the rest resolved and escaped', () => {
    const partial = resolveTemplates(
      {
        a: 'x-${upper(var.app)}-${actions.build.api.outputs.image || "none"}-$${y}',
        b: { $if: '${actions.build.api.outputs.image == ""}', $then: 1, $else: 2 },
        c: '${var.app}',
      },
      { ...withOutputs, actions: undefined },
      locate,
      { keepActionOutputs: true },
    );
    expect(partial).toEqual({
      a: 'x-API-${actions.build.api.outputs.image || "none"}-$${y}',
      b: { $if: '${actions.build.api.outputs.image == ""}', $then: 1, $else: 2 },
      c: 'api',
    });
    expect(resolveTemplates(partial, withOutputs, locate)).toEqual({
      a: 'x-API-r/api:1-${y}',
      b: 2,
      c: 'api',
    });
  });
});
