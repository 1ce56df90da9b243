/**
 * The shape of src/ stays readable: the layers docs/ARCHITECTURE.md shows are the ones
 * `npm run deps` enforces (scripts/layers.cjs, in the same order), every folder of src/ is in a
 * layer, and no source file is over 600 lines.
 */
import { describe, expect, it } from 'vitest';
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { repoRoot } from '../helpers/project.js';

const require = createRequire(import.meta.url);
const { layers } = require(path.join(repoRoot, 'scripts/layers.cjs')) as {
  layers: { name: string; paths: string[] }[];
};

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    return e.isDirectory() ? sourceFiles(full) : e.name.endsWith('.ts') ? [full] : [];
  });
}

describe('layers', () => {
  it('docs/ARCHITECTURE.md lists the layers that npm run deps enforces, lowest first', () => {
    const doc = readFileSync(path.join(repoRoot, 'docs/ARCHITECTURE.md'), 'utf8');
    const section = doc.split(/^## Layers$/m)[1]?.split(/^## /m)[0];
    expect(section, 'docs/ARCHITECTURE.md has a "## Layers" section').toBeDefined();
    const listed = [...section!.matchAll(/^\d+\. \*\*([a-z]+)\*\*/gm)].map((m) => m[1]);
    expect(listed).toEqual(layers.map((l) => l.name));
  });

  it('every file of src/ belongs to exactly one layer', () => {
    const files = sourceFiles(path.join(repoRoot, 'src')).map((f) =>
      path.relative(repoRoot, f).split(path.sep).join('/'),
    );
    for (const file of files) {
      const owners = layers.filter((l) => {
        const own = l.paths.some((p) => new RegExp(`^(${p})`).test(file));
        const except = (l as { except?: string[] }).except?.some((p) => new RegExp(`^(${p})`).test(file));
        return own && !except;
      });
      expect(
        owners.map((l) => l.name),
        file,
      ).toHaveLength(1);
    }
  });

  it('no source file is over 600 lines', () => {
    const long = sourceFiles(path.join(repoRoot, 'src'))
      .map((f) => ({
        file: path.relative(repoRoot, f),
        lines: readFileSync(f, 'utf8').split('\n').length - 1,
      }))
      .filter((f) => f.lines > 600);
    expect(long).toEqual([]);
  });
});
