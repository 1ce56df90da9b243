/**
 * The kubernetes plugin reaches the API only through its namespace-tracking client (docs/design.md#events):
 * no file of src/ outside src/plugins/kubernetes/client/ imports @kubernetes/client-node, and the
 * plugin's entry point loads it only lazily (so `tend --version` and exec-only projects never do):
 * its code is imported by library.ts and streams.ts alone, which connection.ts imports dynamically.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../../helpers/project.js';

const srcDir = path.join(repoRoot, 'src');
const pluginDir = path.join(srcDir, 'plugins', 'kubernetes');

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory()
      ? sources(path.join(dir, e.name))
      : e.name.endsWith('.ts')
        ? [path.join(dir, e.name)]
        : [],
  );
}

const importPattern =
  /(?:^|\n)\s*(import|export)\s+(type\s+)?[^'"]*?from\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g;

function imports(file: string): { spec: string; typeOnly: boolean; dynamic: boolean }[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(importPattern)].map((m) => ({
    spec: (m[3] ?? m[4])!,
    typeOnly: Boolean(m[2]),
    dynamic: m[4] !== undefined,
  }));
}

describe('the kubernetes plugin reaches the API only through its client', () => {
  it('imports @kubernetes/client-node nowhere in src/ outside src/plugins/kubernetes/client/', () => {
    // Other plugins reach a cluster through ctx.kubernetes(), which is this client.
    const offenders = sources(srcDir)
      .filter((f) => !f.startsWith(path.join(pluginDir, 'client') + path.sep))
      .filter((f) => imports(f).some((i) => i.spec.startsWith('@kubernetes/client-node')));
    expect(offenders).toEqual([]);
  });

  it('loads the client library at runtime only through library.ts and streams.ts, which are imported only dynamically', () => {
    // Type imports are erased; the two modules that import the library's code are the ones the
    // CLI bundle keeps its used parts of (scripts/bundle.ts).
    const loaders = ['library.ts', 'streams.ts'].map((name) => path.join(pluginDir, 'client', name));
    const eager = sources(pluginDir)
      .filter((f) => !loaders.includes(f))
      .flatMap((f) =>
        imports(f)
          .filter((i) => i.spec.startsWith('@kubernetes/client-node') && !i.typeOnly && !i.dynamic)
          .map(() => path.relative(repoRoot, f)),
      );
    expect(eager).toEqual([]);
    const importers = sources(srcDir).flatMap((f) =>
      imports(f)
        .filter((i) => /(^|\/)(library|streams)\.js$/.test(i.spec) && !i.typeOnly)
        .filter((i) => loaders.includes(path.resolve(path.dirname(f), i.spec.replace(/\.js$/, '.ts'))))
        .map((i) => `${path.relative(repoRoot, f)}: ${i.dynamic ? 'import' : 'static import of'} ${i.spec}`),
    );
    expect(importers.sort()).toEqual([
      'src/plugins/kubernetes/client/connection.ts: import ./library.js',
      'src/plugins/kubernetes/client/connection.ts: import ./streams.js',
    ]);
  });

  it('the plugin entry point statically imports nothing that loads the client', () => {
    const seen = new Set<string>();
    const visit = (file: string) => {
      if (seen.has(file)) return;
      seen.add(file);
      for (const i of imports(file)) {
        if (i.dynamic || i.typeOnly || !i.spec.startsWith('.')) continue;
        visit(path.resolve(path.dirname(file), i.spec.replace(/\.js$/, '.ts')));
      }
    };
    visit(path.join(pluginDir, 'index.ts'));
    const loaded = [...seen].map((f) => path.relative(pluginDir, f)).sort();
    // Of tend's own code outside the plugin, only the schema helpers its settings schema uses and
    // the framework's cleanup wrapper (which loads its checks when a job runs); of the plugin's,
    // its settings and the container volumes' schema (node:path and typebox only).
    expect(loaded).toEqual([
      '../../plugin/cleanup-wrap.ts',
      '../../schema-check.ts',
      'config.ts',
      'container/spec.ts',
      'index.ts',
      'volumes.ts',
    ]);
  });
});
