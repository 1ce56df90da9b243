/**
 * Running a local command for the exec plugin: output captured line by line (as log events and
 * for `::output key=value` lines), a timeout, and Ctrl-C. The command runs in its own process
 * group so that stopping it also stops what it started: on abort SIGTERM, SIGKILL after the
 * grace period. Process groups tend is still waiting for when the process exits (a second Ctrl-C
 * exits at once) get SIGKILL: nothing tend was running is left behind.
 */
import { spawn } from 'node:child_process';
import { TendError } from '../../errors.js';
import type { PluginLog } from '../../plugin/types.js';

export interface CommandSpec {
  command: string[];
  cwd: string;
  env: Record<string, string>;
  timeoutMs?: number;
}

export interface CommandResult {
  exitCode: number;
  durationMs: number;
  /** Outputs from `::output key=value` lines on stdout. */
  outputs: Record<string, string>;
  /** The last lines of output, for error messages. */
  tail: string;
}

const outputLine = /^::output ([A-Za-z_][A-Za-z0-9_.-]*)=(.*)$/;

/** Process groups started and not yet finished (or, for a persistent deploy, not yet ready). */
const runningGroups = new Set<number>();
let exitHookInstalled = false;

/**
 * Tracks a process group until the returned function is called; if this process exits first,
 * the group gets SIGKILL (synchronously, in the `exit` event).
 */
export function trackGroup(pid: number): () => void {
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.on('exit', () => {
      for (const group of runningGroups) killGroup(group, 'SIGKILL');
    });
  }
  runningGroups.add(pid);
  return () => runningGroups.delete(pid);
}
const tailLines = 20;

export async function runCommand(
  spec: CommandSpec,
  log: PluginLog,
  signal: AbortSignal,
  killGraceMs = 3000,
): Promise<CommandResult> {
  const [file, ...args] = spec.command;
  if (!file) throw new TendError('TEND_EXEC_FAILED', 'empty command');
  if (signal.aborted) throw new TendError('TEND_INTERRUPTED', `interrupted before running ${file}`);
  const started = performance.now();
  const child = spawn(file, args, {
    cwd: spec.cwd,
    env: { ...process.env, ...spec.env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  const untrack = child.pid ? trackGroup(child.pid) : () => undefined;
  const outputs: Record<string, string> = {};
  const tail: string[] = [];
  const onLine = (stream: 'stdout' | 'stderr', line: string) => {
    if (stream === 'stdout') {
      const m = outputLine.exec(line);
      if (m) {
        outputs[m[1]!] = m[2]!;
        return;
      }
    }
    tail.push(line);
    if (tail.length > tailLines) tail.shift();
    log.output(stream, line);
  };
  splitLines(child.stdout, (line) => onLine('stdout', line));
  splitLines(child.stderr, (line) => onLine('stderr', line));

  let stopReason: 'timeout' | 'interrupted' | undefined;
  const stop = (reason: 'timeout' | 'interrupted') => {
    stopReason ??= reason;
    killGroup(child.pid, 'SIGTERM');
    setTimeout(() => killGroup(child.pid, 'SIGKILL'), killGraceMs).unref();
  };
  const timer = spec.timeoutMs ? setTimeout(() => stop('timeout'), spec.timeoutMs) : undefined;
  const onAbort = () => stop('interrupted');
  signal.addEventListener('abort', onAbort, { once: true });

  try {
    const exitCode = await new Promise<number>((resolve, reject) => {
      child.once('error', (error: NodeJS.ErrnoException) => {
        reject(
          new TendError(
            'TEND_EXEC_FAILED',
            error.code === 'ENOENT'
              ? `command not found: ${file} (cwd ${spec.cwd})`
              : `could not start ${file}: ${error.message}`,
            { cause: error },
          ),
        );
      });
      child.once('close', (code, sig) => resolve(code ?? (sig ? 128 + signalNumber(sig) : 1)));
    });
    const durationMs = Math.round(performance.now() - started);
    if (stopReason === 'timeout') {
      throw new TendError(
        'TEND_EXEC_TIMEOUT',
        `${spec.command.join(' ')} timed out after ${spec.timeoutMs} ms`,
        {
          detail: { log: tail.join('\n') },
        },
      );
    }
    if (stopReason === 'interrupted') {
      throw new TendError('TEND_INTERRUPTED', `${spec.command.join(' ')} was stopped (interrupted)`);
    }
    return { exitCode, durationMs, outputs, tail: tail.join('\n') };
  } finally {
    untrack();
    if (timer) clearTimeout(timer);
    signal.removeEventListener('abort', onAbort);
  }
}

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

function signalNumber(sig: NodeJS.Signals): number {
  return { SIGHUP: 1, SIGINT: 2, SIGKILL: 9, SIGTERM: 15 }[sig as string] ?? 1;
}

function splitLines(stream: NodeJS.ReadableStream, onLine: (line: string) => void): void {
  let rest = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    const text = rest + chunk;
    const lines = text.split('\n');
    rest = lines.pop() ?? '';
    for (const line of lines) onLine(line.endsWith('\r') ? line.slice(0, -1) : line);
  });
  stream.on('end', () => {
    if (rest) onLine(rest);
  });
}
