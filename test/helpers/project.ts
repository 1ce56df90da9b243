/** Temporary projects on disk, and running the real `tend` CLI against them. */
import { spawn } from 'node:child_process';
import net from 'node:net';
import { mkdtempSync, mkdirSync, readdirSync, rmSync, writeFileSync, cpSync, symlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { isAlive, listDeployStates } from '../../src/plugins/exec/deploy.js';
import { killGroup } from '../../src/plugins/exec/spawner.js';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const tendBin = path.join(repoRoot, 'bin', 'tend.js');

const created: string[] = [];

/** Writes the files (path → content) into a fresh temporary directory and returns it. */
export function makeProject(files: Record<string, string>): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tend-test-'));
  created.push(dir);
  for (const [file, content] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    writeFileSync(path.join(dir, file), content);
  }
  return dir;
}

/** A copy of examples/<name>; with `dependencies`, as a user has it: its node_modules next to it. */
export function copyExample(name: string, options: { dependencies?: boolean } = {}): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), `tend-${name}-`));
  created.push(dir);
  cpSync(path.join(repoRoot, 'examples', name), dir, {
    recursive: true,
    filter: (src) => !src.includes(`${path.sep}.tend`) && !src.includes(`${path.sep}dist`),
  });
  if (options.dependencies) {
    symlinkSync(path.join(repoRoot, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
  }
  return dir;
}

/**
 * A copy of a Garden project of test/fixtures: `garden-examples/<name>` (Garden's examples) or
 * `garden-e2e/<name>` (its end-to-end test projects). tend keeps its state, .tend/, in the project.
 */
export function copyGardenExample(
  name: string,
  set: 'garden-examples' | 'garden-e2e' = 'garden-examples',
): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), `tend-garden-${name}-`));
  created.push(dir);
  cpSync(path.join(repoRoot, 'test', 'fixtures', set, name), dir, { recursive: true });
  return dir;
}

export function removeProjects(): void {
  for (const dir of created.splice(0)) {
    stopPersistentDeploys(dir);
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Kills the persistent exec deploys a test left running in a project's environments (a `sleep
 * 300` outlives a fast run, and the run fails for what it left).
 */
function stopPersistentDeploys(dir: string): void {
  const envs = path.join(dir, '.tend', 'envs');
  let names: string[];
  try {
    names = readdirSync(envs);
  } catch {
    return;
  }
  for (const name of names) {
    for (const state of listDeployStates(path.join(envs, name))) {
      if (isAlive(state)) killGroup(state.pid, 'SIGKILL');
    }
  }
}

export interface TendRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export function runTend(
  args: string[],
  options: { cwd?: string; env?: Record<string, string>; timeoutMs?: number } = {},
): Promise<TendRun> {
  return startTend(args, options).exited;
}

/** Polls until the condition holds or the deadline passes (for waiting on real processes). */
export async function waitFor<T>(
  condition: () => T | undefined | false | Promise<T | undefined | false>,
  /** What is waited for; a function says it on a timeout, with what was seen instead. */
  what: string | (() => string),
  timeoutMs = 10_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await condition();
    if (value) return value;
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${typeof what === 'function' ? what() : what}`);
    }
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** A TCP port that was free a moment ago on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** A `tend` process left running: its output so far, waiting for a line, signals, its end. */
export interface RunningTend {
  pid: number;
  stdout(): string;
  stderr(): string;
  /** Resolves with the output (stdout and stderr) once `pattern` matches it. */
  waitForOutput(pattern: RegExp, what: string, timeoutMs?: number): Promise<string>;
  signal(sig: NodeJS.Signals): void;
  exited: Promise<TendRun>;
}

export function startTend(
  args: string[],
  options: { cwd?: string; env?: Record<string, string>; timeoutMs?: number; bin?: string } = {},
): RunningTend {
  const child = spawn(process.execPath, [options.bin ?? tendBin, ...args], {
    cwd: options.cwd ?? repoRoot,
    env: { ...process.env, CI: 'true', ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 60_000);
  const exited = new Promise<TendRun>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
  let done = false;
  exited.then(
    () => (done = true),
    () => (done = true),
  );
  return {
    pid: child.pid!,
    stdout: () => stdout,
    stderr: () => stderr,
    waitForOutput: (pattern, what, timeoutMs = 30_000) =>
      waitFor(
        () => {
          if (pattern.test(stdout + stderr)) return stdout + stderr;
          if (done) throw new Error(`tend exited before ${what}:\n${stdout}\n${stderr}`);
          return undefined;
        },
        what,
        timeoutMs,
      ),
    signal: (sig) => child.kill(sig),
    exited,
  };
}
