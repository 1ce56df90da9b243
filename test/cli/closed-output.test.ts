/**
 * A closed pipe ends tend as it ends any program writing to one (`tend validate --json | head
 * -1`): killed by SIGPIPE — 141 in a shell —, without an error or a stack, whatever the command
 * and whichever stream was closed.
 */
import { spawn } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { makeProject, removeProjects, repoRoot, tendBin } from '../helpers/project.js';

afterAll(removeProjects);

const project = () =>
  makeProject({
    'tend.yml': 'kind: Project\nname: piped\nenvironments: [{ name: dev }]\nproviders: [{ name: exec }]\n',
    'app.tend.yml': 'kind: Build\ntype: exec\nname: app\nspec: { command: [echo, hi] }\n',
  });

/** Runs the CLI with `closed`'s read end closed before tend writes anything. */
function runWithClosed(
  closed: 'stdout' | 'stderr',
  args: string[],
  cwd: string,
): Promise<{ code: number | null; signal: NodeJS.Signals | null; other: string }> {
  const child = spawn(process.execPath, [tendBin, ...args], {
    cwd,
    env: { ...process.env, CI: 'true' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // Closed at once: the process has not even started, so its first write finds no reader.
  child[closed].destroy();
  let other = '';
  child[closed === 'stdout' ? 'stderr' : 'stdout'].on('data', (d) => (other += d));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, other }));
  });
}

describe('a closed output pipe', () => {
  it.each([
    ['validate --json', ['validate', '--json']],
    ['schema', ['schema']],
    ['--help', ['--help']],
    ['events (nothing recorded: an error on stdout with --json)', ['events', '--json']],
  ])('stdout closed: tend %s ends by SIGPIPE, nothing on stderr', async (_name, args) => {
    const out = await runWithClosed('stdout', args, project());
    expect(out.other).toBe('');
    expect(out.signal).toBe('SIGPIPE');
  });

  it('stderr closed: an error message finds no reader, tend ends by SIGPIPE, nothing on stdout', async () => {
    const out = await runWithClosed('stderr', ['validate', '--root', '/nonexistent/x'], repoRoot);
    expect(out.other).toBe('');
    expect(out.signal).toBe('SIGPIPE');
  });

  it('an open pipe is unaffected: the same command prints and exits 0', async () => {
    const child = spawn(process.execPath, [tendBin, 'validate', '--json'], {
      cwd: project(),
      env: { ...process.env, CI: 'true' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    child.stdout.on('data', (d) => (stdout += d));
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect(code).toBe(0);
    expect(JSON.parse(stdout)).toMatchObject({ project: 'piped' });
  });
});
