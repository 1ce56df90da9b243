/**
 * Persistent exec deploys: a background process per deploy, with its pid, version and log file
 * under `.tend/envs/<namespace>/deploys/`. A deploy is `ready` only while that very process
 * (pid and start time) lives with that version.
 */
import { spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { TendError } from '../../errors.js';
import { listNamesWithSuffix, writeFileAtomic } from '../../state/files.js';
import { killGroup, runCommand } from './process.js';

export interface DeployState {
  name: string;
  pid: number;
  /** Kernel start time of the process (from /proc), to tell a reused pid apart. */
  startTime?: string;
  version: string;
  command: string[];
  logFile: string;
  startedAt: string;
  outputs: Record<string, string>;
  stopGracePeriodMs: number;
  /** Where and with which environment it was started: what resume starts it with again. */
  cwd?: string;
  env?: Record<string, string>;
  /** Stopped by a pause (docs/cleanup.md#pause-and-resume): the state is kept so resume can start it again. */
  pausedAt?: string;
}

export interface Readiness {
  url?: string;
  command?: string[];
  timeoutMs: number;
}

const pollMs = 100;

function deploysDir(envDir: string): string {
  return path.join(envDir, 'deploys');
}

function stateFile(envDir: string, name: string): string {
  return path.join(deploysDir(envDir), `${name}.json`);
}

function processStartTime(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may contain spaces) start at ") "; starttime is field 22.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

export function isAlive(state: Pick<DeployState, 'pid' | 'startTime'>): boolean {
  try {
    process.kill(state.pid, 0);
  } catch {
    return false;
  }
  const now = processStartTime(state.pid);
  if (state.startTime && now && now !== state.startTime) return false;
  // A zombie (exited, not yet reaped) is not alive.
  try {
    const stat = readFileSync(`/proc/${state.pid}/stat`, 'utf8');
    if (stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z')) return false;
  } catch {
    // no /proc: trust kill(0)
  }
  return true;
}

export function readDeployState(envDir: string, name: string): DeployState | undefined {
  try {
    return JSON.parse(readFileSync(stateFile(envDir, name), 'utf8')) as DeployState;
  } catch {
    return undefined;
  }
}

export function listDeployStates(envDir: string): DeployState[] {
  return listNamesWithSuffix(deploysDir(envDir), '.json').flatMap((name) => {
    const state = readDeployState(envDir, name);
    return state ? [state] : [];
  });
}

function logTail(file: string, lines = 20): string {
  try {
    return readFileSync(file, 'utf8')
      .split('\n')
      .slice(-lines - 1)
      .join('\n')
      .trim();
  } catch {
    return '';
  }
}

export async function startPersistent(options: {
  envDir: string;
  name: string;
  version: string;
  command: string[];
  cwd: string;
  env: Record<string, string>;
  readiness?: Readiness;
  outputs: Record<string, string>;
  stopGracePeriodMs: number;
  signal: AbortSignal;
}): Promise<DeployState> {
  const dir = deploysDir(options.envDir);
  mkdirSync(dir, { recursive: true });
  const logFile = path.join(dir, `${options.name}.log`);
  const fd = openSync(logFile, 'a');
  const [file, ...args] = options.command;
  let child;
  try {
    child = spawn(file!, args, {
      cwd: options.cwd,
      env: { ...process.env, ...options.env },
      stdio: ['ignore', fd, fd],
      detached: true,
    });
  } finally {
    closeSync(fd);
  }
  const spawnError = await new Promise<Error | undefined>((resolve) => {
    child.once('error', resolve);
    child.once('spawn', () => resolve(undefined));
  });
  if (spawnError || !child.pid) {
    throw new TendError('TEND_EXEC_FAILED', `could not start ${file}: ${spawnError?.message ?? 'no pid'}`);
  }
  child.unref();
  const state: DeployState = {
    name: options.name,
    pid: child.pid,
    startTime: processStartTime(child.pid),
    version: options.version,
    command: options.command,
    logFile,
    startedAt: new Date().toISOString(),
    outputs: options.outputs,
    stopGracePeriodMs: options.stopGracePeriodMs,
    cwd: options.cwd,
    env: options.env,
  };
  // Recorded before waiting, so a crash or Ctrl-C here still leaves a process tend can stop.
  writeFileAtomic(stateFile(options.envDir, options.name), JSON.stringify(state, null, 2));
  try {
    await waitReady(state, options.readiness, options.cwd, options.signal);
  } catch (error) {
    await stopPersistent(options.envDir, state);
    throw error;
  }
  return state;
}

async function waitReady(
  state: DeployState,
  readiness: Readiness | undefined,
  cwd: string,
  signal: AbortSignal,
): Promise<void> {
  if (!readiness?.url && !readiness?.command) return;
  const deadline = Date.now() + readiness.timeoutMs;
  const quietLog = { debug() {}, info() {}, warn() {}, error() {}, output() {} };
  for (;;) {
    if (signal.aborted)
      throw new TendError('TEND_INTERRUPTED', `${state.name}: interrupted while waiting to be ready`);
    if (!isAlive(state)) {
      throw new TendError('TEND_EXEC_FAILED', `${state.name}: the process exited before it was ready`, {
        detail: { log: logTail(state.logFile) },
      });
    }
    if (readiness.url) {
      try {
        const response = await fetch(readiness.url, { signal: AbortSignal.timeout(1000) });
        await response.body?.cancel();
        if (response.ok) return;
      } catch {
        // not listening yet
      }
    } else if (readiness.command) {
      const result = await runCommand({ command: readiness.command, cwd, env: {} }, quietLog, signal).catch(
        () => undefined,
      );
      if (result?.exitCode === 0) return;
    }
    if (Date.now() > deadline) {
      throw new TendError(
        'TEND_EXEC_TIMEOUT',
        `${state.name}: not ready after ${readiness.timeoutMs} ms (${readiness.url ?? readiness.command?.join(' ')})`,
        { detail: { log: logTail(state.logFile) } },
      );
    }
    await delay(pollMs);
  }
}

/** SIGTERM to the process group, SIGKILL after the grace period; then the state is removed. */
export async function stopPersistent(envDir: string, state: DeployState): Promise<void> {
  await stopProcess(state);
  rmSync(stateFile(envDir, state.name), { force: true });
}

/**
 * Pause: stops the process like stopPersistent but keeps its state (command, directory,
 * environment, outputs, log), marked paused. Returns false when it was already paused.
 */
export async function pausePersistent(envDir: string, state: DeployState): Promise<boolean> {
  if (state.pausedAt) return false;
  await stopProcess(state);
  const paused: DeployState = { ...state, pausedAt: new Date().toISOString() };
  writeFileAtomic(stateFile(envDir, state.name), JSON.stringify(paused, null, 2));
  return true;
}

/** Resume: starts a paused process again exactly as it was started (same command, directory, environment). */
export async function resumePersistent(
  envDir: string,
  state: DeployState,
  signal: AbortSignal,
): Promise<DeployState> {
  return startPersistent({
    envDir,
    name: state.name,
    version: state.version,
    command: state.command,
    cwd: state.cwd ?? process.cwd(),
    env: state.env ?? {},
    outputs: state.outputs,
    stopGracePeriodMs: state.stopGracePeriodMs,
    signal,
  });
}

async function stopProcess(state: DeployState): Promise<void> {
  if (!state.pausedAt && isAlive(state)) {
    killGroup(state.pid, 'SIGTERM');
    const deadline = Date.now() + state.stopGracePeriodMs;
    while (isAlive(state) && Date.now() < deadline) await delay(pollMs / 2);
    if (isAlive(state)) {
      killGroup(state.pid, 'SIGKILL');
      while (isAlive(state)) await delay(10);
    }
  }
}
