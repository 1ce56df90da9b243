/**
 * Third-party plugins named by `providers[].plugin` (src/config/plugin-modules.ts,
 * src/plugin/load.ts): a path from the project root or a package from its node_modules, loaded
 * as an ES module and checked like the built-ins; every failure is a configuration error at the
 * `plugin:` value's file:line:column.
 */
import { mkdirSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadProjectConfig } from '../../src/config/pipeline.js';
import { TendError } from '../../src/errors.js';
import { builtinPlugins } from '../../src/plugins/builtin.js';
import { makeProject, removeProjects, repoRoot } from '../helpers/project.js';

afterAll(() => removeProjects());

const plugin = (name: string, extra = '') => `import { Type } from 'typebox';
const noop = async () => ({ state: 'ready' });
export default {
  name: '${name}',
  description: 'test plugin',
  configSchema: Type.Object({ greeting: Type.Optional(Type.String()) }, { additionalProperties: false }),
  emits: ['log'],
  provider: {
    init: async () => ({}),
    getEnvironmentStatus: async () => ({ ready: true }),
    prepareEnvironment: async () => ({ ready: true }),
    cleanupEnvironment: async () => ({ deleted: false, message: '' }),
  },
  actionTypes: [{ name: '${name}-job', description: 'x', kinds: { Run: {
    specSchema: Type.Object({ text: Type.String() }),
    handlers: { getResult: noop, run: noop },
  } } }],
  ${extra}
};
`;

const projectWith = (entry: string) => `kind: Project
name: p
environments: [{ name: dev }]
providers:
  - name: hello
    plugin: ${entry}
`;

/** A project whose node_modules has TypeBox (as a plugin's dependency would be installed) and the given packages. */
function project(files: Record<string, string>): string {
  const root = makeProject({ 'package.json': '{ "type": "module" }', ...files });
  mkdirSync(path.join(root, 'node_modules'), { recursive: true });
  symlinkSync(path.join(repoRoot, 'node_modules', 'typebox'), path.join(root, 'node_modules', 'typebox'));
  return root;
}

async function loadError(root: string): Promise<TendError> {
  const thrown = await loadProjectConfig({ cwd: root, plugins: builtinPlugins() }).catch((e: unknown) => e);
  expect(thrown).toBeInstanceOf(TendError);
  return thrown as TendError;
}

describe('providers[].plugin', () => {
  it('loads a module by a path from the project root; its schemas check the configuration', async () => {
    const root = project({
      'tend.yml':
        projectWith('./plugins/hello.js') +
        '    greeting: hi\n---\nkind: Run\ntype: hello-job\nname: say\nspec: { text: hi }\n',
      'plugins/hello.js': plugin('hello'),
    });
    const {
      project: loaded,
      actions,
      plugins,
    } = await loadProjectConfig({ cwd: root, plugins: builtinPlugins() });
    expect(plugins.map((p) => p.name)).toEqual(['exec', 'kubernetes', 'hello']);
    expect(loaded.providers[0]).toMatchObject({ name: 'hello', config: { greeting: 'hi' } });
    expect(actions.map((a) => `${a.kind}.${a.type}`)).toEqual(['Run.hello-job']);

    const bad = project({
      'tend.yml': projectWith('./plugins/hello.js') + '    greeting: 3\n',
      'plugins/hello.js': plugin('hello'),
    });
    expect((await loadError(bad)).toString()).toMatch(
      /^tend\.yml:7:15: invalid value for providers\[0\]\.greeting/,
    );
  });

  it('loads a package from the project root by its exports (import condition)', async () => {
    const root = project({
      'tend.yml': projectWith('tend-plugin-hello'),
      'node_modules/tend-plugin-hello/package.json': JSON.stringify({
        name: 'tend-plugin-hello',
        type: 'module',
        exports: { '.': { require: './cjs.cjs', import: './lib/index.js' } },
      }),
      'node_modules/tend-plugin-hello/lib/index.js': plugin('hello').replace(
        'export default',
        'export const plugin =',
      ),
    });
    const { plugins } = await loadProjectConfig({ cwd: root, plugins: builtinPlugins() });
    expect(plugins.at(-1)!.name).toBe('hello');
  });

  it.each([
    {
      name: 'a missing file',
      entry: './nope.js',
      files: {},
      code: 'TEND_PLUGIN_NOT_FOUND',
      message:
        /^tend\.yml:6:13: plugin module "\.\/nope\.js" not found: no file .*nope\.js \(paths are relative to the project root\)$/,
    },
    {
      name: 'a package that is not installed',
      entry: 'tend-plugin-nope',
      files: {},
      code: 'TEND_PLUGIN_NOT_FOUND',
      message:
        /^tend\.yml:6:13: plugin module "tend-plugin-nope" not found: package "tend-plugin-nope" is not installed/,
    },
    {
      name: 'a module with no plugin export',
      entry: './hello.js',
      files: { 'hello.js': 'export const something = 1;\n' },
      code: 'TEND_PLUGIN_INVALID',
      message:
        /^tend\.yml:6:13: plugin module "\.\/hello\.js" \(.*\) has no plugin: expected a PluginDefinition as its default export or as its "plugin" export; it exports something$/,
    },
    {
      name: 'a module that throws when imported',
      entry: './hello.js',
      files: { 'hello.js': "throw new Error('boom');\n" },
      code: 'TEND_PLUGIN_INVALID',
      message: /^tend\.yml:6:13: plugin module "\.\/hello\.js" \(.*\) failed to load: boom$/,
    },
    {
      name: 'a plugin missing a provider handler',
      entry: './hello.js',
      files: { 'hello.js': plugin('hello').replace('init: async () => ({}),', '') },
      code: 'TEND_PLUGIN_INVALID',
      message:
        /^tend\.yml:6:13: plugin module "\.\/hello\.js": plugin "hello": provider handler "init" is missing$/,
    },
    {
      name: 'a plugin declaring an unknown event type',
      entry: './hello.js',
      files: { 'hello.js': plugin('hello').replace("emits: ['log']", "emits: ['log', 'nope']") },
      code: 'TEND_PLUGIN_INVALID',
      message: /plugin "hello": declares unknown event type "nope"$/,
    },
    {
      name: 'a handler that is not a function',
      entry: './hello.js',
      files: { 'hello.js': plugin('hello').replace('run: noop', 'run: 1') },
      code: 'TEND_PLUGIN_INVALID',
      message: /plugin "hello": Run handler "run" of action type "hello-job" is not a function$/,
    },
    {
      name: 'a plugin named like a built-in',
      entry: './hello.js',
      files: { 'hello.js': plugin('exec').replace("'exec-job'", "'other'") },
      code: 'TEND_PLUGIN_INVALID',
      message: /plugin "exec": registered twice$/,
    },
    {
      name: 'a plugin whose name is not the entry name',
      entry: './hello.js',
      files: { 'hello.js': plugin('greeter') },
      code: 'TEND_PLUGIN_INVALID',
      message:
        /^tend\.yml:6:13: plugin module "\.\/hello\.js" is the plugin "greeter", but this provider entry is named "hello"; set name: greeter$/,
    },
  ])('$name is a configuration error at the plugin: value', async ({ entry, files, code, message }) => {
    const error = await loadError(
      project({ 'tend.yml': projectWith(entry), ...(files as Record<string, string>) }),
    );
    expect(error.code).toBe(code);
    expect(error.exitCode).toBe(2);
    expect(error.location).toEqual({ file: 'tend.yml', line: 6, column: 13 });
    expect(error.toString()).toMatch(message);
  });
});
