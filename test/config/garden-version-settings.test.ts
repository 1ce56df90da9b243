/**
 * Garden 0.14's version controls — the Project's `excludeValuesFromActionVersions`, an action's
 * `version` (`excludeDependencies`, `excludeFields`, `excludeFiles`, `excludeValues`) — accepted
 * and ignored, one note each: tend's versions keep covering those inputs (an action may run where
 * Garden's would not, never a stale result). Their shape is still checked, each problem at its line.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { loadProjectConfig } from '../../src/config/pipeline.js';
import type { TendError } from '../../src/errors.js';
import { builtinPlugins } from '../../src/plugins/builtin.js';
import { makeProject, removeProjects } from '../helpers/project.js';

afterEach(removeProjects);

const project = (excluded: string) => `apiVersion: garden.io/v2
kind: Project
name: versions
environments:
  - name: a
    variables: { hostname: a.example.com }
excludeValuesFromActionVersions: ${excluded}
`;

const test = (version: string) => `kind: Test
type: exec
name: t
dependencies: [run.setup]
version:
${version}
spec:
  command: [echo, "\${var.hostname}"]
---
kind: Run
type: exec
name: setup
spec: { command: [echo] }
`;

const allSettings = `  excludeDependencies: [run.setup, { kind: Run, name: setup }]
  excludeFields: [[spec, env, HOSTNAME], [spec, artifacts, "*", target]]
  excludeFiles: ["*.log"]
  excludeValues: ["\${var.hostname}"]`;

const load = (root: string) => loadProjectConfig({ cwd: root, plugins: builtinPlugins() });

async function loadProblems(root: string): Promise<string[]> {
  const error = await load(root).then(
    () => undefined,
    (e: unknown) => e as TendError,
  );
  if (!error) throw new Error('the configuration loaded');
  const errors = (
    error.detail as { errors?: { message: string; location: { file: string; line: number } }[] }
  ).errors ?? [{ message: error.message, location: error.location! }];
  return errors.map((e) => `${e.location.file}:${e.location.line} ${e.message}`);
}

describe("Garden's version controls", () => {
  it('are accepted and ignored, one note each at its line', async () => {
    const root = makeProject({
      'project.garden.yml': project('["${var.hostname}"]'),
      'garden.yml': test(allSettings),
    });
    const loaded = await load(root);
    expect(loaded.actions.map((a) => a.ref).sort()).toEqual(['run.setup', 'test.t']);
    expect(loaded.notes.map((n) => `${n.location.file}:${n.location.line} ${n.message}`)).toEqual([
      "garden.yml:5 version (excludeDependencies, excludeFields, excludeFiles, excludeValues): Garden leaves these inputs out of the action's version; tend's versions cover them (an action may run again where Garden's would not, never a stale result); ignored",
      "project.garden.yml:7 excludeValuesFromActionVersions: Garden leaves these values out of every action's version; tend's versions cover them (an action may run again where Garden's would not, never a stale result); ignored",
    ]);
  });

  it('a misspelt key or a value of the wrong shape is an error at its line', async () => {
    const root = makeProject({
      'project.garden.yml': project('a.example.com'),
      'garden.yml': test('  excludeFile: ["*.log"]\n  excludeFields: [spec.env]\n  excludeDependencies: [3]'),
    });
    expect(await loadProblems(root)).toEqual([
      'garden.yml:6 unknown key "excludeFile" in version; did you mean "excludeFiles"? expected one of: excludeDependencies, excludeFields, excludeFiles, excludeValues',
      'garden.yml:7 version.excludeFields must be a list of field paths, each a list of keys ([spec, env, HOSTNAME])',
      'garden.yml:8 version.excludeDependencies must be a list of action references (run.setup, or { kind: Run, name: setup })',
      'project.garden.yml:7 excludeValuesFromActionVersions must be a list of strings (the values to leave out, usually templates)',
    ]);
  });
});
