/**
 * Where the exec plugin's commands are started: by a spawn helper (a small long-lived process,
 * up to 4 of them), otherwise directly from this process. Both ways report the same events, in
 * the same order, so `runCommand` (process.ts) is one piece of code over either.
 *
 * A helper is Node's (`spawn-helper.ts`), or Python's (`python-spawn-helper.ts`) when
 * TEND_EXEC_PYTHON names a Python to run it: an opt-in, since it starts a command for a tenth of
 * the CPU but a Python may be missing, old or a stub (macOS's asks to install developer tools).
 * Both speak the same protocol. Helpers start on demand — when a command finds no helper idle —
 * up to `helperLimit` (a run with nothing to do starts none). A command that finds no helper
 * ready is queued to one that is starting: a helper answers `ready` before it reads a request, so
 * nothing waits on a fork of this (large) process.
 *
 * A helper that dies (killed, crashed) fails the commands it was running with TEND_EXEC_FAILED,
 * and their process groups get SIGKILL; the next command starts a new helper. A helper that cannot
 * start, or dies before it is ready, turns helpers off for this process: it never read a request,
 * so what was queued to it is spawned directly, as everything after it. A helper exits when tend
 * exits: its stdin ends, it SIGKILLs the groups still running, and exits.
 *
 * `TEND_EXEC_HELPERS=0` spawns every command directly (a number caps the helpers).
 */
import type * as childProcesses from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import os from 'node:os';
import type { Socket } from 'node:net';
import type { Readable } from 'node:stream';
import { builtinModule } from '../../builtin-module.js';
import { TendError } from '../../errors.js';
import {
  decodeFields,
  encodeFields,
  encodeSpawn,
  environmentFields,
  FrameType,
  frameHeader,
  frameReader,
  helperSource,
  type SpawnFrame,
} from './spawn-helper.js';
import { pythonHelperArgument, pythonHelperSource } from './python-spawn-helper.js';

/** A command to start, with `inherited` plus `env`. */
export interface SpawnRequest extends SpawnFrame {
  inherited: InheritedEnvironment;
}

/** The environment a run's commands inherit: tend's, read once (encoded for a helper too). */
export interface InheritedEnvironment {
  values: NodeJS.ProcessEnv;
  /** The payload of an `environment` frame. */
  frame: Buffer;
}

const environmentsByRun = new WeakMap<AbortSignal, InheritedEnvironment>();

/**
 * tend's environment as it was when the run whose signal is `signal` started its first command.
 * Reading `process.env` whole costs tens of microseconds (each variable is a call into C++), and
 * a helper would split it again: per run it is read once, and sent to each helper once.
 */
export function environmentOfRun(signal: AbortSignal): InheritedEnvironment {
  let environment = environmentsByRun.get(signal);
  if (!environment) {
    const values = { ...process.env };
    environment = { values, frame: encodeFields(environmentFields(values)) };
    environmentsByRun.set(signal, environment);
  }
  return environment;
}

/** What happens to a started command, in order: `started` (unless it could not start), output, then `closed`. */
export interface SpawnEvents {
  /** Its pid, which is also its process group. */
  started(pid: number): void;
  output(stream: 'stdout' | 'stderr', chunk: Buffer): void;
  /** It could not start (an errno error: ENOENT…), or its helper died (a TendError). */
  failed(error: Error): void;
  /**
   * It exited and its output is closed (after `failed`, when it could not start): its exit code,
   * or the number of the signal that ended it.
   */
  closed(code: number | null, signal: number | null): void;
}

/** Starts a command in its own process group, with stdin closed and stdout/stderr captured. */
export function startProcess(request: SpawnRequest, events: SpawnEvents): void {
  if (holdsNul(request)) {
    // execve cannot take it; a helper's frame could not carry it. Refused as Node's spawn refuses it.
    const message = 'an argument or environment variable contains a NUL byte';
    events.failed(Object.assign(new Error(message), { code: 'ERR_INVALID_ARG_VALUE' }));
    events.closed(null, null);
    return;
  }
  const helper = pickHelper();
  if (helper) helper.start(request, events);
  else spawnDirectly(request, events);
}

function holdsNul({ file, cwd, args, env }: SpawnFrame): boolean {
  const nul = (value: string) => value.includes('\0');
  return (
    nul(file) ||
    nul(cwd) ||
    args.some(nul) ||
    Object.entries(env).some(([name, value]) => nul(name) || nul(value))
  );
}

function spawnDirectly(request: SpawnRequest, events: SpawnEvents): void {
  let child: ChildProcess & { stdout: Readable; stderr: Readable };
  try {
    child = childProcess().spawn(request.file, request.args, {
      cwd: request.cwd,
      env: { ...request.inherited.values, ...request.env },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
  } catch (error) {
    // An argument Node refuses (a NUL byte): failed, as from a helper.
    events.failed(error as Error);
    events.closed(null, null);
    return;
  }
  if (child.pid) events.started(child.pid);
  child.once('error', (error) => events.failed(error));
  child.stdout.on('data', (chunk: Buffer) => events.output('stdout', chunk));
  child.stderr.on('data', (chunk: Buffer) => events.output('stderr', chunk));
  child.once('close', (code, signal) => events.closed(code, signal && os.constants.signals[signal]));
}

/** child_process, loaded with the first command (a cached run starts none). */
const childProcess = () => builtinModule<typeof childProcesses>('node:child_process');

const helpers = new Set<Helper>();
/** Off after a helper could not start or died before it was ready. */
let helpersOff = false;

type HelperKind = 'python' | 'node';

/** The kind of helper to start next: Python's when TEND_EXEC_PYTHON names a Python. */
function helperKind(): HelperKind {
  return process.env.TEND_EXEC_PYTHON ? 'python' : 'node';
}

/**
 * How many helpers of `kind` may run, or TEND_EXEC_HELPERS. From 2 to 4: two per core for Node
 * (blocked for a whole fork, so more helpers than cores still overlap), one per core for Python
 * (it is blocked only while vfork's child gets to exec; measured on 2 cores, a third and fourth
 * cost more to start than they gave back).
 */
function helperLimit(kind: HelperKind): number {
  const configured = process.env.TEND_EXEC_HELPERS;
  if (configured !== undefined && /^\d+$/.test(configured)) return Number(configured);
  cores ??= os.availableParallelism();
  return Math.min(4, Math.max(2, kind === 'python' ? cores : 2 * cores));
}
let cores: number | undefined;

/**
 * The helper for the next command: the ready one running fewest, else one starting; another
 * starts when every helper is busy and the limit allows, and takes the command when none is ready.
 */
function pickHelper(): Helper | undefined {
  // Only helpers of the kind wanted now (TEND_EXEC_PYTHON may have changed since others started).
  const kind = helperKind();
  const limit = helperLimit(kind);
  if (helpersOff || limit === 0) return undefined;
  let best: Helper | undefined;
  let count = 0;
  for (const helper of helpers) {
    if (helper.kind !== kind) continue;
    count++;
    if (
      !best ||
      (helper.ready && !best.ready) ||
      (helper.ready === best.ready && helper.running < best.running)
    )
      best = helper;
  }
  if (count < limit && (!best || best.running > 0)) {
    const started = startHelper();
    // A ready helper takes the command at once; one starting needs tens of milliseconds more.
    if (!best?.ready) return started ?? best;
  }
  return best;
}

function startHelper(): Helper | undefined {
  const helper = new Helper(helperKind());
  if (!helper.alive) return undefined;
  helpers.add(helper);
  return helper;
}

interface Running {
  request: SpawnRequest;
  events: SpawnEvents;
  pid?: number;
}

class Helper {
  readonly child: ChildProcess;
  ready = false;
  alive = true;
  private nextId = 1;
  private readonly commands = new Map<number, Running>();
  /** The environment this helper was sent last. */
  private inherited: InheritedEnvironment | undefined;
  private readonly receive = frameReader((type, id, payload) => this.dispatch(type, id, payload));

  constructor(readonly kind: HelperKind) {
    const [file, args, env] =
      kind === 'python'
        ? // Python's environment as tend's (a pyenv shim needs it); -I makes it ignore PYTHON*.
          [
            process.env.TEND_EXEC_PYTHON!,
            ['-I', '-S', '-c', pythonHelperSource, pythonHelperArgument],
            process.env,
          ]
        : // None for Node: NODE_OPTIONS (a debugger, a loader) must not reach the helper.
          [process.execPath, ['-e', helperSource], {}];
    this.child = childProcess().spawn(file, args, {
      // Its own session: a terminal's Ctrl-C reaches tend, which stops commands its own way.
      detached: true,
      env,
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    this.child.unref();
    if (!this.child.pid) {
      this.alive = false;
      helpersOff = true;
      this.child.once('error', () => undefined);
      return;
    }
    // With 'pipe' stdio, a child's stdin and stdout are sockets (which ref and unref the event loop).
    const stdout = this.child.stdout as Socket;
    const stdin = this.child.stdin as Socket;
    stdin.on('error', () => undefined); // a dead helper: handled when its stdout closes
    stdin.unref();
    stdout.unref();
    stdout.on('data', this.receive);
    stdout.once('close', () => this.died());
    this.child.once('error', () => undefined);
  }

  get running(): number {
    return this.commands.size;
  }

  start(request: SpawnRequest, events: SpawnEvents): void {
    const id = this.nextId++;
    this.commands.set(id, { request, events });
    // While it runs a command, the helper's output keeps tend's event loop alive.
    if (this.commands.size === 1) (this.child.stdout as Socket).ref();
    if (this.inherited !== request.inherited) {
      this.inherited = request.inherited;
      this.send(FrameType.environment, 0, request.inherited.frame);
    }
    this.send(FrameType.spawn, id, encodeSpawn(request));
  }

  /** Frames sent in one turn of the event loop go in one write, which wakes the helper once. */
  private send(type: number, id: number, payload: Buffer): void {
    const stdin = this.child.stdin!;
    if (!stdin.writableCorked) {
      stdin.cork();
      setImmediate(() => stdin.uncork());
    }
    stdin.write(frameHeader(type, id, payload.length));
    stdin.write(payload);
  }

  private dispatch(type: number, id: number, payload: Buffer): void {
    if (type === FrameType.ready) {
      this.ready = true;
      return;
    }
    const command = this.commands.get(id);
    if (!command) return;
    switch (type) {
      case FrameType.started:
        command.pid = Number(payload.toString('latin1'));
        command.events.started(command.pid);
        break;
      case FrameType.stdout:
        command.events.output('stdout', payload);
        break;
      case FrameType.stderr:
        command.events.output('stderr', payload);
        break;
      case FrameType.error: {
        const [code, errno, syscall, path, message = ''] = decodeFields(payload).map(
          (field) => field || undefined,
        );
        command.events.failed(
          Object.assign(new Error(message), { code, errno: errno && Number(errno), syscall, path }),
        );
        break;
      }
      case FrameType.closed: {
        const [code, signal] = decodeFields(payload);
        this.finish(id);
        command.events.closed(code ? Number(code) : null, signal ? Number(signal) : null);
        break;
      }
    }
  }

  private finish(id: number): void {
    this.commands.delete(id);
    if (this.commands.size === 0) (this.child.stdout as Socket).unref();
  }

  /** Its stdout closed: it exited (or is about to). What it was running fails; new commands go elsewhere. */
  private died(): void {
    if (!this.alive) return;
    this.alive = false;
    helpers.delete(this);
    if (!this.ready) {
      // It never read a request (`ready` comes first): what was queued to it is started by tend.
      helpersOff = true;
      const queued = [...this.commands.values()];
      this.commands.clear();
      (this.child.stdout as Socket).unref();
      for (const command of queued) startProcess(command.request, command.events);
      return;
    }
    if (this.commands.size === 0) return;
    this.child.ref();
    const report = () => {
      const how = this.child.signalCode
        ? `was killed (${this.child.signalCode})`
        : `exited with code ${this.child.exitCode}`;
      for (const [id, command] of this.commands) {
        this.finish(id);
        // Its output went to the helper: the command cannot be followed any more, so it is stopped.
        killGroup(command.pid, 'SIGKILL');
        command.events.failed(
          new TendError(
            'TEND_EXEC_FAILED',
            `the exec spawn helper (pid ${this.child.pid}) ${how} while ${command.request.file} was running; ` +
              'its process group was killed',
          ),
        );
        command.events.closed(null, os.constants.signals.SIGKILL);
      }
      this.child.unref();
    };
    if (this.child.exitCode !== null || this.child.signalCode !== null) report();
    else {
      this.child.kill('SIGKILL');
      this.child.once('exit', report);
    }
  }
}

/** Signals a process group (or, if that fails, the process alone); false when neither exists. */
export function killGroup(pid: number | undefined, sig: NodeJS.Signals): boolean {
  if (!pid) return false;
  try {
    process.kill(-pid, sig);
    return true;
  } catch {
    try {
      process.kill(pid, sig);
      return true;
    } catch {
      return false;
    }
  }
}
