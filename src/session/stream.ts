/**
 * Streaming for a command's session (called by src/commands/context.ts): when a server is
 * configured, the outbox is kept within its bound and a streamer delivers the session's events
 * while the command runs; at the end it waits at most 5 s and says what still waits. Without a
 * server nothing is started: no timer, no file read beyond the credentials lookup. A server that
 * refuses the connection (nothing listens) costs no wait: the events stay in the outbox.
 */
import path from 'node:path';
import type { SessionBus } from '../events/bus.js';
import { toTendError } from '../errors.js';
import { describeDrops, enforceBound, outboxMaxBytes } from '../outbox/bound.js';
import { countOutbox } from '../outbox/read.js';
import { resolveServer } from '../remote/credentials.js';
import type { StreamReport } from '../stream/report.js';
import { OutboxStreamer } from '../stream/streamer.js';
import type { StreamConnection } from '../stream/transport.js';

/** How long a command waits at its end for the outbox to drain. */
export const exitWaitMs = 5_000;

/**
 * The server to stream to: the project's `server:`, then TEND_SERVER_URL, then `tend login`;
 * the token from TEND_TOKEN or the stored login. Undefined when none is configured.
 */
export function streamConnection(
  projectServer: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
): StreamConnection | undefined {
  const resolved = resolveServer(projectServer ? { server: projectServer } : {}, env);
  if (!resolved) return undefined;
  return { url: resolved.url, ...(resolved.token ? { token: resolved.token } : {}) };
}

export interface SessionStream {
  streamer: OutboxStreamer;
  /** Sends what is left (at most `exitWaitMs`), prints what waits on stderr, returns the report. */
  finish(timeoutMs?: number): Promise<StreamReport>;
}

export function describeWaiting(report: StreamReport, outboxDir: string, waitedMs: number): string {
  const where = path.relative(process.cwd(), outboxDir) || outboxDir;
  const why = report.gaveUpRefused
    ? `${report.lastError}: the server is down, so tend did not wait`
    : (report.lastError ?? `no answer within ${Math.round(waitedMs / 1000)} s`);
  return (
    `tend: ${report.waiting} event(s) wait in ${where} for ${report.server} (${why}); ` +
    'the next tend command in this project sends them, or run: tend events push\n'
  );
}

export function startSessionStream(options: {
  projectRoot: string;
  projectServer: string | undefined;
  bus: SessionBus;
  env?: NodeJS.ProcessEnv;
  write?: (message: string) => void;
}): SessionStream | undefined {
  const write = options.write ?? ((m: string) => process.stderr.write(m));
  let connection: StreamConnection | undefined;
  try {
    connection = streamConnection(options.projectServer, options.env);
  } catch (error) {
    // A bad server setting must not fail the command: the events stay in the outbox.
    write(`tend: not streaming events: ${toTendError(error).message}\n`);
    return undefined;
  }
  if (!connection) return undefined;
  const outboxDir = path.join(options.projectRoot, '.tend', 'outbox');
  const maxBytes = outboxMaxBytes(options.env);
  const bounded = enforceBound(outboxDir, maxBytes);
  if (bounded) write(describeDrops(bounded));
  const streamer = new OutboxStreamer({
    outboxDir,
    connection,
    warn: write,
    giveUpWhenRefused: true,
  }).start(options.bus);
  return {
    streamer,
    async finish(timeoutMs = exitWaitMs) {
      const report = await streamer.finish(timeoutMs);
      if (report.waiting > 0) {
        const after = enforceBound(outboxDir, maxBytes);
        if (after) {
          write(describeDrops(after));
          report.waiting = countOutbox(outboxDir, new Set(report.heldElsewhere.map((h) => h.sessionId)));
        }
        if (!report.unauthorized) write(describeWaiting(report, outboxDir, timeoutMs));
      }
      return report;
    },
  };
}
