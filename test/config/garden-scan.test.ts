/**
 * Which documents of the Garden files at the project root are read: as Garden, the Project
 * document always (it finds the project there), the others only when the scan (`scan.include`,
 * `scan.exclude`, the ignore files) keeps the file, as it keeps any other Garden file.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadProjectConfig } from '../../src/config/pipeline.js';
import { builtinPlugins } from '../../src/plugins/builtin.js';
import { failure } from '../helpers/configure.js';
import { makeProject, removeProjects } from '../helpers/project.js';

afterEach(removeProjects);

/** The Project document, with `settings` (YAML lines) after its own. */
const gardenProject = (settings = '') =>
  `kind: Project\nname: shop\nenvironments: [{ name: local }]\nproviders: [{ name: local-kubernetes }]\n${settings}`;

const execBuild = (name: string) => `kind: Build
type: exec
name: ${name}
spec:
  command: [echo, ${name}]
`;

/** A project whose root files hold actions beside the Project, and whose apps and lib hold more. */
const rootActions = (projectSettings: string, extra: Record<string, string> = {}) =>
  makeProject({
    'project.garden.yml': `${gardenProject(projectSettings)}---\n${execBuild('root-build')}`,
    'other.garden.yml': execBuild('other'),
    'apps/a/garden.yml': execBuild('a'),
    'lib/x/garden.yml': execBuild('libx'),
    ...extra,
  });

const load = async (root: string) => {
  const loaded = await loadProjectConfig({ cwd: root, plugins: builtinPlugins() });
  return { project: loaded.project.name, actions: loaded.actions.map((a) => a.ref).sort() };
};

describe('Garden files at the project root and the scan', () => {
  it('scan.include leaving the root out: the Project is read from project.garden.yml, no action of a root file is', async () => {
    const root = rootActions('scan:\n  include:\n    - apps/**/*\n');
    expect(await load(root)).toEqual({ project: 'shop', actions: ['build.a'] });
  });

  it('a Module or ConfigTemplate in a root file the scan leaves out is not read either', async () => {
    const root = rootActions('scan:\n  include: [apps/**/*]\n', {
      // Read, the module would be a second "a" and the template an error of its own.
      'modules.garden.yml': 'kind: Module\ntype: exec\nname: a\n---\nkind: ConfigTemplate\nname: t\n',
    });
    expect(await load(root)).toEqual({ project: 'shop', actions: ['build.a'] });
  });

  it('without scan.include, or with one matching them, the root files are scanned as any other', async () => {
    expect(await load(rootActions(''))).toEqual({
      project: 'shop',
      actions: ['build.a', 'build.libx', 'build.other', 'build.root-build'],
    });
    const matching = rootActions('scan:\n  include: [project.garden.yml, apps/**/*]\n');
    expect(await load(matching)).toEqual({ project: 'shop', actions: ['build.a', 'build.root-build'] });
  });

  it('scan.exclude, .gardenignore and dotIgnoreFile leave a root file out; the Project of an excluded one is still read', async () => {
    const excluded = rootActions('scan:\n  exclude: [other.garden.yml, project.garden.yml]\n');
    expect(await load(excluded)).toEqual({ project: 'shop', actions: ['build.a', 'build.libx'] });

    const ignored = rootActions('', { '.gardenignore': 'other.garden.yml\nproject.garden.yml\n' });
    expect(await load(ignored)).toEqual({ project: 'shop', actions: ['build.a', 'build.libx'] });

    const custom = rootActions('dotIgnoreFile: .ignore\n', { '.ignore': 'other.garden.yml\n' });
    expect(await load(custom)).toEqual({
      project: 'shop',
      actions: ['build.a', 'build.libx', 'build.root-build'],
    });
  });

  it("tend's own files are not Garden's scan: tend.yml's actions and a *.tend.yml outside scan.include are read", async () => {
    const root = rootActions('scan:\n  include: [apps/**/*]\n', {
      'lib/y/y.tend.yml': 'kind: Build\ntype: exec\nname: y\nspec:\n  command: [echo, y]\n',
    });
    expect((await load(root)).actions).toEqual(['build.a', 'build.y']);

    const tendProject = makeProject({
      'tend.yml': `kind: Project\nname: shop\nenvironments: [{ name: dev }]\nproviders: [{ name: exec }]\n---\n${execBuild('root')}`,
      '.gardenignore': 'tend.yml\nother.garden.yml\n',
      'other.garden.yml': execBuild('other'),
    });
    expect(await load(tendProject)).toEqual({ project: 'shop', actions: ['build.root'] });
  });

  it('a root file read for its Project alone is remembered whole: once the scan keeps it, its actions load', async () => {
    const root = rootActions('scan:\n  include: [apps/**/*]\n');
    expect((await load(root)).actions).toEqual(['build.a']);
    // Only project.garden.yml changes: other.garden.yml's documents come from the parse cache.
    writeFileSync(path.join(root, 'project.garden.yml'), gardenProject());
    expect((await load(root)).actions).toEqual(['build.a', 'build.libx', 'build.other']);
  });

  it('a YAML error in a root file the scan leaves out is still the error at its line, as Garden parses it for the Project', async () => {
    const root = rootActions('scan:\n  include: [apps/**/*]\n', { 'broken.garden.yml': 'kind: [Build\n' });
    const error = await failure(load(root));
    expect(error.code).toBe('TEND_CONFIG_YAML');
    expect(error.location).toMatchObject({ file: 'broken.garden.yml', line: 2 });
  });

  it('a Project document that does not parse: its YAML error alone, no file the unread scan settings would leave out', async () => {
    const root = makeProject({
      'project.garden.yml': `${gardenProject('scan:\n  include: [apps/**/*]\n')}variables:\n  a: 1\n  a: 2\n`,
      'apps/a/garden.yml': execBuild('a'),
      // Before project.garden.yml in name order: not said to lack the Project, the broken file holds it.
      'e2e.garden.yml': execBuild('e2e'),
      // Scanned without the Project's settings, this file would add an error of its own.
      'vendor/garden.yml': 'kind: Module\ntype: test\nname: vendored\n',
    });
    const error = await failure(load(root));
    expect(error.detail?.errors).toEqual([
      expect.objectContaining({
        code: 'TEND_CONFIG_YAML',
        location: expect.objectContaining({ file: 'project.garden.yml', line: 9 }),
      }),
    ]);
  });
});
