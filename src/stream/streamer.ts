/**
 * Delivery from the outbox to the server (docs/design.md#event-stream), in the background of a command.
 *
 * The session bus writes every streamed event to the session's outbox segment synchronously;
 * the streamer is told that something was written (it is a sink of the bus that only counts),
 * and reads the events back from the segment, so what it sends is exactly what is on disk. It
 * sends batches of at most 500 events / 512 KiB, a batch at the latest 250 ms after its first
 * event, one batch at a time and in order, and moves the segment's ack offset after each answer.
 * When the session's own events are sent it drains older segments left by earlier commands
 * (server down, process killed), one at a time, each under its lock.
 *
 * This file is the loop: one batch in flight, what each answer does, the waits between. Which
 * batch goes next is batching.ts; splitting a batch that keeps failing, split.ts; what is kept
 * in the quarantine, set-aside.ts; the report, report.ts.
 *
 * `finish` (at the end of the command, or for `tend events push`) sends the rest, waiting at most
 * the given time, and reports what still waits.
 */
import type { SessionBus } from '../events/bus.js';
import { countOutbox } from '../outbox/read.js';
import { redactUrl } from '../redact.js';
import { BatchSource, streamLimits, type Work } from './batching.js';
import { emptyStreamReport, type StreamReport } from './report.js';
import { SetAside } from './set-aside.js';
import { BatchSplitter } from './split.js';
import {
  defaultBackoff,
  retryDelay,
  sendBatch,
  StreamAgent,
  type BackoffPolicy,
  type SendOutcome,
  type StreamConnection,
} from './transport.js';

export interface StreamerOptions {
  outboxDir: string;
  connection: StreamConnection;
  maxEvents?: number;
  maxBytes?: number;
  lingerMs?: number;
  requestTimeoutMs?: number;
  backoff?: BackoffPolicy;
  /** Messages for the user (stderr): refused batches, a refused token. */
  warn?: (message: string) => void;
  /**
   * Once `finish` is called, stop at the first refused connection (nothing listens at the
   * server's address) instead of retrying until the deadline: a command's exit wait, where a
   * down server must cost nothing. `tend events push` keeps trying until its timeout.
   */
  giveUpWhenRefused?: boolean;
}

/** The server's answer of one kind. */
type Answer<K extends SendOutcome['kind']> = Extract<SendOutcome, { kind: K }>;

export class OutboxStreamer {
  readonly report: StreamReport;
  private readonly dir: string;
  private readonly backoff: BackoffPolicy;
  private readonly requestTimeoutMs: number;
  private readonly warn: (message: string) => void;
  private readonly setAside: SetAside;
  private readonly splitter: BatchSplitter;
  private readonly source: BatchSource;

  private finishing = false;
  private stopped = false;
  private attempt = 0;
  private wakeUp: (() => void) | undefined;
  /** Ends the backoff after a refused connection when `finish` is called (to try once more, then give up). */
  private finishWake: (() => void) | undefined;
  private readonly stopWaiter = new Set<() => void>();
  private readonly inFlight = new AbortController();
  private readonly agent = new StreamAgent();
  private loop: Promise<void> | undefined;

  constructor(private readonly options: StreamerOptions) {
    this.dir = options.outboxDir;
    this.backoff = options.backoff ?? defaultBackoff;
    this.requestTimeoutMs = options.requestTimeoutMs ?? 30_000;
    this.warn = options.warn ?? ((m) => process.stderr.write(m));
    this.report = emptyStreamReport(redactUrl(options.connection.url));
    this.setAside = new SetAside(this.dir, this.report, this.warn);
    this.splitter = new BatchSplitter({
      server: this.report.server,
      warn: this.warn,
      setAside: this.setAside,
      send: (body) => this.send(body),
    });
    const limits = {
      maxEvents: options.maxEvents ?? streamLimits.maxEvents,
      maxBytes: options.maxBytes ?? streamLimits.maxBytes,
      lingerMs: options.lingerMs ?? streamLimits.lingerMs,
    };
    this.source = new BatchSource(this.dir, limits, {
      report: this.report,
      warn: this.warn,
      setAside: this.setAside,
      splitter: this.splitter,
      wake: () => this.wake(),
    });
  }

  /**
   * Starts delivering: the session's own segment as it is written (when a bus is given), then the
   * segments older commands left behind.
   */
  start(bus?: SessionBus): this {
    if (bus) this.source.followOwn(bus);
    this.source.addOlder();
    this.loop = this.run();
    return this;
  }

  private wake(): void {
    const wake = this.wakeUp;
    this.wakeUp = undefined;
    wake?.();
  }

  /**
   * Sleeps until woken (when `wakeable`; by `finish` when `untilFinish`), stopped, or `ms`
   * passed. The timer never holds the process open.
   */
  private sleep(ms: number | undefined, wakeable: boolean, untilFinish = false): Promise<void> {
    return new Promise((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const done = () => {
        if (timer) clearTimeout(timer);
        if (this.wakeUp === done) this.wakeUp = undefined;
        if (this.finishWake === done) this.finishWake = undefined;
        this.stopWaiter.delete(done);
        resolve();
      };
      if (ms !== undefined) {
        timer = setTimeout(done, Math.max(0, ms));
        timer.unref();
      }
      if (wakeable) this.wakeUp = done;
      if (untilFinish) this.finishWake = done;
      this.stopWaiter.add(done);
    });
  }

  private stop(): void {
    this.stopped = true;
    this.inFlight.abort();
    for (const waiter of [...this.stopWaiter]) waiter();
  }

  private async run(): Promise<void> {
    try {
      while (!this.stopped) {
        const work = this.source.next(this.finishing);
        if (work === 'done') break;
        if ('waitMs' in work) {
          await this.sleep(work.waitMs, true);
          continue;
        }
        await this.deliver(work);
      }
    } catch (error) {
      this.warn(`tend: event delivery stopped: ${(error as Error).message}; events wait in the outbox\n`);
    }
  }

  /** One request to the server's ingest; `stop` aborts it. */
  private send(body: string): Promise<SendOutcome> {
    return sendBatch(this.options.connection, body, {
      signal: this.inFlight.signal,
      timeoutMs: this.requestTimeoutMs,
      agent: this.agent,
    });
  }

  private async deliver(work: Work): Promise<void> {
    const body = `{"events":[${work.batch.map((e) => e.text).join(',')}]}`;
    const outcome = await this.send(body);
    switch (outcome.kind) {
      case 'stored':
        return this.stored(work, outcome);
      case 'retry':
        return this.retry(work, outcome);
      case 'too-large':
        return this.tooLarge(work, body.length, outcome);
      case 'refused':
        return this.refused(work, outcome);
      case 'unauthorized':
        return this.unauthorized(outcome);
      case 'aborted':
        return;
    }
  }

  private stored({ cursor, batch }: Work, outcome: Answer<'stored'>): void {
    this.attempt = 0;
    delete this.report.lastError;
    this.report.batches++;
    this.report.delivered += batch.length;
    this.report.accepted += outcome.accepted;
    this.report.duplicates += outcome.duplicates;
    this.source.acknowledge(cursor, batch.length);
    this.splitter.stored(cursor, batch);
  }

  private async retry({ cursor, batch }: Work, outcome: Answer<'retry'>): Promise<void> {
    this.report.lastError = outcome.reason;
    if (outcome.refused === true && this.options.giveUpWhenRefused) {
      if (this.finishing) {
        this.report.gaveUpRefused = true;
        this.stop();
        return;
      }
      // Tried once more, at once, when the command ends.
      await this.sleep(retryDelay(this.attempt++, undefined, this.backoff), false, true);
      return;
    }
    if (await this.splitter.retried(cursor, batch, outcome)) return;
    await this.sleep(retryDelay(this.attempt++, outcome.retryAfterMs, this.backoff), false);
  }

  private tooLarge({ cursor, batch }: Work, bodyLength: number, outcome: Answer<'too-large'>): void {
    if (batch.length > 1) {
      // The server takes less than we send: halve the batches from now on.
      this.source.halve(batch.length, bodyLength);
      return;
    }
    if (this.setAside.dropUnreadable(cursor, batch)) return;
    this.setAside.quarantine(cursor, batch, outcome.status, outcome.error);
  }

  private async refused({ cursor, batch }: Work, outcome: Answer<'refused'>): Promise<void> {
    if (this.setAside.dropUnreadable(cursor, batch)) return;
    // 400/422 without naming the event: some event of the batch is bad; split to find it.
    // Other refusals (403 for a token, say) are about the whole batch: quarantine it.
    if (
      batch.length > 1 &&
      (outcome.status === 400 || outcome.status === 422) &&
      typeof outcome.error.detail?.index !== 'number'
    ) {
      await this.splitter.isolate(cursor, batch, outcome.status, outcome.error);
      return;
    }
    this.setAside.quarantine(
      cursor,
      batch,
      outcome.status,
      outcome.error,
      batch.length === 1 && this.splitter.endSplit(cursor),
    );
  }

  private unauthorized(outcome: Answer<'unauthorized'>): void {
    this.report.unauthorized = outcome.error;
    this.report.lastError = `the server refused the token (HTTP ${outcome.status}: ${outcome.error.message})`;
    this.warn(
      `tend: ${this.report.server} refused the token (${outcome.error.message}); events wait in the outbox: ` +
        'check TEND_TOKEN or run tend login, then tend events push\n',
    );
    this.stop();
  }

  /**
   * Sends what is left, waiting at most `timeoutMs`, then stops and reports what still waits.
   * Call it after the session ended (its segment is complete). A second call returns the report.
   */
  async finish(timeoutMs: number): Promise<StreamReport> {
    if (!this.finishing) {
      this.finishing = true;
      // Segments other commands left since this one started.
      this.source.addOlder();
      const deadline = setTimeout(() => this.stop(), timeoutMs); // holds the process open until then
      this.wake();
      this.finishWake?.();
      try {
        await this.loop;
      } finally {
        clearTimeout(deadline);
        this.stopped = true;
        this.agent.destroy();
        this.source.release();
      }
      this.report.waiting = this.countWaiting();
    }
    return this.report;
  }

  /** Stops at once (tests, a second Ctrl-C): nothing more is sent; locks are released. */
  async abort(): Promise<void> {
    this.stop();
    await this.loop;
    this.agent.destroy();
    this.source.release();
  }

  private countWaiting(): number {
    return countOutbox(this.dir, new Set(this.report.heldElsewhere.map((h) => h.sessionId)));
  }
}
