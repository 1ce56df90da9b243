/**
 * Outputs an exec command writes to files, as Garden 0.14.8 on reads them: `.outputs.json` at
 * $GARDEN_ACTION_JSON_OUTPUTS_PATH and a file per output in $GARDEN_ACTION_OUTPUTS_PATH; what
 * Garden skips is skipped with a warning, what it refuses fails the action; the directory is gone
 * afterwards.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { outputFiles } from '../../src/plugins/exec/output-files.js';
import type { PluginLog } from '../../src/plugin/types.js';
import { makeProject, removeProjects, runTend } from '../helpers/project.js';

afterEach(removeProjects);

function warnings(): { log: PluginLog; said: string[] } {
  const said: string[] = [];
  const log: PluginLog = { debug() {}, info() {}, warn: (m) => said.push(m), error() {}, output() {} };
  return { log, said };
}

describe('exec outputs written to files', () => {
  it("a Build's JSON and file outputs are read by the actions after it; the directory is removed", async () => {
    const root = makeProject({
      'project.garden.yml': `apiVersion: garden.io/v2
kind: Project
name: exec-outputs
environments: [{ name: local }]
providers: [{ name: exec }]
---
kind: Build
type: exec
name: get-sha
spec:
  shell: true
  command:
    - echo '{"image":"ghcr.io/x/app","tag":"sha-123","port":8080}' > "$GARDEN_ACTION_JSON_OUTPUTS_PATH" && printf 'main\\n' > "$GARDEN_ACTION_OUTPUTS_PATH/branch" && echo "$GARDEN_ACTION_OUTPUTS_PATH" > where.txt
---
kind: Run
type: exec
name: show
dependencies: [build.get-sha]
spec:
  command: [echo, "\${actions.build.get-sha.outputs.image}:\${actions.build.get-sha.outputs.tag} \${actions.build.get-sha.outputs.branch} \${actions.build.get-sha.outputs.port}"]
`,
    });
    const run = await runTend(['run', 'show', '--show-output'], { cwd: root, timeoutMs: 60_000 });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain('ghcr.io/x/app:sha-123 main 8080');
    const dir = readFileSync(path.join(root, 'where.txt'), 'utf8').trim();
    expect(dir).not.toBe('');
    expect(existsSync(dir)).toBe(false);
  });

  it('skips, with a warning, what Garden skips: a name that is not one, log/stdout/stderr, a structured value, a directory', () => {
    const files = outputFiles();
    try {
      const dir = files.env.GARDEN_ACTION_OUTPUTS_PATH!;
      writeFileSync(
        files.env.GARDEN_ACTION_JSON_OUTPUTS_PATH!,
        JSON.stringify({
          ok: 'yes',
          flag: true,
          none: null,
          '1bad': 'x',
          log: 'mine',
          nested: { a: 1 },
          list: [1],
        }),
      );
      writeFileSync(path.join(dir, 'stdout'), 'mine');
      writeFileSync(path.join(dir, 'with space'), 'x');
      writeFileSync(path.join(dir, '.hidden'), 'x');
      writeFileSync(path.join(dir, 'text'), 'line one\nline two\n\n');
      mkdirSync(path.join(dir, 'sub'));
      const { log, said } = warnings();
      expect(files.read(log, 'build.x')).toEqual({
        ok: 'yes',
        flag: 'true',
        none: 'null',
        text: 'line one\nline two\n',
      });
      expect(said.sort()).toEqual(
        [
          'build.x: key "1bad" of .outputs.json is not an output name, skipped',
          'build.x: key "log" of .outputs.json is an output of its own, skipped',
          'build.x: key "nested" of .outputs.json is not a single value, skipped',
          'build.x: key "list" of .outputs.json is not a single value, skipped',
          'build.x: output file "stdout" is an output of its own, skipped',
          'build.x: output file "with space" is not an output name, skipped',
          'build.x: output file "sub" is a directory, skipped',
        ].sort(),
      );
    } finally {
      files.remove();
    }
  });

  it('hostile JSON: a NUL or a lone surrogate in a key is quoted in its warning; 10,000-deep values are skipped; 1e400 is its text', () => {
    const files = outputFiles();
    try {
      const deep = `${'['.repeat(10_000)}${']'.repeat(10_000)}`;
      writeFileSync(
        files.env.GARDEN_ACTION_JSON_OUTPUTS_PATH!,
        `{"a\\u0000b": "x", "c\\ud800": "y", "deep": ${deep}, "big": 1e400, "ok": "\\ud800"}`,
      );
      const { log, said } = warnings();
      expect(files.read(log, 'run.y')).toEqual({ big: 'Infinity', ok: '\ud800' });
      expect(said).toEqual([
        'run.y: key "a\\u0000b" of .outputs.json is not an output name, skipped',
        'run.y: key "c\\ud800" of .outputs.json is not an output name, skipped',
        'run.y: key "deep" of .outputs.json is not a single value, skipped',
      ]);
    } finally {
      files.remove();
    }
  });

  it('JSON that is not an object of outputs, or a file over 1 MiB, fails the action saying which', () => {
    for (const text of ['', '{', '[1]', '"x"', 'null', '{"a":1}x']) {
      const files = outputFiles();
      try {
        writeFileSync(files.env.GARDEN_ACTION_JSON_OUTPUTS_PATH!, text);
        expect(() => files.read(warnings().log, 'run.y'), text).toThrow(
          'run.y: $GARDEN_ACTION_JSON_OUTPUTS_PATH (.outputs.json) holds no JSON object of outputs',
        );
      } finally {
        files.remove();
      }
    }
    const files = outputFiles();
    try {
      writeFileSync(
        path.join(files.env.GARDEN_ACTION_OUTPUTS_PATH!, 'big'),
        Buffer.alloc(1024 * 1024 + 1, 97),
      );
      expect(() => files.read(warnings().log, 'run.y')).toThrow('run.y: the output file big is over 1 MiB');
    } finally {
      files.remove();
    }
  });

  it('a failing command fails with its exit code, whatever it left in the files', async () => {
    const root = makeProject({
      'tend.yml': `kind: Project
name: outfail
defaultEnvironment: dev
environments: [{ name: dev, defaultNamespace: outfail-dev }]
providers: [{ name: exec }]
---
kind: Build
type: exec
name: b
spec:
  command: [sh, -c, 'echo "{" > "$GARDEN_ACTION_JSON_OUTPUTS_PATH"; exit 7']
`,
    });
    const build = await runTend(['build'], { cwd: root, timeoutMs: 60_000 });
    expect(build.code).not.toBe(0);
    expect(build.stderr + build.stdout).toContain('build.b exited with code 7');
    expect(build.stderr + build.stdout).not.toContain('.outputs.json');
  });
});
