/**
 * tend reports package.json's version however it runs: from source (tsx: the demo's embedded
 * executor, tests), the library (dist/src) and the CLI bundle (dist/cli) — never 0.0.0 from a clone.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { cliVersion, versionOf } from '../src/version.js';
import { makeProject, removeProjects, repoRoot, tendBin } from './helpers/project.js';

const run = promisify(execFile);
afterAll(removeProjects);

const packageVersion = (
  JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { version: string }
).version;

describe('the tend version', () => {
  it('is package.json’s, run from source', () => {
    expect(packageVersion).not.toBe('0.0.0');
    expect(cliVersion).toBe(packageVersion);
  });

  it('is package.json’s through tsx, the library and the CLI bundle', async () => {
    const tsx = await run(
      process.execPath,
      ['--import', 'tsx', path.join(repoRoot, 'src/main.ts'), '--version'],
      {
        cwd: repoRoot,
      },
    );
    expect(tsx.stdout.trim()).toBe(packageVersion);
    const library = await run(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        'import { cliVersion } from "./dist/src/version.js"; console.log(cliVersion)',
      ],
      { cwd: repoRoot },
    );
    expect(library.stdout.trim()).toBe(packageVersion);
    const bundle = await run(process.execPath, [tendBin, '--version'], { cwd: repoRoot });
    expect(bundle.stdout.trim()).toBe(packageVersion);
  });

  it('is the nearest package.json named tend above the file, 0.0.0 when there is none', () => {
    const root = makeProject({});
    writeFileSync(path.join(root, 'package.json'), JSON.stringify({ name: 'tend', version: '9.8.7' }));
    mkdirSync(path.join(root, 'dist', 'cli'), { recursive: true });
    // Another package's manifest on the way (bin/package.json has no name) is passed over.
    writeFileSync(path.join(root, 'dist', 'package.json'), JSON.stringify({ type: 'commonjs' }));
    writeFileSync(path.join(root, 'dist', 'cli', 'package.json'), '{ not json');
    expect(versionOf(pathToFileURL(path.join(root, 'dist', 'cli', 'tend.cjs')).href)).toBe('9.8.7');
    expect(versionOf(pathToFileURL(path.join(root, 'src', 'version.ts')).href)).toBe('9.8.7');
    const bare = makeProject({});
    expect(versionOf(pathToFileURL(path.join(bare, 'a', 'b.js')).href)).toBe('0.0.0');
  });
});
