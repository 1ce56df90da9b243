/**
 * The exec spawn helper: a small Node process that starts the exec plugin's commands for tend.
 *
 * Forking copies the parent's memory mappings, and Node forks on its main thread and waits there
 * until the child has exec'd: from tend's main process (a large heap, a busy event loop) every
 * command stalled the whole CLI for milliseconds. The helper has a tiny heap and nothing else to
 * do; tend runs one or a few of them (`src/plugins/exec/spawner.ts`) and keeps its event loop free.
 *
 * `helperMain` is what the helper runs. It is sent to `node -e` as its source text
 * (`helperSource`), so it uses only its parameter and globals: nothing imported in this module is
 * in scope there (a test runs it both from the TypeScript sources and from the build).
 *
 * The protocol, over the helper's stdin (requests) and stdout (answers), is a stream of frames:
 * a 9-byte header — payload length (uint32 BE), frame type (uint8), command id (uint32 BE) — and
 * the payload. Requests: `environment` (JSON: the environment commands inherit, sent before the
 * first `spawn` and again when it changes) and `spawn` (JSON: file, args, cwd, and env: what the
 * command gets on top of the inherited environment). Answers: `ready` (once, at start, before any
 * request is read),
 * `started` (JSON: pid), `stdout` and `stderr` (the bytes as read), `error` (JSON: code, errno,
 * syscall, path, message: the command could not start), `closed` (JSON: code, signal: it exited
 * and its stdout and stderr are closed). When its stdin ends (tend exited, however), the helper
 * SIGKILLs the process groups still running and exits.
 */

import type * as childProcesses from 'node:child_process';
import type { ChildProcess } from 'node:child_process';

export const FrameType = {
  spawn: 1,
  ready: 2,
  started: 3,
  stdout: 4,
  stderr: 5,
  error: 6,
  closed: 7,
  environment: 8,
} as const;

export const frameHeaderBytes = 9;

/** A command to start: it runs with the inherited environment (the last `environment` frame) plus `env`. */
export interface SpawnFrame {
  file: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
}

export interface ErrorFrame {
  code?: string;
  errno?: number;
  syscall?: string;
  path?: string;
  message: string;
}

export interface ClosedFrame {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** @param types and `HEADER`: the module's constants, given as values (the function cannot see them). */
export function helperMain(load: (id: string) => unknown, types: typeof FrameType, HEADER: number): void {
  const { spawn } = load('node:child_process') as typeof childProcesses;
  const { spawn: SPAWN, ready: READY, started: STARTED, stdout: STDOUT, stderr: STDERR } = types;
  const { error: ERROR, closed: CLOSED, environment: ENVIRONMENT } = types;

  const running = new Map<number, ChildProcess>();
  let inherited: NodeJS.ProcessEnv = {};

  // Frames of one turn of the event loop go out in one write, which wakes tend once. stdout to a
  // pipe is synchronous on Linux: a slow reader holds the helper back (back-pressure), nothing
  // piles up in its memory.
  let queued: Buffer[] = [];
  const flush = () => {
    const frames = queued;
    queued = [];
    process.stdout.write(frames.length === 1 ? frames[0]! : Buffer.concat(frames));
  };
  const send = (type: number, id: number, payload: Buffer) => {
    const header = Buffer.allocUnsafe(HEADER);
    header.writeUInt32BE(payload.length, 0);
    header.writeUInt8(type, 4);
    header.writeUInt32BE(id, 5);
    if (queued.length === 0) setImmediate(flush);
    queued.push(header);
    if (payload.length > 0) queued.push(payload);
  };
  const sendJson = (type: number, id: number, value: unknown) =>
    send(type, id, Buffer.from(JSON.stringify(value)));

  const start = (id: number, request: SpawnFrame) => {
    let child: ChildProcess;
    try {
      child = spawn(request.file, request.args, {
        cwd: request.cwd,
        env: { ...inherited, ...request.env },
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true,
      });
    } catch (error) {
      const e = error as NodeJS.ErrnoException;
      sendJson(ERROR, id, { code: e.code, message: e.message });
      sendJson(CLOSED, id, { code: null, signal: null });
      return;
    }
    if (child.pid) {
      running.set(id, child);
      sendJson(STARTED, id, { pid: child.pid });
    }
    child.once('error', (error: NodeJS.ErrnoException) => {
      sendJson(ERROR, id, {
        code: error.code,
        errno: error.errno,
        syscall: error.syscall,
        path: error.path,
        message: error.message,
      });
    });
    child.stdout!.on('data', (chunk: Buffer) => send(STDOUT, id, chunk));
    child.stderr!.on('data', (chunk: Buffer) => send(STDERR, id, chunk));
    child.once('close', (code, signal) => {
      running.delete(id);
      sendJson(CLOSED, id, { code, signal });
    });
  };

  // tend is gone (exited, crashed or killed: its end of stdin closed, or of stdout, which a write
  // finds as EPIPE — also a `ready` to a tend that finished before this helper started): nothing
  // it started may outlive it.
  const tendGone = () => {
    for (const child of running.values()) {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    process.exit(0);
  };
  process.stdout.on('error', tendGone);

  // `ready` goes out before any request is read, in a write of its own: a helper that tend saw
  // die without it never started a command (tend starts those itself).
  const ready = Buffer.alloc(HEADER);
  ready.writeUInt8(READY, 4);
  process.stdout.write(ready);

  let pending: Buffer = Buffer.alloc(0);
  process.stdin.on('data', (chunk: Buffer) => {
    pending = pending.length > 0 ? Buffer.concat([pending, chunk]) : chunk;
    let offset = 0;
    while (pending.length - offset >= HEADER) {
      const length = pending.readUInt32BE(offset);
      if (pending.length - offset < HEADER + length) break;
      const type = pending.readUInt8(offset + 4);
      const id = pending.readUInt32BE(offset + 5);
      const payload = pending.subarray(offset + HEADER, offset + HEADER + length);
      offset += HEADER + length;
      if (type === SPAWN) start(id, JSON.parse(payload.toString('utf8')) as SpawnFrame);
      else if (type === ENVIRONMENT) inherited = JSON.parse(payload.toString('utf8')) as NodeJS.ProcessEnv;
    }
    pending = pending.subarray(offset);
  });
  process.stdin.once('end', tendGone);
  // The helper has its own session (no terminal's Ctrl-C); tend decides what stops.
  process.on('SIGINT', () => undefined);
}

/**
 * The helper's program for `node -e`. `__name` is defined for transpilers that keep function
 * names by wrapping them in calls to it (esbuild's keepNames, as under tsx).
 */
export const helperSource = `var __name = (f) => f; (${helperMain.toString()})(require, ${JSON.stringify(FrameType)}, ${frameHeaderBytes});`;
