/**
 * An action's `include:` and `exclude:` written as a template (`include: ${var.files}`), holding
 * one (`- ${var.extra[0]}`) or a `$concat`: resolved in the chosen environment with the contexts
 * Garden resolves them in (project, environment, variables, `local`, `git`, secrets, `this` — not
 * another action's outputs), so that the action's files, and its version, are what they say.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { actionVersions, openProject } from '../../src/commands/context.js';
import { ActionGraph } from '../../src/graph/graph.js';
import { clearSourceCache } from '../../src/graph/sources.js';
import { configureAt, configureError, describedError } from '../helpers/configure.js';
import { makeProject, removeProjects } from '../helpers/project.js';

afterEach(removeProjects);

const gardenProject = `apiVersion: garden.io/v2
kind: Project
name: patterns
environments: [{ name: local }]
variables:
  extra: [b.txt]
  skipped: [skip.txt]
  shape: { not: a pattern }
`;

const build = (patterns: string) => `kind: Build
type: exec
name: files
${patterns}
spec:
  command: ["true"]
`;

const files = { 'a.txt': 'a', 'b.txt': 'b', 'skip.txt': 'skip', 'other.txt': 'other' };

async function configured(root: string) {
  const configuration = await configureAt(root);
  return configuration.actions.find((a) => a.ref === 'build.files')!;
}

async function versionOf(root: string) {
  clearSourceCache();
  const opened = await openProject({ root });
  const graph = new ActionGraph(opened.actions);
  const versions = await actionVersions(opened, graph, ['build.files']);
  return versions.get('build.files')!;
}

describe('templated include and exclude', () => {
  it('an entry holding a template: the file it names is a source, and changing it changes the version', async () => {
    const root = makeProject({
      'project.garden.yml': gardenProject + '---\n' + build('include: ["${var.extra[0]}"]'),
      ...files,
    });
    expect((await configured(root)).include).toEqual(['b.txt']);
    const before = await versionOf(root);
    expect(before.files).toEqual(['b.txt']);
    writeFileSync(path.join(root, 'b.txt'), 'b (2)');
    expect((await versionOf(root)).version).not.toBe(before.version);
  });

  it('a $concat entry, a whole list as one template, and exclude alike', async () => {
    const root = makeProject({
      'project.garden.yml':
        gardenProject +
        '---\n' +
        build('include:\n  - a.txt\n  - $concat: ${var.extra}\nexclude: ${var.skipped}'),
      ...files,
    });
    const action = await configured(root);
    expect([action.include, action.exclude]).toEqual([['a.txt', 'b.txt'], ['skip.txt']]);
    expect((await versionOf(root)).files).toEqual(['a.txt', 'b.txt']);

    writeFileSync(
      path.join(root, 'project.garden.yml'),
      gardenProject + '---\n' + build('include: ${var.extra}\nexclude: ["${var.skipped[0]}"]'),
    );
    expect((await versionOf(root)).files).toEqual(['b.txt']);
  });

  it("a Garden 0.12 module's: its actions' include is resolved; a templated include may hold the Dockerfile", async () => {
    const module = (type: string) => `kind: Module
type: ${type}
name: files
include: ["\${var.extra[0]}", Dockerfile]
${type === 'exec' ? 'build: { command: [echo] }' : 'services: [{ name: web }]'}
`;
    const root = makeProject({
      'project.garden.yml': gardenProject + '---\n' + module('exec'),
      ...files,
    });
    expect((await configured(root)).include).toEqual(['b.txt', 'Dockerfile']);
    expect((await versionOf(root)).files).toEqual(['b.txt']);

    writeFileSync(
      path.join(root, 'project.garden.yml'),
      `${gardenProject}providers: [{ name: local-kubernetes }]\n---\n` +
        module('container').replace(', Dockerfile', ''),
    );
    writeFileSync(path.join(root, 'Dockerfile'), 'FROM scratch\n');
    expect((await configured(root)).type).toBe('container');
  });

  it('a value that is not a pattern (a mapping) is an error at its line', async () => {
    const root = makeProject({
      'project.garden.yml': gardenProject + '---\n' + build('include:\n  - a.txt\n  - "${var.shape}"'),
      ...files,
    });
    expect(describedError(await configureError(root))).toBe(
      'TEND_CONFIG_INVALID project.garden.yml:15 include "${var.shape}" of build.files resolves to {"not":"a pattern"}; expected a file pattern (a string) or a list of them',
    );
  });

  it("another action's outputs are not known there: an error at its line, when the configuration loads", async () => {
    const root = makeProject({
      'project.garden.yml':
        gardenProject +
        '---\n' +
        build('exclude:\n  - "${actions.build.other.outputs.path}"') +
        '---\nkind: Build\ntype: exec\nname: other\nspec: { command: ["true"] }\n',
      ...files,
    });
    expect(describedError(await configureError(root))).toBe(
      'TEND_CONFIG_INVALID project.garden.yml:14 exclude of build.files reads "actions.build.other.outputs.path": include and exclude are resolved before any action runs, with the project, environment, variables, local, git, secrets and this (as Garden resolves them); use a variable',
    );
  });
});
