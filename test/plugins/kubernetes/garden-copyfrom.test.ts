/**
 * Garden's build directories: a Build's `copyFrom` (files of other Builds copied into its build
 * directory, `.tend/build/<name>`, before it builds) and the `build:` of a Deploy, Test or Run (it
 * runs in that Build's build directory). Garden's `build-dependencies` example (copied unmodified
 * into test/fixtures/garden-examples) validates, deploys into kube-sim with
 * `--kubeconfig/--context`, and its Test and Run pass; small projects of its own cover the rest.
 */
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repoRoot, runTend } from '../../helpers/project.js';
import { startSim, type SimHandle } from './helpers.js';

let h: SimHandle;
beforeAll(async () => {
  // Garden's local-kubernetes projects name no registry: kube-sim advertises its own, as kind does.
  h = await startSim({ advertiseRegistry: true });
});
afterAll(async () => h?.stop());

const copies: string[] = [];
afterAll(() => {
  for (const dir of copies.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function copyGardenExample(name: string): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), `tend-garden-${name}-`));
  copies.push(dir);
  cpSync(path.join(repoRoot, 'test', 'fixtures', 'garden-examples', name), dir, { recursive: true });
  return dir;
}

const cluster = () => ['--kubeconfig', h.kubeconfig, '--context', 'kube-sim'];

interface ActionResult {
  ref: string;
  state: string;
  error?: { message: string };
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
