/**
 * Running a local command for the exec plugin: output captured line by line (as log events and
 * for `::output key=value` lines), a timeout, and Ctrl-C. The command runs in its own process
 * group so that stopping it also stops what it started: on abort SIGTERM, SIGKILL after the
 * grace period. Process groups tend is still waiting for when the process exits (a second Ctrl-C
 * exits at once) get SIGKILL: nothing tend was running is left behind.
 *
 * Where the process is started (a spawn helper, or this process) is `spawner.ts`'s business:
 * both report the same events, and everything here is the same over either.
 */
import { StringDecoder } from 'node:string_decoder';
import { TendError } from '../../errors.js';
import type { PluginLog } from '../../plugin/types.js';
import { environmentOfRun, killGroup, startProcess } from './spawner.js';
import { monotonicMs } from '../../monotonic.js';

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
export function trackGroup(pid: number): () => boolean {
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

/**
 * What to stop when a signal aborts: one listener per signal (a command's session signal serves
 * thousands of commands), instead of one added and removed per command.
 */
const stopsBySignal = new WeakMap<AbortSignal, Set<() => void>>();

function onAbort(signal: AbortSignal, stop: () => void): () => void {
  let stops = stopsBySignal.get(signal);
  if (!stops) {
    const all = (stops = new Set());
    stopsBySignal.set(signal, all);
    signal.addEventListener('abort', () => all.forEach((fn) => fn()), { once: true });
  }
  stops.add(stop);
  return () => stops.delete(stop);
}

export async function runCommand(
  spec: CommandSpec,
  log: PluginLog,
  signal: AbortSignal,
  killGraceMs = 3000,
): Promise<CommandResult> {
  const [file, ...args] = spec.command;
  if (!file) throw new TendError('TEND_EXEC_FAILED', 'empty command');
  if (signal.aborted) throw new TendError('TEND_INTERRUPTED', `interrupted before running ${file}`);
  const started = monotonicMs();
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
  const lines = {
    stdout: new LineSplitter((line) => onLine('stdout', line)),
    stderr: new LineSplitter((line) => onLine('stderr', line)),
  };

  /** The process group, once started (a spawn helper tells it a moment after the request). */
  let pid: number | undefined;
  let untrack = () => false;
  let stopReason: 'timeout' | 'interrupted' | undefined;
  const stop = (reason: 'timeout' | 'interrupted') => {
    stopReason ??= reason;
    killGroup(pid, 'SIGTERM');
    setTimeout(() => killGroup(pid, 'SIGKILL'), killGraceMs).unref();
  };
  const timer = spec.timeoutMs ? setTimeout(() => stop('timeout'), spec.timeoutMs) : undefined;
  const stopOnAbort = onAbort(signal, () => stop('interrupted'));

  try {
    const exitCode = await new Promise<number>((resolve, reject) => {
      startProcess(
        { file, args, cwd: spec.cwd, env: spec.env, inherited: environmentOfRun(signal) },
        {
          started(startedPid) {
            pid = startedPid;
            untrack = trackGroup(startedPid);
            // Stopped before its pid was known: it gets its SIGTERM now (the SIGKILL timer runs already).
            if (stopReason) killGroup(pid, 'SIGTERM');
          },
          output: (stream, chunk) => lines[stream].push(chunk),
          failed(error: NodeJS.ErrnoException) {
            reject(
              error instanceof TendError
                ? error
                : new TendError(
                    'TEND_EXEC_FAILED',
                    error.code === 'ENOENT'
                      ? `command not found: ${file} (cwd ${spec.cwd})`
                      : `could not start ${file}: ${error.message}`,
                    { cause: error },
                  ),
            );
          },
          closed(code, sig) {
            lines.stdout.end();
            lines.stderr.end();
            resolve(code ?? (sig !== null ? 128 + sig : 1));
          },
        },
      );
    });
    const durationMs = Math.round(monotonicMs() - started);
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
    stopOnAbort();
  }
}

/**
 * Output bytes to lines: decoded as UTF-8 across chunk boundaries (invalid bytes become U+FFFD),
 * split at \n with a trailing \r dropped; the last line counts without a newline too.
 */
class LineSplitter {
  private readonly decoder = new StringDecoder('utf8');
  private rest = '';

  constructor(private readonly onLine: (line: string) => void) {}

  push(chunk: Buffer): void {
    this.split(this.decoder.write(chunk));
  }

  end(): void {
    this.split(this.decoder.end());
    if (this.rest) this.onLine(this.rest);
    this.rest = '';
  }

  private split(chunk: string): void {
    if (!chunk) return;
    const lines = (this.rest + chunk).split('\n');
    this.rest = lines.pop() ?? '';
    for (const line of lines) this.onLine(line.endsWith('\r') ? line.slice(0, -1) : line);
  }
}
