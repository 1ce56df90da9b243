import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadProjectConfig } from '../../src/config/pipeline.js';
import { testPlugins } from './fixtures/plugins.js';
import { removeProjects, writeProject, yaml } from './fixtures/project.js';

afterAll(removeProjects);

const projectDoc = yaml`
  kind: Project
  name: shop
  defaultEnvironment: dev
  variables: { team: payments, replicas: 2, debug: false }
  environments:
    - name: dev
      defaultNamespace: shop-\${local.username}
      cleanup:
        afterInactivity: 8h
        action: pause
    - name: preview
      defaultNamespace: shop-pr-\${var.pr}
      cleanup: { afterInactivity: 2d }
  providers:
    - name: local
    - name: cluster
      environments: [dev, preview]
      context: my-cluster
      namespace: \${environment.namespace}
      buildMode: kaniko
  server: http://localhost:7420
`;

describe('loadProjectConfig', () => {
  it('loads the Project document and actions from several documents and files', async () => {
    const root = await writeProject({
      'tend.yml':
        projectDoc +
        yaml`
        ---
        kind: Run
        type: cmd
        name: seed-db
        spec: { command: [node, scripts/seed.js] }
      `,
      'api/api.tend.yml': yaml`
        kind: Build
        type: image
        name: api
        include: ["**/*"]
        exclude: ["**/*.md"]
        timeout: 5m
        spec: { dockerfile: Dockerfile, buildArgs: { NODE_ENV: production } }
        ---
        # a comment-only document is ignored
        ---
        kind: Deploy
        type: manifests
        name: api
        dependencies: [build.api]
        spec:
          files: [k8s/api.yaml]
          image: \${actions.build.api.outputs.image}
          replicas: \${var.replicas}
      `,
      'tests/integ.tend.yml': yaml`
        kind: Test
        type: cmd
        name: api-integ
        source: ../api
        dependencies: [deploy.api]
        timeout: 90
        spec: { command: [npm, run, integ] }
      `,
    });

    const { project, actions } = await loadProjectConfig({
      cwd: path.join(root, 'api'),
      plugins: testPlugins,
    });

    expect(project).toMatchObject({
      name: 'shop',
      defaultEnvironment: 'dev',
      variables: { team: 'payments', replicas: 2, debug: false },
      server: 'http://localhost:7420',
      root,
      file: 'tend.yml',
      location: { file: 'tend.yml', line: 1, column: 1 },
    });
    expect(project.environments).toEqual([
      {
        name: 'dev',
        defaultNamespace: 'shop-${local.username}',
        variables: {},
        varfiles: [],
        cleanup: { afterInactivity: '8h', action: 'pause' },
        location: { file: 'tend.yml', line: 6, column: 5 },
      },
      {
        name: 'preview',
        defaultNamespace: 'shop-pr-${var.pr}',
        variables: {},
        varfiles: [],
        cleanup: { afterInactivity: '2d', action: 'delete' },
        location: { file: 'tend.yml', line: 11, column: 5 },
      },
    ]);
    expect(
      project.providers.map(({ name, environments, config, location }) => ({
        name,
        environments,
        config,
        location,
      })),
    ).toEqual([
      {
        name: 'local',
        environments: undefined,
        config: {},
        location: { file: 'tend.yml', line: 15, column: 5 },
      },
      {
        name: 'cluster',
        environments: ['dev', 'preview'],
        config: { context: 'my-cluster', namespace: '${environment.namespace}', buildMode: 'kaniko' },
        location: { file: 'tend.yml', line: 16, column: 5 },
      },
    ]);
    expect(project.providers[1]!.locate(['namespace'])).toEqual({ file: 'tend.yml', line: 19, column: 16 });

    expect(actions.map((a) => [a.ref, a.file, a.location.line])).toEqual([
      ['run.seed-db', 'tend.yml', 23],
      ['build.api', 'api/api.tend.yml', 1],
      ['deploy.api', 'api/api.tend.yml', 11],
      ['test.api-integ', 'tests/integ.tend.yml', 1],
    ]);
    const [seed, build, deploy, test] = actions;
    expect(seed).toMatchObject({
      kind: 'Run',
      type: 'cmd',
      name: 'seed-db',
      dependencies: [],
      sourceDir: root,
    });
    expect(build).toMatchObject({
      include: ['**/*'],
      exclude: ['**/*.md'],
      timeout: 300_000,
      sourceDir: path.join(root, 'api'),
      spec: { dockerfile: 'Dockerfile', buildArgs: { NODE_ENV: 'production' } },
    });
    expect(deploy).toMatchObject({
      dependencies: ['build.api'],
      spec: {
        files: ['k8s/api.yaml'],
        image: '${actions.build.api.outputs.image}',
        replicas: '${var.replicas}',
      },
    });
    expect(deploy!.locate(['spec', 'image'])).toEqual({ file: 'api/api.tend.yml', line: 17, column: 10 });
    expect(test).toMatchObject({
      timeout: 90_000,
      sourceDir: path.join(root, 'api'),
      dependencies: ['deploy.api'],
    });
  });

  it('finds tend.yml by walking up from cwd, or at the given root', async () => {
    const root = await writeProject({
      'tend.yml': projectDoc,
      'a/b/c/deep.tend.yml': 'kind: Build\ntype: cmd\nname: deep\nspec: { command: [make] }\n',
    });
    const fromDeep = await loadProjectConfig({ cwd: path.join(root, 'a/b/c'), plugins: testPlugins });
    expect(fromDeep.project.root).toBe(root);
    expect(fromDeep.actions.map((a) => a.ref)).toEqual(['build.deep']);
    expect(fromDeep.actions[0]!.sourceDir).toBe(path.join(root, 'a/b/c'));

    const fromRoot = await loadProjectConfig({
      root: path.basename(root),
      cwd: path.dirname(root),
      plugins: testPlugins,
    });
    expect(fromRoot.project.root).toBe(root);
  });

  it('ignores .git, node_modules and .tend, and files not named *.tend.yml', async () => {
    const broken = 'kind: Build\nname: [this is not valid\n';
    const root = await writeProject({
      'tend.yml': projectDoc,
      'node_modules/pkg/x.tend.yml': broken,
      'web/node_modules/pkg/y.tend.yml': broken,
      '.git/z.tend.yml': broken,
      '.tend/envs/dev/w.tend.yml': broken,
      'web/other.yml': broken,
      'web/tend.yaml': broken,
      '.config/web.tend.yml': 'kind: Build\ntype: cmd\nname: web\nspec: { command: [make] }\n',
    });
    const { actions } = await loadProjectConfig({ cwd: root, plugins: testPlugins });
    expect(actions.map((a) => a.ref)).toEqual(['build.web']);
  });

  it('allows one name for different kinds and the same provider for separate environments', async () => {
    const root = await writeProject({
      'tend.yml': yaml`
        kind: Project
        name: shop
        environments: [{ name: dev }, { name: ci }]
        providers:
          - { name: local }
          - { name: cluster, environments: [dev], context: a }
          - { name: cluster, environments: [ci], context: b }
        ---
        kind: Build
        type: cmd
        name: api
        spec: { command: [make] }
        ---
        kind: Deploy
        type: cmd
        name: api
        dependencies: [build.api, build.api]
        spec: { command: [make, run], port: 8080, persistent: true }
      `,
    });
    const { project, actions } = await loadProjectConfig({ cwd: root, plugins: testPlugins });
    expect(project.defaultEnvironment).toBe('dev');
    expect(project.variables).toEqual({});
    expect(project.providers.map((p) => p.config)).toEqual([{}, { context: 'a' }, { context: 'b' }]);
    expect(actions.map((a) => a.ref)).toEqual(['build.api', 'deploy.api']);
    expect(actions[1]!.dependencies).toEqual(['build.api']);
  });

  it('skips spec type checks for values that are template expressions', async () => {
    const root = await writeProject({
      'tend.yml': yaml`
        kind: Project
        name: shop
        variables: { port: 8080 }
        environments: [{ name: dev }]
        providers: [{ name: local }]
        ---
        kind: Deploy
        type: cmd
        name: api
        spec:
          command: [serve]
          port: \${var.port}
      `,
    });
    const { actions } = await loadProjectConfig({ cwd: root, plugins: testPlugins });
    expect(actions[0]!.spec).toEqual({ command: ['serve'], port: '${var.port}' });
  });
});
