/**
 * Garden's build directories: a Build's `copyFrom` (files of other Builds copied into its build
 * directory, `.tend/build/<name>`, before it builds) and the `build:` of a Deploy, Test or Run (it
 * runs in that Build's build directory). Garden's `build-dependencies` example (copied unmodified
 * into test/fixtures/garden-examples) validates, deploys into kube-sim with
 * `--kubeconfig/--context`, and its Test and Run pass; small projects of its own cover the rest.
 */
import { chmodSync, existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateCommand } from '../../../src/commands/validate.js';
import type { TendError } from '../../../src/errors.js';
import { copyGardenExample, makeProject, removeProjects, runTend } from '../../helpers/project.js';
import { allEvents, kubectlJson, startSim, type SimHandle } from './helpers.js';

let h: SimHandle;
beforeAll(async () => {
  // Garden's local-kubernetes projects name no registry: kube-sim advertises its own, as kind does.
  h = await startSim({ advertiseRegistry: true });
});
afterAll(async () => h?.stop());

afterAll(removeProjects);

const cluster = () => ['--kubeconfig', h.kubeconfig, '--context', 'kube-sim'];

interface ActionResult {
  ref: string;
  state: string;
  outputs: Record<string, string>;
  error?: { message: string };
  output?: { lines: { stream: string; text: string }[] };
}

/** `tend <verb>` in the project's directory through the CLI, with its actions. */
async function cli(root: string, verb: string, ...names: string[]): Promise<ActionResult[]> {
  const run = await runTend([verb, ...names, ...cluster(), '--json'], { cwd: root, timeoutMs: 120_000 });
  expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(0);
  return (JSON.parse(run.stdout) as { actions: ActionResult[] }).actions;
}

const states = (actions: ActionResult[]) => actions.map((a) => `${a.ref} ${a.state}`).sort();

describe("Garden's copyFrom", () => {
  it("build-dependencies: validates, both Builds get shared-config's config.json in config/, deploys, its Test and Run pass", async () => {
    const root = copyGardenExample('build-dependencies');
    const validated = await runTend(['validate'], { cwd: root });
    expect(validated.code, validated.stderr).toBe(0);
    expect(validated.stdout).toContain('configuration valid: 8 actions');
    expect(validated.stdout).toMatch(
      /build\.frontend +container +frontend\/garden\.yml:1 +build\.shared-config/,
    );

    expect(states(await cli(root, 'deploy'))).toEqual([
      'build.backend ready',
      'build.frontend ready',
      'build.shared-config ready',
      'deploy.backend ready',
      'deploy.frontend ready',
    ]);
    const sharedConfig = readFileSync(path.join(root, 'shared-config', 'config.json'), 'utf8');
    for (const build of ['frontend', 'backend']) {
      const dir = path.join(root, '.tend', 'build', build);
      // Garden's .garden/build/<name>: the Build's own files, and the copy in config/.
      expect(readFileSync(path.join(dir, 'config', 'config.json'), 'utf8')).toBe(sharedConfig);
      expect(existsSync(path.join(dir, 'Dockerfile'))).toBe(true);
    }
    expect(existsSync(path.join(root, '.tend', 'build', 'frontend', 'app.js'))).toBe(true);
    // The sources are left as they are.
    expect(existsSync(path.join(root, 'frontend', 'config'))).toBe(false);

    const tested = await cli(root, 'test');
    expect(states(tested).filter((s) => s.startsWith('test.'))).toEqual([
      'test.frontend-integ ready',
      'test.frontend-unit ready',
    ]);
    expect(states(await cli(root, 'run', 'backend'))).toContain('run.backend ready');

    // Done for their versions: cached, and the staged directories are still there for those that read them.
    expect(states(await cli(root, 'deploy'))).toEqual([
      'build.backend cached',
      'build.frontend cached',
      'build.shared-config cached',
      'deploy.backend cached',
      'deploy.frontend cached',
    ]);
    expect(existsSync(path.join(root, '.tend', 'build', 'frontend', 'config', 'config.json'))).toBe(true);
  });
});

const localProject = `apiVersion: garden.io/v2
kind: Project
name: copies
environments: [{ name: local }]
providers: [{ name: exec }]
`;

/** Garden's exec Builds copying from one another, and a Run in a Build's build directory. */
function copyingProject(): string {
  return makeProject({
    'project.garden.yml': localProject,
    'tools/garden.yml': `kind: Build
type: exec
name: tools
buildAtSource: true
# What it builds is not a source of its version (else the next command builds again).
exclude: [out/**]
spec:
  command: [sh, -c, "mkdir -p out/sub && echo generated > out/gen.txt && echo deep > out/sub/deep.txt"]
`,
    'assets/garden.yml': `kind: Build
type: exec
name: assets
`,
    'assets/a.json': '{"a":1}\n',
    'assets/b.json': '{"b":2}\n',
    'assets/notes.md': 'notes\n',
    'app/garden.yml': `kind: Build
type: exec
name: app
copyFrom:
  - build: tools
    sourcePath: out
    targetPath: .
  - build: assets
    sourcePath: "*.json"
    targetPath: data/
  - build: assets
    sourcePath: notes.md
    targetPath: docs/NOTES
  - build: assets
    sourcePath: missing.txt
spec:
  command: [sh, -c, "cat out/gen.txt data/a.json > built.txt"]
---
kind: Run
type: exec
name: check
build: app
spec:
  command: [sh, -c, 'echo "::output built=$(paste -sd+ built.txt)"; echo "::output notes=$(cat docs/NOTES)"; echo "::output dir=$(pwd)"']
`,
    'app/main.txt': 'main\n',
  });
}

function listFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => path.relative(dir, path.join(entry.parentPath, entry.name)))
    .sort();
}

describe('build: of a kubernetes Deploy', () => {
  it("reads its manifests from the Build's build directory, where the Build wrote them", async () => {
    const root = makeProject({
      'project.garden.yml': `apiVersion: garden.io/v2
kind: Project
name: generated
environments: [{ name: local }]
providers: [{ name: local-kubernetes }]
`,
      'gen/garden.yml': `kind: Build
type: exec
name: manifests
buildAtSource: true
exclude: [out/**]
spec:
  command: [sh, -c, "mkdir -p out && printf 'apiVersion: v1\\\\nkind: ConfigMap\\\\nmetadata: { name: generated }\\\\ndata: { by: build }\\\\n' > out/cm.yaml"]
`,
      'deploy/garden.yml': `kind: Deploy
type: kubernetes
name: app
build: manifests
spec:
  manifestFiles: [out/cm.yaml]
`,
    });
    expect(states(await cli(root, 'deploy'))).toEqual(['build.manifests ready', 'deploy.app ready']);
    const namespace = (await validateCommand({ root, var: [] })).data.namespace;
    const configMap = await kubectlJson<{ data: Record<string, string> }>(
      h.kubeconfig,
      '-n',
      namespace,
      'get',
      'configmap',
      'generated',
    );
    expect(configMap.data).toEqual({ by: 'build' });
  });
});

describe('build directories of exec Builds', () => {
  it("stages a Build's sources and its copies as Garden does, builds there, and a Run with build: runs there", async () => {
    const root = copyingProject();
    const validated = await runTend(['validate'], { cwd: root });
    expect(validated.code, validated.stderr).toBe(0);
    expect(validated.stdout).toMatch(/build\.app +exec +app\/garden\.yml:1 +build\.assets, build\.tools/);
    expect(validated.stdout).toMatch(/run\.check +exec +app\/garden\.yml:\d+ +build\.app/);

    const run = await runTend(['run', 'check', '--json'], { cwd: root, timeoutMs: 60_000 });
    expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(0);
    const actions = (JSON.parse(run.stdout) as { actions: ActionResult[] }).actions;
    expect(states(actions)).toEqual([
      'build.app ready',
      'build.assets ready',
      'build.tools ready',
      'run.check ready',
    ]);
    const staged = path.join(root, '.tend', 'build', 'app');
    // `out` to `.`: the directory by its name; a glob's matches by their names into data/; a file
    // to a path that is not a directory: that name; the missing file: nothing (a warning).
    expect(listFiles(staged)).toEqual([
      'built.txt',
      'data/a.json',
      'data/b.json',
      'docs/NOTES',
      'garden.yml',
      'main.txt',
      'out/gen.txt',
      'out/sub/deep.txt',
    ]);
    // As Garden does, a warning (a `log` event of the session, by the Build).
    const warnings = allEvents(root)
      .filter((e) => e.type === 'log' && (e.payload as { level: string }).level === 'warn')
      .map((e) => e.payload as { message: string; actionRef?: string });
    expect(warnings).toContainEqual(
      expect.objectContaining({
        actionRef: 'build.app',
        message:
          'build.app: copyFrom[3]: nothing at missing.txt in the build directory of build.assets; nothing copied',
      }),
    );
    const check = actions.find((a) => a.ref === 'run.check')!;
    expect(check.outputs).toMatchObject({ built: 'generated+{"a":1}', notes: 'notes', dir: staged });
    // The sources are left alone; buildAtSource built in its own directory.
    expect(existsSync(path.join(root, 'app', 'built.txt'))).toBe(false);
    expect(readFileSync(path.join(root, 'tools', 'out', 'gen.txt'), 'utf8')).toBe('generated\n');

    // The Builds are done for their versions; the Run runs again in the kept build directory.
    const again = await runTend(['run', 'check', '--json'], { cwd: root, timeoutMs: 60_000 });
    expect(again.code, again.stderr).toBe(0);
    const second = (JSON.parse(again.stdout) as { actions: ActionResult[] }).actions;
    expect(states(second)).toEqual([
      'build.app cached',
      'build.assets cached',
      'build.tools cached',
      'run.check ready',
    ]);
    expect(second.find((a) => a.ref === 'run.check')!.outputs.built).toBe('generated+{"a":1}');
  });

  it('a disabled Build that an enabled Build copies from, or a Run runs in, is kept, as Garden keeps it', async () => {
    const root = makeProject({
      'project.garden.yml': localProject,
      'garden.yml': `kind: Build
type: exec
name: base
disabled: true
---
kind: Build
type: exec
name: app
copyFrom: [{ build: base, sourcePath: base.txt }]
---
kind: Run
type: exec
name: show
build: app
spec: { command: [cat, base.txt] }
`,
      'base.txt': 'base\n',
    });
    const run = await runTend(['run', 'show', '--json'], { cwd: root, timeoutMs: 60_000 });
    expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(0);
    expect(states((JSON.parse(run.stdout) as { actions: ActionResult[] }).actions)).toEqual([
      'build.app ready',
      'build.base ready',
      'run.show ready',
    ]);
  });

  it('refuses copyFrom and build: where Garden does, at their lines', async () => {
    const root = makeProject({
      'project.garden.yml': localProject,
      'garden.yml': `kind: Build
type: exec
name: a
copyFrom:
  - { build: nope, sourcePath: x }
  - { build: a, sourcePath: x }
---
kind: Build
type: exec
name: b
copyFrom:
  - { build: a, sourcePath: ../up }
  - { build: a, sourcePath: x, targetPath: "y/*" }
  - { build: a, sourcePath: /abs }
---
kind: Build
type: exec
name: c
build: a
---
kind: Deploy
type: exec
name: d
copyFrom: [{ build: a, sourcePath: x }]
spec: { deployCommand: [echo] }
---
kind: Run
type: exec
name: r
build: missing
spec: { command: [echo] }
`,
    });
    let errors: string[] = [];
    try {
      await validateCommand({ root, var: [] });
    } catch (error) {
      const detail = (error as TendError).detail as {
        errors: { code: string; message: string; location: { line: number } }[];
      };
      errors = detail.errors.map((e) => `${e.code} ${e.location.line} ${e.message}`);
    }
    expect(errors).toEqual([
      'TEND_CONFIG_INVALID 5 unknown Build "nope" in copyFrom of build.a; build actions: build.a',
      'TEND_CONFIG_INVALID 6 build.a cannot copy from itself',
      'TEND_CONFIG_INVALID 12 copyFrom sourcePath "../up" must not leave the build directory (..)',
      'TEND_CONFIG_INVALID 13 copyFrom targetPath "y/*" must not contain wildcards',
      'TEND_CONFIG_INVALID 14 copyFrom sourcePath "/abs" must be a relative POSIX path inside the build directory',
      'TEND_CONFIG_INVALID 19 `build` applies to Deploy, Test and Run actions; a Build copies files with `copyFrom`',
      'TEND_CONFIG_INVALID 24 copyFrom applies to Build actions, not to Deploy; name the Build in `build`',
      'TEND_CONFIG_INVALID 30 unknown Build "missing" in build of run.r; build actions: build.a',
    ]);
  });
});

/**
 * No Go toolchain here: a stand-in `go` on PATH that writes the file `-o` names (with the GOOS and
 * GOARCH it was given), as `go build` would.
 */
function standInGo(): string {
  const bin = makeProject({});
  const go = path.join(bin, 'go');
  writeFileSync(
    go,
    '#!/bin/sh\nout=""\nwhile [ $# -gt 0 ]; do [ "$1" = -o ] && out="$2"; shift; done\n' +
      'mkdir -p "$(dirname "$out")" && printf "binary for %s/%s\\n" "$GOOS" "$GOARCH" > "$out"\n',
  );
  chmodSync(go, 0o755);
  return bin;
}

describe("Garden's local-exec: the exec provider's initScript, and copyFrom of a Build at its source", () => {
  it("validates as it is, builds the binary at the source, copies bin/ into the image's context, deploys, and the Run prints the initScript's log", async () => {
    const root = copyGardenExample('local-exec');
    const validated = await runTend(['validate'], { cwd: root });
    expect(validated.code, validated.stderr).toBe(0);
    expect(validated.stdout).toContain('configuration valid: 4 actions');
    const env = { PATH: `${standInGo()}${path.delimiter}${process.env.PATH}` };

    const deploy = await runTend(['deploy', ...cluster(), '--json'], { cwd: root, env, timeoutMs: 120_000 });
    expect(deploy.code, `${deploy.stdout}\n${deploy.stderr}`).toBe(0);
    expect(states((JSON.parse(deploy.stdout) as { actions: ActionResult[] }).actions)).toEqual([
      'build.backend ready',
      'build.builder ready',
      'deploy.backend ready',
    ]);
    // buildAtSource: the builder ran in backend/ with its env; the binary went to the backend
    // Build's directory as bin/ (`sourcePath: bin`, `targetPath: .`), beside its Dockerfile.
    expect(readFileSync(path.join(root, 'backend', 'bin', 'backend'), 'utf8')).toBe(
      'binary for linux/amd64\n',
    );
    expect(listFiles(path.join(root, '.tend', 'build', 'backend'))).toEqual(['Dockerfile', 'bin/backend']);

    const run = await runTend(['run', 'echo-provider-init-result', ...cluster(), '--json', '--show-output'], {
      cwd: root,
      env,
      timeoutMs: 60_000,
    });
    expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(0);
    const echo = (JSON.parse(run.stdout) as { actions: ActionResult[] }).actions.find(
      (a) => a.ref === 'run.echo-provider-init-result',
    )!;
    expect(echo.state).toBe('ready');
    expect(echo.output!.lines.map((l) => l.text)).toEqual([
      `The provider output log is: "hello ${os.userInfo().username}, this is a provider output message"`,
    ]);
  });

  it('runs the initScript once per command in the project root; its failure stops the command; validate and status run nothing', async () => {
    const root = makeProject({
      'project.garden.yml': `apiVersion: garden.io/v2
kind: Project
name: init
environments: [{ name: local }]
providers:
  - name: exec
    initScript: "echo run >> runs.txt; pwd; echo \${var.word}; [ ! -f fail ]"
variables: { word: second }
`,
      'sub/garden.yml': `kind: Run
type: exec
name: show
spec:
  command: [echo, "\${providers.exec.outputs.initScript.log}"]
---
kind: Test
type: exec
name: wrong
spec:
  command: [echo, "\${providers.kubernetes.outputs.x}"]
`,
    });
    const validated = await runTend(['validate'], { cwd: root });
    expect(validated.code, validated.stderr).toBe(0);
    expect(await runTend(['status'], { cwd: root })).toMatchObject({ code: 0 });
    expect(existsSync(path.join(root, 'runs.txt'))).toBe(false);

    const run = await runTend(['run', 'show', '--json', '--show-output'], { cwd: root, timeoutMs: 60_000 });
    expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(0);
    const show = (JSON.parse(run.stdout) as { actions: ActionResult[] }).actions[0]!;
    expect(show.output!.lines.map((l) => l.text)).toEqual([root, 'second']);
    expect(readFileSync(path.join(root, 'runs.txt'), 'utf8')).toBe('run\n');

    const wrong = await runTend(['test', 'wrong', '--json'], { cwd: root, timeoutMs: 60_000 });
    expect(wrong.code).toBe(2);
    expect((JSON.parse(wrong.stdout) as { actions: ActionResult[] }).actions[0]!.error?.message).toContain(
      'no provider kubernetes for "providers.kubernetes.outputs.x"; providers: exec',
    );

    writeFileSync(path.join(root, 'fail'), '');
    const failed = await runTend(['run', 'show'], { cwd: root, timeoutMs: 60_000 });
    expect(failed.code).not.toBe(0);
    // What the script printed says why it failed, as Garden shows it.
    expect(failed.stderr).toContain(
      `the exec provider's initScript exited with code 1; its output (the last lines):\n  ${root}\n  second`,
    );
    expect(readFileSync(path.join(root, 'runs.txt'), 'utf8')).toBe('run\nrun\nrun\n');
  });
});

describe("Garden's localVolumes", () => {
  it('mounted on every deploy in Garden: refused at its line when it would mount, a note when disabled', async () => {
    const files = (enabled: boolean) => ({
      'project.garden.yml': `apiVersion: garden.io/v2
kind: Project
name: volumes
environments: [{ name: local }]
providers: [{ name: local-kubernetes }]
`,
      'web/garden.yml': `kind: Deploy
type: kubernetes
name: web
spec:
  manifestFiles: [web.yaml]
  localVolumes:
    enabled: ${enabled}
    volumes:
      - { name: src, sourcePath: ., containerPath: /app }
`,
      'web/web.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: { name: web }\n',
    });
    const refused = await runTend(['validate'], { cwd: makeProject(files(true)) });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(
      "web/garden.yml:6:3: localVolumes (Garden's hostPath mounts of local directories, made on every deploy) are not mounted by tend",
    );
    const ignored = await runTend(['validate'], { cwd: makeProject(files(false)) });
    expect(ignored.code, ignored.stderr).toBe(0);
    expect(ignored.stdout).toContain(
      'note: web/garden.yml:6:3: localVolumes: disabled or without volumes, nothing to mount; ignored',
    );
  });
});
