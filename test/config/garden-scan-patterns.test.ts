/**
 * The patterns of `scan.include` / `scan.exclude` (0.12's `modules.include` / `modules.exclude`)
 * read as Garden reads them when it looks for its files (findConfigPathsInPath): an include whose
 * last segment is `*` or `**` matches Garden's file names in that directory alone, the others are
 * git glob pathspecs (`*` stays within a directory, `**` crosses any number, a plain path covers
 * what is below it); an exclude is a glob matched against each file's path, nothing more.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { loadProjectConfig } from '../../src/config/pipeline.js';
import { builtinPlugins } from '../../src/plugins/builtin.js';
import { makeProject, removeProjects } from '../helpers/project.js';

afterEach(removeProjects);

const execBuild = (name: string) =>
  `kind: Build\ntype: exec\nname: ${name}\nspec:\n  command: [echo, ${name}]\n`;

/** Builds at the root, directly in apps, deeper in apps, and in lib; `settings`: the Project's own YAML lines. */
const scannedProject = (settings: string) =>
  makeProject({
    'project.garden.yml': `kind: Project\nname: shop\nenvironments: [{ name: local }]\n${settings}---\n${execBuild('root')}`,
    'other.garden.yml': execBuild('other'),
    'apps/garden.yml': execBuild('apps'),
    'apps/x.garden.yml': execBuild('appsx'),
    'apps/a/garden.yaml': execBuild('a'),
    'apps/a/b/garden.yml': execBuild('b'),
    'lib/garden.yml': execBuild('lib'),
  });

const builds = async (settings: string) => {
  const loaded = await loadProjectConfig({ cwd: scannedProject(settings), plugins: builtinPlugins() });
  return loaded.actions.map((action) => action.name).sort();
};

// Each expectation is what `git --glob-pathspecs ls-files` lists for Garden's rewritten pattern.
describe('scan.include patterns, as Garden matches them', () => {
  it.each([
    ['*', ['other', 'root']],
    ['**', ['other', 'root']],
    ['apps/*', ['apps', 'appsx']],
    ['apps/**', ['apps', 'appsx']],
    ['apps/**/*', ['a', 'apps', 'appsx', 'b']],
    ['**/garden.yml', ['apps', 'b', 'lib']],
    ['apps/*/garden.yaml', ['a']],
    ['apps/a/b/garden.yml', ['b']],
    ['apps', ['a', 'apps', 'appsx', 'b']],
    ['./apps/a/', ['a', 'b']],
    ['app*', []],
  ])('include: [%s] reads the builds %j', async (pattern, expected) => {
    expect(await builds(`scan:\n  include: ["${pattern}"]\n`)).toEqual(expected);
  });

  it('an empty include reads no file but the Project', async () => {
    expect(await builds('scan:\n  include: []\n')).toEqual([]);
  });
});

describe('scan.exclude patterns, as Garden matches them', () => {
  it.each([
    ['apps/**', ['lib', 'other', 'root']],
    ['apps/**/*', ['lib', 'other', 'root']],
    ['./apps/**/*', ['lib', 'other', 'root']],
    ['apps/*', ['a', 'b', 'lib', 'other', 'root']],
    ['*.garden.yml', ['a', 'apps', 'appsx', 'b', 'lib']],
    ['**/garden.yml', ['a', 'appsx', 'other', 'root']],
    // A directory's name alone matches no file's path: Garden still reads what is below it.
    ['apps', ['a', 'apps', 'appsx', 'b', 'lib', 'other', 'root']],
  ])('exclude: [%s] reads the builds %j', async (pattern, expected) => {
    expect(await builds(`scan:\n  exclude: ["${pattern}"]\n`)).toEqual(expected);
  });
});

describe('what Garden leaves out of every project', () => {
  it('a debug-info directory at the root (what `garden get debug-info` writes) is not read', async () => {
    const root = makeProject({
      'project.garden.yml': 'kind: Project\nname: shop\nenvironments: [{ name: local }]\n',
      'debug-info-2024/garden.yml': execBuild('debug'),
      'svc/garden.yml': execBuild('svc'),
    });
    const loaded = await loadProjectConfig({ cwd: root, plugins: builtinPlugins() });
    expect(loaded.actions.map((action) => action.name)).toEqual(['svc']);
  });
});

describe("0.12's modules.include / modules.exclude", () => {
  it('are read key by key beside scan: scan.git alone does not hide modules.include', async () => {
    expect(await builds('scan:\n  git:\n    mode: repo\nmodules:\n  include: ["apps/*"]\n')).toEqual([
      'apps',
      'appsx',
    ]);
    expect(
      await builds('scan:\n  include: [lib/**/*]\nmodules:\n  include: [apps/**/*]\n  exclude: [lib/**]\n'),
    ).toEqual([]);
  });
});
