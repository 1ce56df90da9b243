/**
 * An action kind's `checkAction`: what it warns of becomes a `tend validate` note, located where
 * it says (inside the spec, in a file, or at the action); it is given its provider's
 * configuration and the environment; and a check that throws or returns what is not a list of
 * warnings is left to the handlers — a plugin cannot make validate fail or crash through it.
 */
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { validateCommand } from '../../src/commands/validate.js';
import type { CheckActionParams, PluginDefinition } from '../../src/plugin/types.js';
import { builtinPlugins } from '../../src/plugins/builtin.js';
import { createNoopPlugin } from '../fixtures/noop-plugin.js';
import { makeProject, removeProjects } from '../helpers/project.js';

afterEach(removeProjects);

function withCheck(check: (params: CheckActionParams) => Promise<unknown>): PluginDefinition {
  const plugin = createNoopPlugin().plugin;
  const [type] = plugin.actionTypes;
  return {
    ...plugin,
    actionTypes: [
      { ...type!, kinds: { ...type!.kinds, Build: { ...type!.kinds.Build!, checkAction: check as never } } },
    ],
  };
}

const project = (root = '') => ({
  'tend.yml': `kind: Project
name: checks
defaultEnvironment: dev
environments:
  - name: dev
    defaultNamespace: checks-dev
providers: [{ name: noop }]
`,
  'app/app.tend.yml': `kind: Build
type: noop
name: app
spec:
  value: 1
${root}`,
  'app/notes.txt': 'one\ntwo\n',
});

async function notes(plugin: PluginDefinition, files = project()) {
  const root = makeProject(files);
  const { data, exitCode } = await validateCommand({ root, var: [] }, [...builtinPlugins(), plugin]);
  expect(exitCode).toBe(0);
  return { root, notes: (data.notes ?? []).map((n) => `${n.file}:${n.line}:${n.column} ${n.message}`) };
}

describe('checkAction', () => {
  it("is a note where it says: in the spec, in a file, or at the action; given its provider's configuration and the environment", async () => {
    const seen: Omit<CheckActionParams, 'spec'>[] = [];
    const plugin = withCheck(async ({ spec: _spec, ...params }) => {
      seen.push(params);
      return [
        { message: 'in the spec', specPath: ['value'] },
        { message: 'in a file', file: path.join(params.sourceDir, 'notes.txt'), line: 2, column: 3 },
        { message: 'at the action' },
      ];
    });
    const { root, notes: found } = await notes(plugin);
    expect(found).toEqual([
      'app/app.tend.yml:5:10 build.app: in the spec',
      'app/notes.txt:2:3 build.app: in a file',
      'app/app.tend.yml:1:1 build.app: at the action',
    ]);
    expect(seen).toEqual([
      {
        sourceDir: path.join(root, 'app'),
        projectRoot: root,
        providerConfig: {},
        environment: { name: 'dev', namespace: 'checks-dev' },
      },
    ]);
  });

  it.each<[string, () => Promise<unknown>, string[]]>([
    ['throws', async () => Promise.reject(new Error('boom')), []],
    ['returns what is not a list', async () => 'nope', []],
    [
      'returns items that are not warnings beside one that is',
      async () => [{ specPath: ['value'] }, null, 42, { message: 'x', line: Infinity }, { message: 'kept' }],
      ['app/app.tend.yml:1:1 build.app: kept'],
    ],
  ])(
    'that %s is left to the handlers: validate passes, with the warnings alone',
    async (_what, check, expected) => {
      expect((await notes(withCheck(check))).notes).toEqual(expected);
    },
  );
});
