/**
 * A plugin's `checkEnvironment`: what its provider's `init` would refuse for the environment makes
 * `tend validate` fail (exit 2), located in the provider's entry or at the environment's
 * namespace; it is given the entry's configuration, resolved, and the environment. A check that
 * throws or answers with what is not a list of problems is left to `init`: a plugin cannot crash
 * validate through it, and one bad item does not hide the others.
 */
import { Type } from 'typebox';
import { afterEach, describe, expect, it } from 'vitest';
import { validateCommand } from '../../src/commands/validate.js';
import { TendError } from '../../src/errors.js';
import type { CheckEnvironmentParams, PluginDefinition } from '../../src/plugin/types.js';
import { builtinPlugins } from '../../src/plugins/builtin.js';
import { createNoopPlugin } from '../fixtures/noop-plugin.js';
import { makeProject, removeProjects } from '../helpers/project.js';

afterEach(removeProjects);

const withCheck = (check: (params: CheckEnvironmentParams) => Promise<unknown>): PluginDefinition => ({
  ...createNoopPlugin().plugin,
  configSchema: Type.Object({ zone: Type.String() }, { additionalProperties: false }),
  checkEnvironment: check as never,
});

const files = {
  'tend.yml': `kind: Project
name: checks
defaultEnvironment: dev
variables: { zone: north }
environments:
  - name: dev
    defaultNamespace: checks-dev
providers:
  - name: noop
    zone: \${var.zone}
`,
  'app.tend.yml': 'kind: Build\ntype: noop\nname: app\nspec:\n  value: 1\n',
};

/** `tend validate` with the plugin: its error's lines (file:line:column message), or [] when it passes. */
async function problems(plugin: PluginDefinition): Promise<string[]> {
  const root = makeProject(files);
  try {
    expect((await validateCommand({ root, var: [] }, [...builtinPlugins(), plugin])).exitCode).toBe(0);
    return [];
  } catch (error) {
    expect(error).toBeInstanceOf(TendError);
    const { code, detail } = error as TendError;
    expect(code).toBe('TEND_CONFIG_INVALID');
    const errors = (
      detail as { errors: { message: string; location: { file: string; line: number; column: number } }[] }
    ).errors;
    return errors.map((e) => `${e.location.file}:${e.location.line}:${e.location.column} ${e.message}`);
  }
}

describe('checkEnvironment', () => {
  it("fails validate where it says: in the provider's entry, else at the environment's namespace; given the entry's configuration and the environment", async () => {
    const seen: CheckEnvironmentParams[] = [];
    const plugin = withCheck(async (params) => {
      seen.push(params);
      return [{ message: 'in the entry', configPath: ['zone'] }, { message: 'at the namespace' }];
    });
    expect(await problems(plugin)).toEqual([
      'tend.yml:7:23 provider noop: at the namespace',
      'tend.yml:10:11 provider noop: in the entry',
    ]);
    expect(seen).toEqual([
      { providerConfig: { zone: 'north' }, environment: { name: 'dev', namespace: 'checks-dev' } },
    ]);
  });

  it.each<[string, () => Promise<unknown>, string[]]>([
    ['throws', async () => Promise.reject(new Error('boom')), []],
    ['returns what is not a list', async () => ({ message: 'x' }), []],
    ['returns an empty list', async () => [], []],
    [
      'returns items that are not problems beside one that is',
      async () => [
        { configPath: ['zone'] },
        null,
        'text',
        { message: '' },
        { message: 'x', configPath: [Infinity] },
        { message: 'x'.repeat(5000) },
        { message: 'kept' },
      ],
      ['tend.yml:7:23 provider noop: kept'],
    ],
  ])('that %s is left to init: validate fails on its problems alone', async (_what, check, expected) => {
    expect(await problems(withCheck(check))).toEqual(expected);
  });

  it('a configPath past what the entry has is located at the nearest key it has; an empty one at the entry', async () => {
    const plugin = withCheck(async () => [
      { message: 'nearest', configPath: ['zone', 'deeper', 7] },
      { message: 'entry', configPath: [] },
    ]);
    expect(await problems(plugin)).toEqual([
      'tend.yml:9:5 provider noop: entry',
      'tend.yml:10:11 provider noop: nearest',
    ]);
  });
});
