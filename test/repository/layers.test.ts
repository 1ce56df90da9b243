/**
 * The shape of src/ stays readable: the layers docs/ARCHITECTURE.md shows are the ones
 * `npm run deps` enforces (scripts/layers.cjs, in the same order), every folder of src/ is in a
 * layer, every file of src/server/ on one of the server's floors, and no source file is over 600
 * lines.
 */
import { describe, expect, it } from 'vitest';
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { repoRoot } from '../helpers/project.js';

const require = createRequire(import.meta.url);
interface Layer {
  name: string;
  paths: string[];
  except?: string[];
}
const { layers, serverFloors } = require(path.join(repoRoot, 'scripts/layers.cjs')) as {
  layers: Layer[];
  serverFloors: Layer[];
};

/** The names listed `1. **name**` in `text`, in order. */
const listedNames = (text: string) => [...text.matchAll(/^\d+\. \*\*([a-z]+)\*\*/gm)].map((m) => m[1]);

/** The repository-relative paths of the source files under `dir`. */
const relativeSources = (dir: string) =>
  sourceFiles(path.join(repoRoot, dir)).map((f) => path.relative(repoRoot, f).split(path.sep).join('/'));

/** The layers (or floors) of `list` that `file` belongs to. */
function ownersOf(file: string, list: Layer[]): Layer[] {
  return list.filter((l) => {
    const own = l.paths.some((p) => new RegExp(`^(${p})`).test(file));
    const except = l.except?.some((p) => new RegExp(`^(${p})`).test(file));
    return own && !except;
  });
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    return e.isDirectory() ? sourceFiles(full) : e.name.endsWith('.ts') ? [full] : [];
  });
}

describe('layers', () => {
  const doc = readFileSync(path.join(repoRoot, 'docs/ARCHITECTURE.md'), 'utf8');
  const section = doc.split(/^## Layers$/m)[1]?.split(/^## /m)[0];
  const [layerList, floorList] = section?.split(/^### The server's floors$/m) ?? [];

  it('docs/ARCHITECTURE.md lists the layers that npm run deps enforces, lowest first', () => {
    expect(section, 'docs/ARCHITECTURE.md has a "## Layers" section').toBeDefined();
    expect(listedNames(layerList!)).toEqual(layers.map((l) => l.name));
  });

  it("docs/ARCHITECTURE.md lists the server's floors that npm run deps enforces, lowest first", () => {
    expect(floorList, `"## Layers" has a "### The server's floors" subsection`).toBeDefined();
    expect(listedNames(floorList!)).toEqual(serverFloors.map((f) => f.name));
  });

  it('every file of src/ belongs to exactly one layer', () => {
    for (const file of relativeSources('src')) {
      expect(
        ownersOf(file, layers).map((l) => l.name),
        file,
      ).toHaveLength(1);
    }
  });

  it("every file of src/server/ is on exactly one of the server's floors", () => {
    for (const file of relativeSources('src/server')) {
      expect(
        ownersOf(file, serverFloors).map((f) => f.name),
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
