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
 * the payload. A payload of fields is UTF-8 strings each ended by a NUL byte, as execve takes its
 * arguments and environment (so none holds a NUL: tend refuses such a command before it is sent),
 * which a helper splits without a JSON parser (Python's costs a third of its start).
 * Requests: `environment` (the environment commands inherit, `NAME=value` fields, sent before the
 * first `spawn` and again when it changes) and `spawn` (fields: file, cwd, the number of
 * arguments, the arguments, then `NAME=value` for what the command gets on top of the inherited
 * environment). Answers: `ready` (once, at start, before any request is read), `started` (the
 * pid, in decimal), `stdout` and `stderr` (the bytes as read), `error` (fields: code, errno,
 * syscall, path, message, empty when unknown: the command could not start), `closed` (fields:
 * the exit code, the number of the signal that ended it, one of them empty: it exited and its
 * stdout and stderr are closed). When its stdin ends (tend exited, however), the helper SIGKILLs
 * the process groups still running and exits.
 */

import type * as childProcesses from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import type * as os from 'node:os';

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

/** A command to start: it runs with the inherited environment (the last `environment` frame) plus `env`. */
export interface SpawnFrame {
  file: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
}

/** Fields, each ended by a NUL byte (none may hold one). Self-contained: the helper runs it too. */
export function encodeFields(fields: readonly string[]): Buffer {
  return Buffer.from(fields.length === 0 ? '' : fields.join('\0') + '\0');
}

/** The fields of a payload that `encodeFields` made. Self-contained: the helper runs it too. */
export function decodeFields(payload: Buffer): string[] {
  const fields = payload.toString('utf8').split('\0');
  fields.pop();
  return fields;
}

/** `spawn`'s fields. */
export function encodeSpawn(frame: SpawnFrame): Buffer {
  const { file, cwd, args, env } = frame;
  return encodeFields([file, cwd, String(args.length), ...args, ...environmentFields(env)]);
}

/** An environment as `NAME=value` fields (what `environmentOf` reads back). */
export function environmentFields(env: NodeJS.ProcessEnv): string[] {
  return Object.entries(env).map(([name, value]) => `${name}=${value}`);
}

/** `NAME=value` fields as an environment (the name ends at the first `=`, as execve reads it). */
export function environmentOf(fields: readonly string[]): Record<string, string> {
  const env: Record<string, string> = {};
  for (const field of fields) {
    const at = field.indexOf('=');
    if (at > 0) env[field.slice(0, at)] = field.slice(at + 1);
  }
  return env;
}

/** A frame's header: payload length, type, command id. Self-contained: the helper runs it too. */
export function frameHeader(type: number, id: number, length: number): Buffer {
  const header = Buffer.allocUnsafe(9);
  header.writeUInt32BE(length, 0);
  header.writeUInt8(type, 4);
  header.writeUInt32BE(id, 5);
  return header;
}

/**
 * A function to give each chunk read from a stream of frames: it calls `onFrame` for every frame
 * once it has arrived whole. Self-contained: the helper runs it too.
 */
export function frameReader(
  onFrame: (type: number, id: number, payload: Buffer) => void,
): (chunk: Buffer) => void {
  const HEADER = 9;
  let pending: Buffer = Buffer.alloc(0);
  return (chunk) => {
    pending = pending.length > 0 ? Buffer.concat([pending, chunk]) : chunk;
    let offset = 0;
    while (pending.length - offset >= HEADER) {
      const length = pending.readUInt32BE(offset);
      if (pending.length - offset < HEADER + length) break;
      const type = pending.readUInt8(offset + 4);
      const id = pending.readUInt32BE(offset + 5);
      const payload = pending.subarray(offset + HEADER, offset + HEADER + length);
      offset += HEADER + length;
      onFrame(type, id, payload);
    }
    pending = pending.subarray(offset);
  };
}

/** What the helper gets of this module: the functions both ends of the protocol run. */
const helperCodec = { encodeFields, decodeFields, environmentOf, frameHeader, frameReader };
export type HelperCodec = typeof helperCodec;

/**
 * @param types `FrameType`, and `codec` the module's functions, given as values (the function
 * cannot see them).
 */
export function helperMain(load: (id: string) => unknown, types: typeof FrameType, codec: HelperCodec): void {
  const { spawn } = load('node:child_process') as typeof childProcesses;
  const { signals } = (load('node:os') as typeof os).constants;
  const { encodeFields, decodeFields, environmentOf, frameHeader, frameReader } = codec;
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
    if (queued.length === 0) setImmediate(flush);
    queued.push(frameHeader(type, id, payload.length));
    if (payload.length > 0) queued.push(payload);
  };
  const sendFields = (type: number, id: number, fields: string[]) => send(type, id, encodeFields(fields));
  const sendClosed = (id: number, code: number | null, signal: NodeJS.Signals | null) =>
    sendFields(CLOSED, id, [code === null ? '' : String(code), signal ? String(signals[signal]) : '']);

  const start = (id: number, payload: Buffer) => {
    const fields = decodeFields(payload);
    const [file = '', cwd = '', count = '0'] = fields;
    const args = fields.slice(3, 3 + Number(count));
    let child: ChildProcess;
    try {
      child = spawn(file, args, {
        cwd,
        env: { ...inherited, ...environmentOf(fields.slice(3 + Number(count))) },
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true,
      });
    } catch (error) {
      const e = error as NodeJS.ErrnoException;
      sendFields(ERROR, id, [e.code ?? '', '', '', '', e.message]);
      sendClosed(id, null, null);
      return;
    }
    if (child.pid) {
      running.set(id, child);
      send(STARTED, id, Buffer.from(String(child.pid)));
    }
    child.once('error', (e: NodeJS.ErrnoException) => {
      const errno = e.errno === undefined ? '' : String(e.errno);
      sendFields(ERROR, id, [e.code ?? '', errno, e.syscall ?? '', e.path ?? '', e.message]);
    });
    child.stdout!.on('data', (chunk: Buffer) => send(STDOUT, id, chunk));
    child.stderr!.on('data', (chunk: Buffer) => send(STDERR, id, chunk));
    child.once('close', (code, signal) => {
      running.delete(id);
      sendClosed(id, code, signal);
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
  process.stdout.write(frameHeader(READY, 0, 0));

  process.stdin.on(
    'data',
    frameReader((type, id, payload) => {
      if (type === SPAWN) start(id, payload);
      else if (type === ENVIRONMENT) inherited = environmentOf(decodeFields(payload));
    }),
  );
  process.stdin.once('end', tendGone);
  // The helper has its own session (no terminal's Ctrl-C); tend decides what stops.
  process.on('SIGINT', () => undefined);
}

/**
 * The helper's program for `node -e`. `__name` is defined for transpilers that keep function
 * names by wrapping them in calls to it (esbuild's keepNames, as under tsx).
 */
export const helperSource =
  `var __name = (f) => f; (${helperMain.toString()})(require, ${JSON.stringify(FrameType)}, { ` +
  Object.entries(helperCodec)
    .map(([name, fn]) => `${name}: ${fn.toString()}`)
    .join(', ') +
  ' });';
