import { afterAll, describe, expect, it } from 'vitest';
import { TendError } from '../../src/errors.js';
import {
  createTemplateContext,
  providersOf,
  resolveProviderConfig,
  selectEnvironment,
} from '../../src/config/environment.js';
import { loadProjectConfig } from '../../src/config/pipeline.js';
import { resolveTemplates } from '../../src/config/template.js';
import { parseVarFlags } from '../../src/config/var-overrides.js';
import { testPlugins } from './fixtures/plugins.js';
import { removeProjects, writeProject, yaml } from './fixtures/project.js';

afterAll(removeProjects);

const alice = { username: 'alice', env: { CLUSTER: 'kind-dev' } };
const at = { file: 'spec', line: 1, column: 1 };

async function load(tendYml: string) {
  const root = await writeProject({ 'tend.yml': tendYml });
  return (await loadProjectConfig({ cwd: root, plugins: testPlugins })).project;
}

const shop = yaml`
  kind: Project
  name: shop
  defaultEnvironment: dev
  variables: { team: payments, replicas: 2, debug: false }
  environments:
    - name: dev
      cleanup: { afterInactivity: 8h }
    - name: preview
      defaultNamespace: shop-pr-\${var.pr}
    - name: team
      defaultNamespace: \${var.team}-\${local.username}-\${environment.name}
  providers:
    - name: local
    - name: cluster
      environments: [preview]
      context: \${local.env.CLUSTER}
      namespace: \${environment.namespace}
      replicas: \${var.replicas}
`;

function errorOf(fn: () => unknown): TendError {
  try {
    fn();
  } catch (error) {
    if (error instanceof TendError) return error;
    throw error;
  }
  throw new Error('expected an error');
}

describe('selectEnvironment', () => {
  it('uses the default environment and the default namespace ${project.name}-${local.username}', async () => {
    const project = await load(shop);
    expect(selectEnvironment(project, { vars: {}, local: alice })).toEqual({
      name: 'dev',
      namespace: 'shop-alice',
      cleanup: { afterInactivity: '8h', action: 'delete' },
      variables: { team: 'payments', replicas: 2, debug: false },
      varfiles: [],
      varfileVariables: {},
      locateNamespace: expect.any(Function),
    });
  });

  it('templates defaultNamespace with --var overrides and local values', async () => {
    const project = await load(shop);
    expect(selectEnvironment(project, { env: 'preview', vars: { pr: '42' }, local: alice }).namespace).toBe(
      'shop-pr-42',
    );
    const team = selectEnvironment(project, {
      env: 'team',
      vars: { team: 'checkout', replicas: '3', debug: 'true' },
      local: alice,
    });
    expect(team.namespace).toBe('checkout-alice-team');
    expect(team.variables).toEqual({ team: 'checkout', replicas: 3, debug: true });
  });

  it('keeps a --var that does not read as the overridden type a string', async () => {
    const project = await load(shop);
    expect(selectEnvironment(project, { vars: { replicas: 'many' }, local: alice }).variables.replicas).toBe(
      'many',
    );
  });

  it('lists the environments when the one asked for does not exist', async () => {
    const project = await load(shop);
    const error = errorOf(() => selectEnvironment(project, { env: 'prod', vars: {}, local: alice }));
    expect(error.code).toBe('TEND_ENVIRONMENT_NOT_FOUND');
    expect(error.message).toBe('unknown environment "prod"; available: dev, preview, team');
  });

  it('names the missing variable of a namespace template, at its position', async () => {
    const project = await load(shop);
    const error = errorOf(() => selectEnvironment(project, { env: 'preview', vars: {}, local: alice }));
    expect(error.toString()).toBe(
      'tend.yml:9:23: unknown variable "var.pr"; available: var.team, var.replicas, var.debug' +
        "; set it with --var pr=<value>, or under the Project's variables: (or environment preview's variables:)",
    );
  });

  it("applies the environment's variables over the project's, and --var over both", async () => {
    const project = await load(yaml`
      kind: Project
      name: shop
      variables: { port: 8080, team: payments }
      environments:
        - name: dev
        - name: preview
          defaultNamespace: shop-pr-\${var.pr}
          variables: { pr: 42, port: 9090, debug: true }
    `);
    expect(selectEnvironment(project, { vars: {}, local: alice }).variables).toEqual({
      port: 8080,
      team: 'payments',
    });
    const preview = selectEnvironment(project, { env: 'preview', vars: {}, local: alice });
    expect(preview.namespace).toBe('shop-pr-42');
    expect(preview.variables).toEqual({ port: 9090, team: 'payments', pr: 42, debug: true });
    const overridden = selectEnvironment(project, {
      env: 'preview',
      vars: { port: '7000', pr: '7' },
      local: alice,
    });
    expect(overridden.namespace).toBe('shop-pr-7');
    // An override of a number stays a number.
    expect(overridden.variables.port).toBe(7000);
  });

  it("rejects an environment variable's invalid name at its position", async () => {
    const root = await writeProject({
      'tend.yml': yaml`
        kind: Project
        name: shop
        environments:
          - name: dev
            variables: { 9lives: x }
      `,
    });
    const error = await loadProjectConfig({ cwd: root, plugins: testPlugins }).then(
      () => undefined,
      (e: unknown) => e as TendError,
    );
    expect(error?.code).toBe('TEND_CONFIG_INVALID');
    expect(error?.toString()).toMatch(/^tend\.yml:5:18: .*"9lives"/);
  });

  it('rejects a namespace that is not a DNS label', async () => {
    const project = await load(shop);
    const error = errorOf(() =>
      selectEnvironment(project, { vars: {}, local: { username: 'John.Doe', env: {} } }),
    );
    expect(error.code).toBe('TEND_CONFIG_INVALID');
    expect(error.toString()).toBe(
      'tend.yml:6:5: namespace "shop-John.Doe" of environment dev (from "${project.name}-${local.username}") is ' +
        'not a valid Kubernetes namespace name; expected lower-case letters, digits and "-", starting and ending ' +
        'with a letter or digit, at most 63 characters',
    );
    const long = errorOf(() =>
      selectEnvironment(project, { env: 'preview', vars: { pr: 'x'.repeat(60) }, local: alice }),
    );
    expect(long.location).toEqual({ file: 'tend.yml', line: 9, column: 23 });
    expect(long.message).toMatch(/^namespace "shop-pr-x{60}" of environment preview/);
  });

  it('does not offer environment.namespace while computing it', async () => {
    const project = await load(
      'kind: Project\nname: shop\nenvironments:\n  - name: dev\n    defaultNamespace: ${environment.namespace}\n',
    );
    const error = errorOf(() => selectEnvironment(project, { vars: {}, local: alice }));
    expect(error.toString()).toBe(
      'tend.yml:5:23: unknown key "environment.namespace"; available: environment.name',
    );
  });
});

describe('parseVarFlags', () => {
  it('parses name=value, the value may hold "="', () => {
    expect(parseVarFlags(['team=payments', 'query=a=b', 'empty='])).toEqual({
      team: 'payments',
      query: 'a=b',
      empty: '',
    });
    expect(parseVarFlags(undefined)).toEqual({});
  });

  it("accepts Garden's dotted path into a variable, with [n] for a list's item", () => {
    expect(parseVarFlags(['govee.api-key=a', 'db.password=x=y', 'hosts[1].name=b'])).toEqual({
      'govee.api-key': 'a',
      'db.password': 'x=y',
      'hosts[1].name': 'b',
    });
  });

  it.each(['team', '=x', '1x=2', 'a b=c', 'a..b=1', '.a=1', 'a.=1', 'a[x]=1', 'a[1=2', 'a.1b=2'])(
    'rejects %j',
    (flag) => {
      const error = errorOf(() => parseVarFlags([flag]));
      expect(error.code).toBe('TEND_USAGE');
      expect(error.message).toBe(
        `invalid --var "${flag}"; expected name=value, the name a variable's or a dotted path into one ` +
          '(e.g. --var team=payments, --var db.password=secret, --var hosts[0]=a)',
      );
    },
  );

  it.each([
    ['__proto__.x=1', '__proto__'],
    ['constructor.prototype.x=1', 'constructor'],
    ['a.__proto__=1', '__proto__'],
    ['__proto__=1', '__proto__'],
  ])('refuses %j, which would reach an object prototype', (flag, key) => {
    const error = errorOf(() => parseVarFlags([flag]));
    expect(error.code).toBe('TEND_USAGE');
    expect(error.message).toBe(
      `invalid --var "${flag}"; "${key}" cannot name a variable or a key in one (it names an object's prototype)`,
    );
    expect(({} as Record<string, unknown>).x).toBeUndefined();
  });

  it('says a flag with a control character with it escaped', () => {
    expect(errorOf(() => parseVarFlags(['a\u0001=1'])).message).toContain('invalid --var "a\\u0001=1"');
  });
});

describe('a dotted --var', () => {
  const nested = yaml`
    kind: Project
    name: shop
    variables:
      db: { user: admin, port: 5432, tls: false }
      hosts: [a, b, c]
    environments:
      - name: dev
  `;

  it("sets the key inside the variable and keeps the mapping's other keys, typed as the key it overrides", async () => {
    const project = await load(nested);
    const selected = selectEnvironment(project, {
      vars: { 'db.password': 'secret', 'db.port': '6000', 'db.tls': 'true', 'hosts[1]': 'x' },
      local: alice,
    });
    expect(selected.variables.db).toEqual({ user: 'admin', port: 6000, tls: true, password: 'secret' });
    expect(selected.variables.hosts).toEqual(['a', 'x', 'c']);
    const context = createTemplateContext(project, selected, alice);
    expect(resolveTemplates('${var.db.user}:${var.db.password}@${var.db.port}', context, () => at)).toBe(
      'admin:secret@6000',
    );
  });

  it('creates the mappings on the way when the variable is not declared', async () => {
    const project = await load(nested);
    const selected = selectEnvironment(project, { vars: { 'govee.api-key': 'k' }, local: alice });
    expect(selected.variables.govee).toEqual({ 'api-key': 'k' });
  });

  it('is what the hint for a missing key inside a variable says to pass', async () => {
    const project = await load(nested);
    const context = createTemplateContext(
      project,
      selectEnvironment(project, { vars: {}, local: alice }),
      alice,
    );
    const error = errorOf(() => resolveTemplates('${var.db.password}', context, () => at));
    expect(error.message).toBe(
      'unknown key "var.db.password"; available: var.db.user, var.db.port, var.db.tls; ' +
        'set it with --var db.password=<value>',
    );
  });
});

describe('resolveProviderConfig', () => {
  it("checks an entry limited to some environments only where it is used (placeholders in another environment's entry)", async () => {
    const project = await load(yaml`
      kind: Project
      name: shop
      environments:
        - name: dev
        - name: remote
      providers:
        - name: local
        - name: cluster
          environments: [remote]
          context: "<add your values>"
          replicas: "<add your values>"
    `);
    expect(providersOf(project, 'dev').map((p) => p.name)).toEqual(['local']);
    const error = errorOf(() => providersOf(project, 'remote'));
    expect(error.code).toBe('TEND_CONFIG_INVALID');
    expect(error.toString()).toContain('tend.yml:11:');
    expect(error.toString()).toContain('providers[1].replicas');
  });

  it('templates a provider entry for the environment', async () => {
    const project = await load(shop);
    const environment = selectEnvironment(project, { env: 'preview', vars: { pr: '7' }, local: alice });
    const ctx = createTemplateContext(project, environment, alice);
    const cluster = project.providers[1]!;
    expect(providersOf(project, 'preview')).toEqual(project.providers);
    expect(providersOf(project, 'dev')).toEqual([project.providers[0]]);
    expect(resolveProviderConfig(cluster, ctx)).toEqual({
      context: 'kind-dev',
      namespace: 'shop-pr-7',
      replicas: 2,
    });
    expect(cluster.config).toEqual({
      context: '${local.env.CLUSTER}',
      namespace: '${environment.namespace}',
      replicas: '${var.replicas}',
    });
    const error = errorOf(() =>
      resolveProviderConfig(cluster, { ...ctx, local: { username: 'alice', env: {} } }),
    );
    expect(error.toString()).toBe(
      'tend.yml:16:14: environment variable "CLUSTER" is not set (used as "local.env.CLUSTER")',
    );
  });

  it('resolves pullRequest.number from --var; empty is no pull request; anything else is exit 2 at its position', async () => {
    const project = await load(yaml`
      kind: Project
      name: shop
      environments:
        - name: dev
        - name: pr
          defaultNamespace: shop-pr\${var.pr}
          variables: { pr: '' }
          pullRequest:
            repository: acme/shop
            number: \${var.pr}
    `);
    expect(selectEnvironment(project, { env: 'pr', vars: { pr: '42' }, local: alice }).pullRequest).toEqual({
      repository: 'acme/shop',
      number: 42,
    });
    expect(selectEnvironment(project, { env: 'pr', vars: {}, local: alice }).pullRequest).toBeUndefined();
    expect(
      selectEnvironment(project, { env: 'dev', vars: { pr: '42' }, local: alice }).pullRequest,
    ).toBeUndefined();
    const error = errorOf(() => selectEnvironment(project, { env: 'pr', vars: { pr: 'abc' }, local: alice }));
    expect(error.code).toBe('TEND_CONFIG_INVALID');
    expect(error.exitCode).toBe(2);
    expect(error.location).toMatchObject({ file: 'tend.yml', line: 10 });
    expect(error.message).toMatch(
      /pullRequest.number of environment pr is "abc"; expected a pull request number/,
    );
  });
});
