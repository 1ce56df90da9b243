import { afterAll, describe, expect, it } from 'vitest';
import type { TendError } from '../../src/errors.js';
import { actionVariablesOf, enabledActions, selectActionCopies } from '../../src/config/action-variables.js';
import { createTemplateContext, resolveActionSpec, selectEnvironment } from '../../src/config/environment.js';
import { configure, loadProjectConfig } from '../../src/config/pipeline.js';
import { actionOutputsContext, resolveTemplates } from '../../src/config/template.js';
import { testPlugins } from './fixtures/plugins.js';
import { removeProjects, writeProject, yaml } from './fixtures/project.js';

afterAll(removeProjects);

const alice = { username: 'alice', env: { CI: 'true' } };

const project = yaml`
  kind: Project
  name: shop
  defaultEnvironment: dev
  variables:
    level: project
    env: { A: project, B: project }
    list: [p1, p2, p3]
  environments:
    - name: dev
      variables: { level: environment, env: { B: environment } }
    - name: prod
  providers:
    - name: local
`;

async function open(files: Record<string, string>, vars: Record<string, string> = {}, env?: string) {
  const root = await writeProject({ 'tend.yml': project, ...files });
  const loaded = await loadProjectConfig({ cwd: root, plugins: testPlugins });
  const selected = selectEnvironment(loaded.project, { env, vars, local: alice });
  const context = {
    ...createTemplateContext(loaded.project, selected, alice),
    actionVariables: actionVariablesOf(loaded.actions),
  };
  const action = (ref: string) => loaded.actions.find((a) => a.ref === ref)!;
  return { root, loaded, context, action };
}

async function loadError(files: Record<string, string>): Promise<TendError> {
  const root = await writeProject({ 'tend.yml': project, ...files });
  try {
    await loadProjectConfig({ cwd: root, plugins: testPlugins });
  } catch (error) {
    return error as TendError;
  }
  throw new Error('expected the load to fail');
}

function thrown(run: () => unknown): TendError {
  try {
    run();
  } catch (error) {
    return error as TendError;
  }
  throw new Error('expected an error');
}

const api = (body: string) => ({ 'api.tend.yml': body });

describe('action variables', () => {
  it('layers project < environment < action variables < action varfiles < --var, mappings merged', async () => {
    const { context, action } = await open(
      {
        ...api(yaml`
        kind: Deploy
        name: api
        type: cmd
        variables:
          level: action
          env: { C: action }
          list: [a1]
          fromFile: variables
        varfiles: [api.vars.yml]
        spec:
          command: ['\${var.level}', '\${var.fromFile}', '\${var.list[0]}', '\${var.list[2]}', '\${var.cli}']
          env: \${var.env}
      `),
        'api.vars.yml': 'fromFile: varfile\nenv: { D: varfile }\ncli: from-varfile\n',
      },
      { cli: 'from-cli' },
    );
    expect(resolveActionSpec(action('deploy.api'), context)).toEqual({
      command: ['action', 'varfile', 'a1', 'p3', 'from-cli'],
      env: { A: 'project', B: 'environment', C: 'action', D: 'varfile' },
    });
  });

  it('resolves ${…} inside variables lazily, keeping the type of a whole-value template', async () => {
    const { context, action } = await open(
      api(yaml`
        kind: Deploy
        name: api
        type: cmd
        variables:
          port: \${var.base + 1}
          base: 8079
          name: api-\${environment.name}-\${this.name}
          ports: \${[var.port, var.base]}
        spec:
          command: ['\${var.name}', '\${var.ports[1]}']
          port: \${var.port}
      `),
    );
    expect(resolveActionSpec(action('deploy.api'), context)).toEqual({
      command: ['api-dev-api', 8079],
      port: 8080,
    });
  });

  it('a cycle is an error naming the chain, at the file:line of the value that reads it', async () => {
    const { context, action } = await open(
      api(yaml`
        kind: Deploy
        name: api
        type: cmd
        variables:
          a: \${var.b}
          b: x-\${var.c}
          c: \${var.a}
        spec:
          command: ['\${var.a}']
      `),
    );
    const error = thrown(() => resolveActionSpec(action('deploy.api'), context));
    expect(error.code).toBe('TEND_TEMPLATE');
    expect(error.message).toContain(
      'variables refer to each other in a cycle: var.a → var.b → var.c → var.a',
    );
    expect(`${error.location?.file}:${error.location?.line}`).toBe('api.tend.yml:9');
  });

  it('variables 2,000 levels deep are a clear error, not a stack overflow', async () => {
    const lines = Array.from({ length: 2_000 }, (_, i) => `  v${i}: \${var.v${i + 1}}`);
    const { context, action } = await open(
      api(
        [
          'kind: Deploy',
          'name: api',
          'type: cmd',
          'variables:',
          ...lines,
          '  v2000: end',
          'spec:',
          "  command: ['${var.v0}']",
        ].join('\n'),
      ),
    );
    const error = thrown(() => resolveActionSpec(action('deploy.api'), context));
    expect(error.code).toBe('TEND_TEMPLATE');
    expect(error.message).toMatch(
      /variables refer to variables more than 200 levels deep \(var\.v0 → … → var\.v200\)/,
    );
    expect(error.location?.file).toBe('api.tend.yml');
  }, 60_000);

  it('a huge variable resolves (a list of 100,000 items)', async () => {
    const items = Array.from({ length: 100_000 }, (_, i) => `item-${i}`);
    const { context, action } = await open({
      ...api(yaml`
        kind: Deploy
        name: api
        type: cmd
        varfiles: [big.json]
        spec:
          command: ['\${var.big[99999]}', '\${join(var.big, ",") == join(var.big, ",") ? "same" : "not"}']
      `),
      'big.json': JSON.stringify({ big: items }),
    });
    expect(resolveActionSpec(action('deploy.api'), context)).toEqual({ command: ['item-99999', 'same'] });
  });

  it('an unknown variable names the action variables too, at file:line', async () => {
    const { context, action } = await open(
      api(yaml`
        kind: Deploy
        name: api
        type: cmd
        variables: { ingressPath: /api }
        spec:
          command: ['\${var.ingresPath}']
      `),
    );
    const error = thrown(() => resolveActionSpec(action('deploy.api'), context));
    expect(error.message).toContain('unknown variable "var.ingresPath"; did you mean "var.ingressPath"?');
    expect(`${error.location?.file}:${error.location?.line}`).toBe('api.tend.yml:6');
  });

  it('a missing action varfile is an error at its line; optional ones are skipped', async () => {
    const error = await loadError(
      api(yaml`
        kind: Deploy
        name: api
        type: cmd
        varfiles: [{ path: maybe.yml, optional: true }, missing.yml]
        spec: { command: [x] }
      `),
    );
    expect(error.message).toBe('varfile missing.yml does not exist (missing.yml in the project)');
    expect(`${error.location?.file}:${error.location?.line}`).toBe('api.tend.yml:4');
  });

  it('a varfile path with ${…} is resolved in the chosen environment and read above the action’s variables, in order; a missing one is an error at its line', async () => {
    const root = await writeProject({
      'tend.yml': project,
      ...api(yaml`
        kind: Deploy
        name: api
        type: cmd
        variables: { who: variables, region: variables }
        varfiles:
          - base.yml
          - secrets.\${environment.name}.yml
          - { path: "secrets.\${environment.name}.private.yml", optional: true }
        spec: { command: [x] }
      `),
      'base.yml': 'who: base\nregion: base\n',
      'secrets.dev.yml': 'who: dev\n',
      'secrets.dev.private.yml': 'region: private\n',
    });
    const variablesIn = async (env: string) => {
      const configuration = await configure({
        cwd: root,
        plugins: testPlugins,
        env,
        secrets: async () => undefined,
      });
      return { layers: configuration.actions[0]!.variableLayers };
    };
    expect((await variablesIn('dev')).layers).toEqual([
      { who: 'variables', region: 'variables' },
      { who: 'base', region: 'base' },
      { who: 'dev' },
      { region: 'private' },
    ]);
    const error = await variablesIn('prod').then(
      () => undefined,
      (e: unknown) => e as TendError,
    );
    expect(error?.code).toBe('TEND_CONFIG_NOT_FOUND');
    expect(error?.message).toBe('varfile secrets.prod.yml does not exist (secrets.prod.yml in the project)');
    expect(`${error?.location?.file}:${error?.location?.line}`).toBe('api.tend.yml:7');
  });

  it.each([
    ['a NUL', '"a\\u0000b"', '"x${var.odd}.yml" resolves to "xa\\u0000b.yml"'],
    ['a mapping', '{ a: 1 }', '"x${var.odd}.yml" resolves to "x[object Object].yml"'],
    ['a whole-value mapping', '{ a: 1 }', '"${var.odd}" resolves to {"a":1}'],
  ])('a varfile path that resolves to %s is an error at its line, not a crash', async (_what, odd, said) => {
    const wholeValue = said.startsWith('"${');
    const root = await writeProject({
      'tend.yml': project.replace('level: project', `level: project\n  odd: ${odd}`),
      ...api(yaml`
        kind: Deploy
        name: api
        type: cmd
        varfiles: ["${wholeValue ? '${var.odd}' : 'x${var.odd}.yml'}"]
        spec: { command: [x] }
      `),
    });
    const error = await configure({ cwd: root, plugins: testPlugins, secrets: async () => undefined }).then(
      () => undefined,
      (e: unknown) => e as TendError,
    );
    expect(`${error?.location?.file}:${error?.location?.line}`).toBe('api.tend.yml:4');
    if (said.includes('object Object')) expect(error?.code).toBe('TEND_CONFIG_NOT_FOUND');
    else expect(error?.message).toBe(`varfile path ${said}; expected a file name`);
  });

  it.each([
    ['a NUL', '"a\\u0000b"', 'source "${var.odd}" resolves to "a\\u0000b"; expected a directory'],
    ['a mapping', '{ a: 1 }', 'source "${var.odd}" resolves to {"a":1}; expected a directory'],
    [
      'a lone surrogate',
      '"\\ud800"',
      'source directory "\ud800" does not exist (resolved to \ud800 in the project) (from "${var.odd}")',
    ],
    ['a path outside', '"../.."', 'source "../.." is outside the project root (from "${var.odd}")'],
  ])('a source: that resolves to %s is an error at its line, not a crash', async (_what, odd, said) => {
    const root = await writeProject({
      'tend.yml': project.replace('level: project', `level: project\n  odd: ${odd}`),
      ...api(yaml`
        kind: Deploy
        name: api
        type: cmd
        source: "\${var.odd}"
        spec: { command: [x] }
      `),
    });
    const error = await configure({ cwd: root, plugins: testPlugins, secrets: async () => undefined }).then(
      () => undefined,
      (e: unknown) => e as TendError,
    );
    expect(error?.message).toBe(said);
    expect(`${error?.code} ${error?.location?.file}:${error?.location?.line}`).toBe(
      'TEND_CONFIG_INVALID api.tend.yml:4',
    );
  });

  it('a varfile path with a malformed ${…} is an error at its line when the project loads', async () => {
    const error = await loadError(
      api(yaml`
        kind: Deploy
        name: api
        type: cmd
        varfiles: [ok.yml, "secrets.\${environment.name.yml"]
        spec: { command: [x] }
      `),
    );
    expect(error.code).toBe('TEND_TEMPLATE');
    expect(`${error.location?.file}:${error.location?.line}`).toBe('api.tend.yml:4');
  });

  it('actions.<kind>.<name>.var reads another action’s variables as it sees them; .version a dependency’s', async () => {
    const { context, action } = await open({
      ...api(yaml`
        kind: Deploy
        name: api
        type: cmd
        variables:
          env: { PORT: '8080', WHO: "\${this.name}" }
        spec: { command: [x] }
      `),
      'base.tend.yml': yaml`
        kind: Build
        name: base
        type: cmd
        spec: { command: [x] }
      `,
      'web.tend.yml': yaml`
        kind: Test
        name: web
        type: cmd
        spec:
          command: ['\${actions.build.base.version}']
          env: \${actions.deploy.api.var.env}
      `,
    });
    const web = action('test.web');
    expect(resolveActionSpec(web, context, { keepActionOutputs: true })).toEqual({
      command: ['${actions.build.base.version}'],
      env: { A: 'project', B: 'environment', PORT: '8080', WHO: 'api' },
    });
    const ran = { ...context, actions: actionOutputsContext({}, { 'build.base': 'v-1234' }) };
    expect(resolveActionSpec(web, ran)).toEqual({
      command: ['v-1234'],
      env: { A: 'project', B: 'environment', PORT: '8080', WHO: 'api' },
    });
    const unknown = thrown(() =>
      resolveTemplates('${actions.deploy.nope.var.env}', context, () => web.location),
    );
    expect(unknown.message).toBe('no action deploy.nope for "actions.deploy.nope.var.env"');
  });
});

describe('disabled and environments', () => {
  const files = {
    'b.tend.yml': yaml`
      kind: Build
      name: base
      type: cmd
      disabled: \${environment.name == "dev"}
      spec: { command: [x] }
    `,
    'd.tend.yml': yaml`
      kind: Deploy
      name: db
      type: cmd
      disabled: \${environment.name == "dev"}
      spec: { command: [x] }
    `,
    'a.tend.yml': yaml`
      kind: Deploy
      name: api
      type: cmd
      dependencies: [build.base, deploy.db]
      spec: { command: [x] }
    `,
    't.tend.yml': yaml`
      kind: Test
      name: e2e
      type: cmd
      environments: [prod]
      spec: { command: [x] }
    `,
  };

  it('leaves out what is disabled in the environment, keeps a disabled Build an enabled action needs', async () => {
    const dev = await open(files);
    const { enabled, disabled } = enabledActions(dev.loaded.actions, dev.context);
    expect(enabled.map((a) => `${a.ref}: ${a.dependencies.join(' ')}`).sort()).toEqual([
      'build.base: ',
      'deploy.api: build.base',
    ]);
    expect(disabled.map((a) => a.ref).sort()).toEqual(['deploy.db', 'test.e2e']);
    const prod = await open(files, {}, 'prod');
    expect(
      enabledActions(prod.loaded.actions, prod.context)
        .enabled.map((a) => a.ref)
        .sort(),
    ).toEqual(['build.base', 'deploy.api', 'deploy.db', 'test.e2e']);
  });

  it('keeps a forced disabled Run with the disabled Build it needs; it stays disabled to its dependants', async () => {
    const dev = await open({
      ...files,
      'r.tend.yml': yaml`
        kind: Run
        name: seed
        type: cmd
        disabled: true
        dependencies: [build.tools, deploy.db]
        spec: { command: [x] }
        ---
        kind: Build
        name: tools
        type: cmd
        disabled: true
        spec: { command: [x] }
        ---
        kind: Run
        name: after
        type: cmd
        dependencies: [run.seed]
        spec: { command: [x] }
      `,
    });
    const { enabled, disabled } = enabledActions(dev.loaded.actions, dev.context, new Set(['run.seed']));
    expect(enabled.map((a) => `${a.ref}: ${a.dependencies.join(' ')}`).sort()).toEqual([
      'build.base: ',
      'build.tools: ',
      'deploy.api: build.base',
      'run.after: ',
      'run.seed: build.tools',
    ]);
    expect(disabled.map((a) => a.ref).sort()).toEqual(['deploy.db', 'test.e2e']);
  });

  it('disabled that is not true or false once resolved is an error at its line', async () => {
    const { loaded, context } = await open({
      'd.tend.yml': yaml`
        kind: Deploy
        name: db
        type: cmd
        disabled: \${environment.name}
        spec: { command: [x] }
      `,
    });
    const error = thrown(() => enabledActions(loaded.actions, context));
    expect(error.message).toBe('disabled of deploy.db is "dev" once resolved; expected true or false');
    expect(`${error.location?.file}:${error.location?.line}`).toBe('d.tend.yml:4');
  });

  it('an unknown environment in environments: is an error', async () => {
    const error = await loadError({
      't.tend.yml': yaml`
        kind: Test
        name: e2e
        type: cmd
        environments: [staging]
        spec: { command: [x] }
      `,
    });
    expect(error.message).toBe(
      'unknown environment "staging" in environments of test.e2e; expected one of: dev, prod',
    );
    expect(`${error.location?.file}:${error.location?.line}`).toBe('t.tend.yml:4');
  });
});

describe('one action name per environment', () => {
  const copy = (environments: string, command: string) => yaml`
    kind: Deploy
    name: certs
    type: cmd
    environments: ${environments}
    spec: { command: [${command}] }
  `;

  it('takes copies limited to environments that do not overlap, and uses the one of the environment', async () => {
    const dev = await open({
      'a.tend.yml': copy('[dev]', 'dev-certs'),
      'b.tend.yml': copy('[prod]', 'prod-certs'),
    });
    const contextOf = (env: string) =>
      createTemplateContext(
        dev.loaded.project,
        selectEnvironment(dev.loaded.project, { env, vars: {}, local: alice }),
        alice,
      );
    const chosen = (env: string) => {
      const copies = selectActionCopies(dev.loaded.actions, contextOf(env));
      expect(copies.filter((a) => a.ref === 'deploy.certs')).toHaveLength(1);
      return copies.find((a) => a.ref === 'deploy.certs')!.spec;
    };
    expect(chosen('dev')).toEqual({ command: ['dev-certs'] });
    expect(chosen('prod')).toEqual({ command: ['prod-certs'] });
    const { enabled } = enabledActions(selectActionCopies(dev.loaded.actions, dev.context), dev.context);
    expect(enabled.map((a) => a.file)).toEqual(['a.tend.yml']);
  });

  it.each([
    ['environments that overlap', '[dev, prod]', '[prod]'],
    ['a copy for every environment', '[dev]', '[dev, prod]'],
  ])('refuses copies with %s', async (_, first, second) => {
    const error = await loadError({ 'a.tend.yml': copy(first, 'a'), 'b.tend.yml': copy(second, 'b') });
    expect(error.message).toMatch(/^duplicate action deploy\.certs; first defined at a\.tend\.yml:2:/);
  });

  it('refuses a copy without environments beside one with them', async () => {
    const error = await loadError({
      'a.tend.yml': copy('[dev]', 'a'),
      'b.tend.yml': yaml`
        kind: Deploy
        name: certs
        type: cmd
        spec: { command: [b] }
      `,
    });
    expect(error.message).toMatch(/^duplicate action deploy\.certs/);
  });
});

describe('one action name, one copy disabled (Garden keeps the enabled copy)', () => {
  const copy = (disabled: string, command: string) => yaml`
    kind: Deploy
    name: certs
    type: cmd
    disabled: ${disabled}
    spec: { command: [${command}] }
  `;
  const configured = (root: string, env: string) =>
    configure({ cwd: root, plugins: testPlugins, env, secrets: async () => undefined });

  it('uses the copy its templated disabled: leaves on in each environment', async () => {
    const root = await writeProject({
      'tend.yml': project,
      'a.tend.yml': copy('"${environment.name != \'dev\'}"', 'dev-certs'),
      'b.tend.yml': copy('"${environment.name != \'prod\'}"', 'prod-certs'),
    });
    for (const env of ['dev', 'prod']) {
      const { actions } = await configured(root, env);
      expect(actions.filter((a) => a.ref === 'deploy.certs').map((a) => a.spec)).toEqual([
        { command: [`${env}-certs`] },
      ]);
    }
  });

  it('uses the enabled copy beside one disabled: true, whichever comes first', async () => {
    const root = await writeProject({
      'tend.yml': project,
      'a.tend.yml': copy('true', 'off'),
      'b.tend.yml': copy('false', 'on'),
    });
    const { actions, disabled } = await configured(root, 'dev');
    expect(actions.filter((a) => a.ref === 'deploy.certs').map((a) => a.spec)).toEqual([{ command: ['on'] }]);
    expect(disabled.map((a) => a.ref)).toEqual([]);
  });

  it('refuses two copies enabled in the environment, at the second', async () => {
    const root = await writeProject({
      'tend.yml': project,
      'a.tend.yml': copy('"${environment.name == \'prod\'}"', 'a'),
      'b.tend.yml': copy('false', 'b'),
    });
    expect((await configured(root, 'prod')).actions.map((a) => a.spec)).toEqual([{ command: ['b'] }]);
    const error = await configured(root, 'dev').then(
      () => undefined,
      (e: unknown) => e as TendError,
    );
    expect(error?.code).toBe('TEND_CONFIG_DUPLICATE_ACTION');
    expect(error?.message).toBe(
      'duplicate action deploy.certs: both copies are enabled in environment dev; first defined at a.tend.yml:2:7',
    );
    expect(`${error?.location?.file}:${error?.location?.line}`).toBe('b.tend.yml:2');
  });
});

describe('a templated defaultEnvironment', () => {
  it('is chosen with local.* as Garden does', async () => {
    const root = await writeProject({
      'tend.yml': yaml`
        kind: Project
        name: shop
        defaultEnvironment: "\${local.env.CI ? 'ci' : 'dev'}"
        environments: [{ name: dev }, { name: ci }]
        providers: [{ name: local }]
      `,
    });
    const loaded = await loadProjectConfig({ cwd: root, plugins: testPlugins });
    expect(selectEnvironment(loaded.project, { vars: {}, local: alice }).name).toBe('ci');
    expect(selectEnvironment(loaded.project, { vars: {}, local: { username: 'bob', env: {} } }).name).toBe(
      'dev',
    );
  });
});
