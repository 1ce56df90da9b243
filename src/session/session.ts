/**
 * A CLI session's event lifecycle: the bus with its local log and outbox (its ordered events
 * stamped with the host's sequence), `sessionStarted`, a heartbeat every 30 s while the command
 * runs, and `sessionCompleted` / `sessionFailed`.
 */
import { SessionBus } from '../events/bus.js';
import type { EventPayloads } from '../events/catalog.js';
import { LocalLogSink } from '../events/local-log.js';
import { OutboxSink } from '../outbox/writer.js';
import { statePaths } from '../state/files.js';
import { HostSequence } from './sequence.js';

export const heartbeatIntervalMs = 30_000;

export interface SessionOptions {
  projectRoot: string;
  started: EventPayloads['sessionStarted'];
  heartbeatMs?: number;
  /** The host's event sequence (default: the one in the host's state directory). */
  sequence?: HostSequence;
}

export class Session {
  readonly bus: SessionBus;
  private readonly startedAt = Date.now();
  private readonly heartbeat: NodeJS.Timeout;
  private ended = false;

  constructor(private readonly options: SessionOptions) {
    const sequence = options.sequence ?? new HostSequence();
    this.bus = new SessionBus(undefined, () => sequence.next());
    const paths = statePaths(options.projectRoot);
    // The outbox first: a process killed between the two writes of a flush then leaves nothing in
    // the local log that the server will never get (the log is only read here; the outbox is the record).
    this.bus.addSink(new OutboxSink(paths.outbox, this.bus.sessionId));
    this.bus.addSink(new LocalLogSink(paths.events, this.bus.sessionId));
    this.bus.emit('sessionStarted', options.started);
    this.bus.flush();
    const { project, environment, namespace } = options.started;
    this.heartbeat = setInterval(() => {
      this.bus.emit('sessionHeartbeat', { project, environment, namespace, uptimeMs: this.uptimeMs() });
      this.bus.flush();
    }, options.heartbeatMs ?? heartbeatIntervalMs);
    this.heartbeat.unref();
  }

  get id(): string {
    return this.bus.sessionId;
  }

  uptimeMs(): number {
    return Date.now() - this.startedAt;
  }

  complete(counts: Omit<EventPayloads['sessionCompleted'], 'durationMs'>): void {
    if (this.ended) return;
    this.bus.emit('sessionCompleted', { durationMs: this.uptimeMs(), ...counts });
    this.end();
  }

  fail(error: { code: string; message: string }): void {
    if (this.ended) return;
    this.bus.emit('sessionFailed', { durationMs: this.uptimeMs(), error });
    this.end();
  }

  private end(): void {
    this.ended = true;
    clearInterval(this.heartbeat);
    this.bus.close();
  }
}
