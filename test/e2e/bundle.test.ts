/**
 * The CLI as `bin/tend.js` runs it: the bundle of `npm run build` (scripts/bundle.ts). Commands
 * load only what they use — a build of an exec project reads no package from node_modules —, what
 * the bundle imports at run time goes through src/import-module.ts, and a
 * plugin module that imports TendError from the library (dist/src/index.js, another copy of the
 * class than the bundle's) still has its errors reported with their code. The bundle is ASCII, and
 * a cached build loads no HTTP, TLS or child_process module.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { SourceMap, type SourceMapPayload } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import ts from 'typescript';
import { afterAll, describe, expect, it } from 'vitest';
import { makeProject, removeProjects, repoRoot, runTend } from '../helpers/project.js';

afterAll(() => removeProjects());

/**
 * Runs tend with a preload that writes, as it exits, the CommonJS files the process loaded and
 * the Node built-in modules it loaded after the preload.
 */
async function loadedFiles(
  args: string[],
  cwd: string,
): Promise<{ code: number | null; files: string[]; builtins: string[] }> {
  const dir = makeProject({});
  const list = path.join(dir, 'loaded.json');
  const preload = path.join(dir, 'preload.cjs');
  writeFileSync(
    preload,
    `const before = new Set(process.moduleLoadList);\n` +
      `process.on('exit', () => require('node:fs').writeFileSync(${JSON.stringify(list)}, JSON.stringify({ ` +
      `files: Object.keys(require.cache), ` +
      `builtins: process.moduleLoadList.filter((m) => !before.has(m) && m.startsWith('NativeModule ')).map((m) => m.slice(13)) })));\n`,
  );
  const run = await runTend(args, { cwd, env: { NODE_OPTIONS: `--require ${preload}` } });
  return {
    code: run.code,
    ...(JSON.parse(readFileSync(list, 'utf8')) as { files: string[]; builtins: string[] }),
  };
}

const execProject = {
  'tend.yml':
    'kind: Project\nname: p\ndefaultEnvironment: dev\nenvironments: [{ name: dev, defaultNamespace: p-dev }]\n' +
    'providers: [{ name: exec }]\n---\nkind: Build\ntype: exec\nname: one\nspec: { command: [echo, one] }\n',
};

describe('the bundled CLI', () => {
  it('builds an exec project without loading any package from node_modules', async () => {
    const root = makeProject(execProject);
    const first = await loadedFiles(['build'], root);
    expect(first.code).toBe(0);
    // The preload itself is the one CommonJS file; the server, the Kubernetes client, the
    // databases and the bundled YAML parser and glob are not loaded from node_modules.
    expect(first.files.filter((file) => file.includes(`${path.sep}node_modules${path.sep}`))).toEqual([]);
    const version = await loadedFiles(['--version'], root);
    expect(version.code).toBe(0);
    expect(version.files.filter((file) => file.includes(`${path.sep}node_modules${path.sep}`))).toEqual([]);
  });

  it('loads no HTTP, TLS, child_process or ES module loader for a build that starts no process', async () => {
    const root = makeProject(execProject);
    const first = await loadedFiles(['build'], root);
    expect(first.code).toBe(0);
    // The first run starts the command: child_process is loaded then.
    expect(first.builtins).toContain('child_process');
    const cached = await loadedFiles(['build'], root);
    expect(cached.code).toBe(0);
    for (const module of ['http', 'https', 'tls', 'child_process', 'dgram']) {
      expect(cached.builtins).not.toContain(module);
    }
    // bin/tend.js and the launcher are CommonJS: Node's ES module loader (and node:fs/promises,
    // which it reads files with) stays unloaded.
    expect(cached.builtins).not.toContain('internal/modules/esm/translators');
    expect(cached.builtins).not.toContain('internal/fs/promises');
  });

  it('is ASCII only', () => {
    const bundle = readFileSync(path.join(repoRoot, 'dist', 'cli', 'tend.cjs'), 'utf8');
    // A one-byte string for Node to read; scripts/bundle.ts escapes what is not ASCII.
    expect(bundle.match(/[^\t\n\r -~]/g) ?? []).toEqual([]);
  });

  it('imports at run time only through src/import-module.ts: code run from the code cache has no import()', () => {
    const file = path.join(repoRoot, 'dist', 'cli', 'tend.cjs');
    const bundle = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
    // The bundle's import() calls, as parsed: a worker's source text (a template literal, run in
    // a thread of its own) is a string, not the bundle's code.
    const calls: ts.Node[] = [];
    const visit = (node: ts.Node): void => {
      if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) calls.push(node);
      ts.forEachChild(node, visit);
    };
    visit(bundle);
    // The one left is importModule's own, used only when the launcher lends none: where it came
    // from is what the bundle's source map says (the bundle is minified).
    const map = new SourceMap(JSON.parse(readFileSync(`${file}.map`, 'utf8')) as SourceMapPayload);
    const sources = calls.map((call) => {
      const at = bundle.getLineAndCharacterOfPosition(call.getStart(bundle));
      const entry = map.findEntry(at.line, at.character);
      return 'originalSource' in entry ? path.basename(entry.originalSource) : undefined;
    });
    expect(sources).toEqual(['import-module.ts']);
  });

  it("keeps the code of a plugin's TendError imported from the library", async () => {
    const library = pathToFileURL(path.join(repoRoot, 'dist', 'src', 'index.js')).href;
    const typebox = pathToFileURL(path.join(repoRoot, 'node_modules', 'typebox', 'build', 'index.mjs')).href;
    const root = makeProject({
      'package.json': '{ "type": "module" }',
      'tend.yml':
        'kind: Project\nname: p\ndefaultEnvironment: dev\nenvironments: [{ name: dev, defaultNamespace: p-dev }]\n' +
        'providers: [{ name: failing, plugin: ./failing.js }]\n',
      'failing.js': `import { TendError } from '${library}';
import { Type } from '${typebox}';
export default {
  name: 'failing',
  description: 'a provider whose environment cannot be prepared',
  configSchema: Type.Object({}),
  emits: ['log'],
  provider: {
    init: async () => ({}),
    getEnvironmentStatus: async () => ({ ready: false }),
    prepareEnvironment: async () => {
      throw new TendError('TEND_EXEC_FAILED', 'the failing plugin refuses');
    },
    cleanupEnvironment: async () => ({ deleted: false, message: '' }),
  },
  actionTypes: [],
};
`,
    });
    const run = await runTend(['build', '--json'], { cwd: root });
    expect(run.stdout).toContain('the failing plugin refuses');
    expect(JSON.parse(run.stdout)).toMatchObject({ error: { code: 'TEND_EXEC_FAILED' } });
  });
});
