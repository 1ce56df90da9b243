/**
 * The parse cache (src/config/parse-cache.ts): an unchanged file is not parsed again, a changed
 * one is, positions found later are still right, and a damaged cache file is ignored.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { appendFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadProjectConfig } from '../../src/config/pipeline.js';
import { TendError } from '../../src/errors.js';
import { builtinPlugins } from '../../src/plugins/builtin.js';
import { removeProjects, writeProject, yaml } from './fixtures/project.js';

afterAll(removeProjects);

const projectDoc = yaml`
  kind: Project
  name: p
  defaultEnvironment: dev
  environments: [{ name: dev, defaultNamespace: p-dev }]
  providers: [{ name: exec }]
`;

const buildDoc = (word: string) => yaml`
  kind: Build
  type: exec
  name: one
  spec:
    command: [echo, ${word}]
`;

const load = (root: string) => loadProjectConfig({ cwd: root, plugins: builtinPlugins() });
const cacheFile = (root: string) => path.join(root, '.tend', 'cache', 'config.json');

interface CacheShape {
  format: number;
  files: Record<string, { sha256: string; documents: { value: { spec?: { command: string[] } } }[] }>;
}
const readCache = (root: string) => JSON.parse(readFileSync(cacheFile(root), 'utf8')) as CacheShape;

async function loadError(root: string): Promise<TendError> {
  const thrown = await load(root).catch((e: unknown) => e);
  expect(thrown).toBeInstanceOf(TendError);
  return thrown as TendError;
}

describe('the parse cache', () => {
  it('gives back an unchanged file as parsed before, and parses a changed file again', async () => {
    const root = await writeProject({ 'tend.yml': projectDoc, 'a/a.tend.yml': buildDoc('first') });
    expect((await load(root)).actions[0]!.spec).toEqual({ command: ['echo', 'first'] });
    const cache = readCache(root);
    expect(Object.keys(cache.files).sort()).toEqual(['a/a.tend.yml', 'tend.yml']);

    // What the cache holds is what the load uses while the file's content is the same…
    cache.files['a/a.tend.yml']!.documents[0]!.value.spec!.command = ['echo', 'from-the-cache'];
    writeFileSync(cacheFile(root), JSON.stringify(cache));
    expect((await load(root)).actions[0]!.spec).toEqual({ command: ['echo', 'from-the-cache'] });

    // …and never once it changed.
    await writeFile(path.join(root, 'a/a.tend.yml'), buildDoc('second'));
    expect((await load(root)).actions[0]!.spec).toEqual({ command: ['echo', 'second'] });
    expect(readCache(root).files['a/a.tend.yml']!.documents[0]!.value.spec!.command).toEqual([
      'echo',
      'second',
    ]);
  });

  it('finds positions in a cached file for errors found later', async () => {
    const root = await writeProject({ 'tend.yml': projectDoc, 'a/a.tend.yml': buildDoc('first') });
    await load(root);
    // A second file makes the cached one a duplicate: both positions come from the YAML.
    await writeFile(path.join(root, 'b.tend.yml'), `# another\n${buildDoc('again')}`);
    const error = await loadError(root);
    expect(error.toString()).toMatch(
      /^b\.tend\.yml:4:7: duplicate action build\.one; first defined at a\/a\.tend\.yml:3:7/,
    );
    await writeFile(path.join(root, 'b.tend.yml'), '');
    const { actions } = await load(root);
    expect(actions[0]!.locate(['spec', 'command', 1])).toEqual({ file: 'a/a.tend.yml', line: 5, column: 19 });
  });

  it('ignores a damaged or foreign cache file and writes a good one', async () => {
    const root = await writeProject({ 'tend.yml': projectDoc, 'a/a.tend.yml': buildDoc('first') });
    await load(root);
    const good = readFileSync(cacheFile(root), 'utf8');
    for (const damaged of [
      good.slice(0, good.length / 2), // torn by a crash
      'not json at all',
      JSON.stringify({ format: 999, files: {} }),
      JSON.stringify({ format: 1, files: { 'a/a.tend.yml': { sha256: 3, documents: 'x' } } }),
      '\u0000'.repeat(64),
    ]) {
      writeFileSync(cacheFile(root), damaged);
      expect((await load(root)).actions[0]!.spec).toEqual({ command: ['echo', 'first'] });
      expect(readCache(root)).toEqual(JSON.parse(good));
    }
    // A file cut short in the cache's middle is still a damaged file, not a crash.
    await appendFile(cacheFile(root), '{');
    expect((await load(root)).actions).toHaveLength(1);
  });

  it('does not keep a file whose data JSON would not give back as it is (a shared alias)', async () => {
    const root = await writeProject({
      'tend.yml': projectDoc,
      'a/a.tend.yml': yaml`
        kind: Build
        type: exec
        name: one
        spec:
          command: [echo, one]
          env: &shared { A: b }
          outputs: *shared
      `,
    });
    const first = await load(root);
    expect(Object.keys(readCache(root).files)).toEqual(['tend.yml']);
    expect((await load(root)).actions[0]!.spec).toEqual(first.actions[0]!.spec);
  });
});
