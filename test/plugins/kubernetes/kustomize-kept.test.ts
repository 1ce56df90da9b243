/**
 * The key under which a kustomization's rendering is kept across commands: every file the
 * rendering may read changes it, and a kustomization that may read what tend cannot follow
 * (a remote base, plugins, helm charts, unknown extra arguments) has none.
 */
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { createHash } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../../helpers/project.js';
import {
  keepRendering,
  keptRendering,
  renderingDocuments,
  renderingKey,
} from '../../../src/plugins/kubernetes/kustomize-kept.js';

const roots: string[] = [];
afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});

/** A base, an overlay of it with a patch, a generated ConfigMap from a file outside both, and a component. */
function project(overlay = ''): {
  root: string;
  program: string;
  key: (extraArgs?: string[]) => string | undefined;
} {
  const root = mkdtempSync(path.join(os.tmpdir(), 'tend-kept-'));
  roots.push(root);
  const files: Record<string, string> = {
    'bin/kustomize': '#!/bin/sh\n',
    'k8s/base/kustomization.yaml': 'resources: [deployment.yaml]\n',
    'k8s/base/deployment.yaml': 'kind: Deployment\nmetadata: { name: web }\n',
    'k8s/component/kustomization.yaml': 'kind: Component\nnamePrefix: c-\n',
    'k8s/settings/app.properties': 'greeting=hello\n',
    'k8s/overlay/patch.yaml': 'kind: Deployment\nmetadata: { name: web }\nspec: { replicas: 2 }\n',
    'k8s/overlay/kustomization.yaml':
      'resources: [../base]\ncomponents: [../component]\npatchesStrategicMerge: [patch.yaml]\n' +
      'configMapGenerator:\n  - name: app\n    files: [app=../settings/app.properties]\n' +
      overlay,
  };
  for (const [file, content] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    writeFileSync(path.join(root, file), content);
  }
  const program = path.join(root, 'bin/kustomize');
  chmodSync(program, 0o755);
  const key = (extraArgs: string[] = []) =>
    renderingKey(program, ['build', root], path.join(root, 'k8s/overlay'), extraArgs);
  return { root, program, key };
}

describe('renderingKey', () => {
  it('is the same while nothing changes, and changes with any file the rendering reads', () => {
    const { root, key } = project();
    const first = key();
    expect(first).toMatch(/^[0-9a-f]{64}$/);
    expect(key()).toBe(first);
    const seen = new Set([first]);
    for (const file of [
      'k8s/base/deployment.yaml', // a resource of the base
      'k8s/base/kustomization.yaml', // the base itself
      'k8s/component/kustomization.yaml', // a component
      'k8s/overlay/patch.yaml', // a patch
      'k8s/settings/app.properties', // a generator's file, outside the overlay
      'k8s/overlay/notes.txt', // a new file beside the kustomization
    ]) {
      writeFileSync(path.join(root, file), `# changed ${file}\n`, { flag: 'a' });
      const changed = key();
      expect(changed, file).toBeDefined();
      expect(seen.has(changed!), file).toBe(false);
      seen.add(changed!);
    }
  });

  it('changes with the program and the arguments', () => {
    const { program, key } = project();
    const first = key();
    expect(key(['--enable-alpha-plugins'])).not.toBe(first);
    utimesSync(program, new Date(2001, 1, 1), new Date(2001, 1, 1));
    expect(key()).not.toBe(first);
  });

  it.each([
    ['a remote base', 'resources: [github.com/example/repo//base?ref=v1]\n', 'resources'],
    ['a generator plugin', 'generators: [plugin.yaml]\n', undefined],
    ['a helm chart', 'helmCharts: [{ name: web, repo: https://charts.example.com }]\n', undefined],
  ])('has none for %s', (_, text, replaced) => {
    const { root, key } = project();
    const file = path.join(root, 'k8s/overlay/kustomization.yaml');
    writeFileSync(file, replaced ? text : `resources: [../base]\n${text}`);
    expect(key()).toBeUndefined();
  });

  it('has none for an extra argument it does not know, or a missing kustomization', () => {
    const { root, key } = project();
    expect(key(['--enable-helm'])).toBeUndefined();
    expect(key(['--load-restrictor', 'LoadRestrictionsNone'])).toBeDefined();
    rmSync(path.join(root, 'k8s/base/kustomization.yaml'));
    expect(key()).toBeUndefined();
  });
});

describe('keys kept with the stamps of what they read', () => {
  const cacheDirOf = (root: string) => path.join(root, '.tend/cache/kustomize');
  const keyWith = (
    { root, program }: { root: string; program: string },
    extraArgs: string[] = [],
  ): string | undefined =>
    renderingKey(program, ['build', root], path.join(root, 'k8s/overlay'), extraArgs, cacheDirOf(root));
  const inputsFiles = (root: string) =>
    readdirSync(cacheDirOf(root))
      .filter((name) => name.endsWith('.inputs'))
      .map((name) => path.join(cacheDirOf(root), name));
  /** Writes a kept key's record again, changed, under a checksum that holds (as tend writes it). */
  function rewrite(file: string, change: (record: { key: string; stamps: unknown[] }) => unknown): void {
    const text = readFileSync(file, 'utf8');
    const next = JSON.stringify(change(JSON.parse(text.slice(text.indexOf('\n') + 1))));
    writeFileSync(
      file,
      `# tend rendering sha256:${createHash('sha256').update(next).digest('hex')}\n${next}`,
    );
  }
  /** Every file and directory of the projects' kustomizations older than the clock's coarseness could hide. */
  const settled = (roots: string[]) => () =>
    roots.every((root) =>
      readdirSync(path.join(root, 'k8s'), { recursive: true, encoding: 'utf8' })
        .map((entry) => path.join(root, 'k8s', entry))
        .concat(path.join(root, 'k8s'))
        .every((entry) => Date.now() - statSync(entry).ctimeMs > 2100),
    );

  it('reads a key back without what it read while nothing changed, and works it out again after any change', async () => {
    const changes: [string, (root: string) => void][] = [
      // the same size, another content
      [
        'a resource of the base',
        (root) =>
          writeFileSync(
            path.join(root, 'k8s/base/deployment.yaml'),
            'kind: Deployment\nmetadata: { name: wex }\n',
          ),
      ],
      [
        'the kustomization of a component',
        (root) =>
          writeFileSync(
            path.join(root, 'k8s/component/kustomization.yaml'),
            'kind: Component\nnamePrefix: d-\n',
          ),
      ],
      [
        'a new file beside the kustomization',
        (root) => writeFileSync(path.join(root, 'k8s/overlay/notes.txt'), 'new\n'),
      ],
      [
        'a file of the base renamed',
        (root) =>
          renameSync(path.join(root, 'k8s/base/deployment.yaml'), path.join(root, 'k8s/base/deployment.yml')),
      ],
      ["a generator's file removed", (root) => rmSync(path.join(root, 'k8s/settings/app.properties'))],
    ];
    const projects = changes.map(() => project());
    await waitFor(settled(projects.map(({ root }) => root)), 'the kustomizations to be 2 s old', 6000);
    for (const [[what, change], tree] of changes.map((c, i) => [c, projects[i]!] as const)) {
      const first = keyWith(tree);
      expect(first, what).toBe(tree.key());
      const [record] = inputsFiles(tree.root);
      expect(record, what).toBeDefined();
      // The kept key is what a later command uses while the stamps hold (here: one made up)…
      const madeUp = 'f'.repeat(64);
      rewrite(record!, (kept) => ({ ...(kept as object), key: madeUp }));
      expect(keyWith(tree), what).toBe(madeUp);
      expect(keyWith(tree, ['--reorder=none']), what).not.toBe(madeUp);
      // …and not once anything it read, or a directory it listed, changed.
      change(tree.root);
      expect(keyWith(tree), what).not.toBe(madeUp);
      expect(keyWith(tree), what).toBe(tree.key());
    }
  });

  it('keeps no key while what it read was changed a moment ago', () => {
    const tree = project();
    expect(keyWith(tree)).toBe(tree.key());
    expect(existsSync(cacheDirOf(tree.root)) ? inputsFiles(tree.root) : []).toEqual([]);
  });

  it('works the key out again from a record that is damaged or not what tend writes', async () => {
    const tree = project();
    await waitFor(settled([tree.root]), 'the kustomization to be 2 s old', 6000);
    const first = keyWith(tree);
    const [record] = inputsFiles(tree.root);
    const kept = readFileSync(record!);
    const damage: ((record: { key: string; stamps: unknown[] }) => unknown)[] = [
      (r) => ({ ...r, key: 'F'.repeat(64) }),
      (r) => ({ ...r, key: '../x' }),
      (r) => ({ ...r, stamps: 'all' }),
      (r) => ({ ...r, stamps: [[1, 2, 3, 4, 5]] }),
      (r) => ({ ...r, stamps: [...r.stamps, ['/nonexistent\u0000', 1, 2, 3, 4]] }),
      (r) => ({ ...r, stamps: [...r.stamps, ['/tmp', 1, 2, 3]] }),
      () => [1, 2],
      () => null,
    ];
    for (const change of damage) {
      writeFileSync(record!, kept);
      rewrite(record!, change);
      expect(keyWith(tree)).toBe(first);
    }
    for (const cut of [kept.subarray(0, kept.length - 2), Buffer.alloc(0), Buffer.from('\u0000')]) {
      writeFileSync(record!, cut);
      expect(keyWith(tree)).toBe(first);
    }
    // JSON that JSON.stringify would not write: a time of 1e999 (Infinity), stamps 10,000 deep.
    const { stamps } = JSON.parse(kept.toString('utf8').slice(kept.indexOf('\n') + 1)) as {
      stamps: unknown[][];
    };
    const [file] = stamps[0] as [string];
    for (const text of [
      `{"key":"${'f'.repeat(64)}","stamps":[[${JSON.stringify(file)},1e999,1e999,1e999,1e999]]}`,
      `{"key":"${'f'.repeat(64)}","stamps":${'['.repeat(10_000)}${']'.repeat(10_000)}}`,
    ]) {
      writeFileSync(
        record!,
        `# tend rendering sha256:${createHash('sha256').update(text).digest('hex')}\n${text}`,
      );
      expect(keyWith(tree)).toBe(first);
    }
  });
});

describe('kept renderings', () => {
  it('reads back what was kept, and nothing under another key', () => {
    const { root } = project();
    const cacheDir = path.join(root, '.tend/cache/kustomize');
    expect(keptRendering(cacheDir, 'a'.repeat(64))).toBeUndefined();
    keepRendering(cacheDir, 'a'.repeat(64), 'kind: ConfigMap\n');
    expect(keptRendering(cacheDir, 'a'.repeat(64))).toBe('kind: ConfigMap\n');
    expect(keptRendering(cacheDir, 'b'.repeat(64))).toBeUndefined();
  });

  it('does not read back a rendering cut short, changed, or without its checksum; keeping it again replaces it', () => {
    const { root } = project();
    const cacheDir = path.join(root, '.tend/cache/kustomize');
    const key = 'c'.repeat(64);
    const file = path.join(cacheDir, `${key}.yaml`);
    const text = 'kind: ConfigMap\nmetadata: { name: app }\ndata: { greeting: héllo }\n';
    keepRendering(cacheDir, key, text);
    const kept = readFileSync(file);
    // Written whole under its name: no temporary file left beside it.
    expect(readdirSync(cacheDir)).toEqual([`${key}.yaml`]);
    for (const damaged of [
      kept.subarray(0, kept.length - 1),
      kept.subarray(0, kept.length - 3),
      kept.subarray(0, 20),
      Buffer.alloc(0),
      Buffer.from(kept.toString('utf8').replace('hello', 'hullo').replace('héllo', 'hallo')),
      Buffer.from(text),
    ]) {
      writeFileSync(file, damaged);
      expect(keptRendering(cacheDir, key)).toBeUndefined();
    }
    keepRendering(cacheDir, key, text);
    expect(keptRendering(cacheDir, key)).toBe(text);
  });
});

describe('kept documents of a rendering', () => {
  const text =
    'kind: ConfigMap\nmetadata: { name: app }\ndata: { greeting: héllo }\n---\n---\nkind: Service\n';
  const values = () => [
    { kind: 'ConfigMap', metadata: { name: 'app' }, data: { greeting: 'héllo' } },
    null,
    { kind: 'Service' },
  ];

  function cache(): { cacheDir: string; file: string } {
    const { root } = project();
    const cacheDir = path.join(root, '.tend/cache/kustomize');
    mkdirSync(cacheDir, { recursive: true });
    return { cacheDir, file: path.join(cacheDir, `${createHash('sha256').update(text).digest('hex')}.json`) };
  }

  it('parses a text once: the next command reads its documents back as they were, each time new objects', () => {
    const { cacheDir } = cache();
    let parses = 0;
    const parse = () => (parses++, values());
    expect(renderingDocuments(cacheDir, text, parse)).toEqual(values());
    const again = renderingDocuments(cacheDir, text, parse);
    expect(again).toEqual(values());
    expect(parses).toBe(1);
    (again[0] as { kind: string }).kind = 'Changed';
    expect(renderingDocuments(cacheDir, text, parse)).toEqual(values());
    // Another text is parsed on its own.
    expect(renderingDocuments(cacheDir, `${text}# another\n`, () => [{ kind: 'Secret' }])).toEqual([
      { kind: 'Secret' },
    ]);
    expect(parses).toBe(1);
  });

  it('parses again documents cut short, changed or without their checksum, and keeps them again', () => {
    const { cacheDir, file } = cache();
    renderingDocuments(cacheDir, text, values);
    const kept = readFileSync(file);
    const changed = kept.toString('utf8').replace('"app"', '"web"');
    // Under a checksum that holds, JSON that is not a list of documents, or no JSON at all.
    const checksummed = (body: string) =>
      Buffer.from(`# tend rendering sha256:${createHash('sha256').update(body).digest('hex')}\n${body}`);
    for (const damaged of [
      kept.subarray(0, kept.length - 1),
      kept.subarray(0, 20),
      Buffer.alloc(0),
      Buffer.from(changed),
      checksummed('{"kind":"ConfigMap"}'),
      checksummed('[{"kind": ConfigMap'),
    ]) {
      writeFileSync(file, damaged);
      let parses = 0;
      expect(renderingDocuments(cacheDir, text, () => (parses++, values()))).toEqual(values());
      expect(parses).toBe(1);
      expect(readFileSync(file)).toEqual(kept);
    }
  });

  it('keeps no documents that JSON would not give back as they were', () => {
    const shared = { name: 'app' };
    for (const documents of [
      [{ replicas: Number.POSITIVE_INFINITY }],
      [{ replicas: Number.NaN }],
      [{ replicas: -0 }],
      [{ data: new Uint8Array([1]) }],
      [{ when: new Date(0) }],
      [{ a: shared, b: shared }],
      [{ list: [1, undefined] }],
      [JSON.parse('{"__proto__": {"kind": "Secret"}}') as unknown],
    ]) {
      const { cacheDir } = cache();
      let parses = 0;
      const parse = () => (parses++, documents);
      expect(renderingDocuments(cacheDir, text, parse)).toBe(documents);
      renderingDocuments(cacheDir, text, parse);
      expect(parses).toBe(2);
      expect(readdirSync(cacheDir)).toEqual([]);
    }
  });
});
