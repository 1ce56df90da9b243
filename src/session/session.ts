/**
 * A CLI session's event lifecycle: the bus with its local log and outbox, `sessionStarted`,
 * a heartbeat every 30 s while the command runs, and `sessionCompleted` / `sessionFailed`.
 */
import { SessionBus } from '../events/bus.js';
import type { EventPayloads } from '../events/catalog.js';
import { LocalLogSink } from '../events/local-log.js';
import { OutboxSink } from '../outbox/writer.js';
import { statePaths } from '../state/files.js';

export const heartbeatIntervalMs = 30_000;

export interface SessionOptions {
  projectRoot: string;
  started: EventPayloads['sessionStarted'];
  heartbeatMs?: number;
}

export class Session {
  readonly bus: SessionBus;
  private readonly startedAt = Date.now();
  private readonly heartbeat: NodeJS.Timeout;
  private ended = false;

  constructor(private readonly options: SessionOptions) {
    this.bus = new SessionBus();
    const paths = statePaths(options.projectRoot);
    this.bus.addSink(new LocalLogSink(paths.events, this.bus.sessionId));
    this.bus.addSink(new OutboxSink(paths.outbox, this.bus.sessionId));
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
