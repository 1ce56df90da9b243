/**
 * Persistent exec deploys: a background process per deploy, with its pid, version and log file
 * under `.tend/envs/<namespace>/deploys/`. A deploy is `ready` only once its readiness check
 * passed for the process tend started, and only while that very process (pid and start time)
 * lives with that version. A readiness URL on this machine answered by another process (the
 * port was taken before it started: another environment's server) does not count.
 */
import type * as childProcesses from 'node:child_process';
import { closeSync, mkdirSync, openSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { builtinModule } from '../../builtin-module.js';
import { TendError } from '../../errors.js';
import { listNamesWithSuffix, writeFileAtomic } from '../../state/files.js';
import { runCommand, trackGroup } from './process.js';
import { killGroup } from './spawner.js';

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
  /** When its readiness check passed; absent while it is starting (or if it never got there). */
  readyAt?: string;
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

/** Where a deploy's process writes its output (kept after it stopped, for `tend status` and people). */
export function deployLogFile(envDir: string, name: string): string {
  return path.join(deploysDir(envDir), `${name}.log`);
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

/** The fields of /proc/<pid>/stat after the command name (which may contain spaces and parentheses). */
function procStat(pid: number): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/**
 * What became of the process a deploy started: `alive`, `exited` (or a zombie), or `reused` (its
 * pid now belongs to another process: the kernel start time differs).
 */
function processState(state: Pick<DeployState, 'pid' | 'startTime'>): 'alive' | 'exited' | 'reused' {
  try {
    process.kill(state.pid, 0);
  } catch {
    return 'exited';
  }
  const now = processStartTime(state.pid);
  if (state.startTime && now && now !== state.startTime) return 'reused';
  // A zombie (exited, not yet reaped) is not alive; without /proc, trust kill(0).
  if (procStat(state.pid)?.[0] === 'Z') return 'exited';
  return 'alive';
}

export function isAlive(state: Pick<DeployState, 'pid' | 'startTime'>): boolean {
  return processState(state) === 'alive';
}

/** Why a recorded deploy is not ready for `version` (for `tend status`), or undefined when it is. */
export function notReadyReason(state: DeployState | undefined, version: string): string | undefined {
  if (!state) return 'not deployed: no process recorded';
  const what = processState(state);
  if (what === 'exited')
    return `its process (pid ${state.pid}) is not running any more: it exited or was killed`;
  if (what === 'reused') return `its process (pid ${state.pid}) is gone: that pid is now another process`;
  if (!state.readyAt) return `its process (pid ${state.pid}) never passed its readiness check`;
  if (state.version !== version)
    return `running version ${state.version}; the configuration is now ${version}`;
  return undefined;
}

const loopbackHosts = new Set(['localhost', '0.0.0.0', '[::1]', '[::]']);

/** The TCP port of a readiness URL on this machine (loopback), or undefined for another host. */
function localPort(url: string): number | undefined {
  const parsed = new URL(url);
  if (!loopbackHosts.has(parsed.hostname) && !/^127\./.test(parsed.hostname)) return undefined;
  return Number(parsed.port || (parsed.protocol === 'https:' ? 443 : 80));
}

/** Inodes of the sockets listening on TCP `port` (IPv4 and IPv6), from /proc; undefined without /proc. */
function listeningSockets(port: number): Set<string> | undefined {
  const inodes = new Set<string>();
  let readable = false;
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(table, 'utf8');
      readable = true;
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
      const fields = line.trim().split(/\s+/);
      if (fields.length < 10 || fields[3] !== '0A') continue; // 0A: LISTEN
      if (parseInt(fields[1]!.split(':').pop()!, 16) === port) inodes.add(fields[9]!);
    }
  }
  return readable ? inodes : undefined;
}

/** Inodes of the sockets listening on a readiness URL's port, when it is on this machine and /proc tells. */
function portListeners(url: string): Set<string> | undefined {
  const port = localPort(url);
  return port === undefined ? undefined : listeningSockets(port);
}

/** Pids whose open files include one of the sockets, with their process group (those tend can read). */
function socketHolders(sockets: ReadonlySet<string>): { pid: number; group: string | undefined }[] {
  const holders: { pid: number; group: string | undefined }[] = [];
  if (sockets.size === 0) return holders;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue; // gone, or another user's
    }
    const holds = fds.some((fd) => {
      try {
        const link = readlinkSync(`/proc/${pid}/fd/${fd}`);
        return link.startsWith('socket:[') && sockets.has(link.slice(8, -1));
      } catch {
        return false;
      }
    });
    if (holds) holders.push({ pid, group: procStat(pid)?.[2] }); // field 5: the process group
  }
  return holders;
}

/**
 * Whether a readiness answer came from someone else: the port was already taken before the
 * deploy's process started (`takenBefore`), and no process of its group listens on it now. A
 * listener that appeared after the start is taken for the deploy's own (it may run outside the
 * group, as a container runtime's port forwarder does). Returns the other listener's pid when
 * tend can see it (`null` when it belongs to another user), undefined when the answer counts.
 */
function answeredByAnother(
  group: number,
  url: string,
  takenBefore: ReadonlySet<string> | undefined,
): number | null | undefined {
  if (!takenBefore || takenBefore.size === 0) return undefined;
  const now = portListeners(url) ?? new Set<string>();
  const holders = socketHolders(new Set([...now, ...takenBefore]));
  if (holders.some((h) => h.group === String(group))) return undefined;
  return holders.find((h) => h.group !== String(group))?.pid ?? null;
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
  const logFile = deployLogFile(options.envDir, options.name);
  // Who listens on the readiness URL's port before the process starts: an answer from them is not its own.
  const takenBefore = options.readiness?.url ? portListeners(options.readiness.url) : undefined;
  const fd = openSync(logFile, 'a');
  const [file, ...args] = options.command;
  let child;
  try {
    child = builtinModule<typeof childProcesses>('node:child_process').spawn(file!, args, {
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
  // Until it is ready, the process belongs to this command: if tend exits (a second Ctrl-C), it goes too.
  const untrack = trackGroup(child.pid);
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
  // Recorded before waiting (without readyAt), so a crash or Ctrl-C here still leaves a process
  // tend can stop, and that no status takes for ready.
  writeFileAtomic(stateFile(options.envDir, options.name), JSON.stringify(state, null, 2));
  try {
    await waitReady(state, options.readiness, options.cwd, options.signal, takenBefore);
  } catch (error) {
    await stopPersistent(options.envDir, state);
    throw error;
  } finally {
    untrack();
  }
  state.readyAt = new Date().toISOString();
  writeFileAtomic(stateFile(options.envDir, options.name), JSON.stringify(state, null, 2));
  return state;
}

function exitedBeforeReady(state: DeployState): TendError {
  return new TendError(
    'TEND_EXEC_FAILED',
    `${state.name}: the process exited before it was ready (log ${state.logFile})`,
    { detail: { log: logTail(state.logFile), logFile: state.logFile } },
  );
}

async function waitReady(
  state: DeployState,
  readiness: Readiness | undefined,
  cwd: string,
  signal: AbortSignal,
  takenBefore: ReadonlySet<string> | undefined,
): Promise<void> {
  if (!readiness?.url && !readiness?.command) {
    if (!isAlive(state)) throw exitedBeforeReady(state);
    return;
  }
  const deadline = Date.now() + readiness.timeoutMs;
  const quietLog = { debug() {}, info() {}, warn() {}, error() {}, output() {} };
  /** Another process that answered the readiness URL: the port was taken before the deploy started. */
  let answeredBy: number | null | undefined;
  for (;;) {
    if (signal.aborted)
      throw new TendError('TEND_INTERRUPTED', `${state.name}: interrupted while waiting to be ready`);
    if (!isAlive(state)) throw exitedBeforeReady(state);
    let passed = false;
    if (readiness.url) {
      try {
        const response = await fetch(readiness.url, {
          signal: AbortSignal.any([signal, AbortSignal.timeout(1000)]),
        });
        await response.body?.cancel();
        passed = response.ok;
      } catch {
        // not listening yet
      }
      // Someone answered: it counts only if it is this deploy's process (or one it started).
      answeredBy = passed ? answeredByAnother(state.pid, readiness.url, takenBefore) : undefined;
      if (answeredBy !== undefined) passed = false;
    } else if (readiness.command) {
      const result = await runCommand({ command: readiness.command, cwd, env: {} }, quietLog, signal).catch(
        () => undefined,
      );
      passed = result?.exitCode === 0;
    }
    // Ready is the process tend started, alive once its check passed: not a crash a moment before.
    if (passed && isAlive(state)) return;
    if (Date.now() > deadline) {
      const check = readiness.url ?? readiness.command?.join(' ');
      const taken =
        answeredBy === undefined
          ? ''
          : `; ${readiness.url} is answered by ${answeredBy === null ? 'another process' : `pid ${answeredBy}`}, ` +
            `not by this deploy's process (pid ${state.pid}): its port was taken before it started`;
      throw new TendError(
        'TEND_EXEC_TIMEOUT',
        `${state.name}: not ready after ${readiness.timeoutMs} ms (${check})${taken} (log ${state.logFile})`,
        { detail: { log: logTail(state.logFile), logFile: state.logFile } },
      );
    }
    await delay(pollMs, undefined, { signal }).catch(() => undefined);
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
