/**
 * An append-only file with a write buffer: `append` is cheap, `flush` hands the buffer to the
 * OS (write(2)), and the data is fsynced at least every `syncIntervalMs` and on close, so a
 * killed process loses nothing that was flushed and a crashed machine at most that interval.
 * The periodic fsync runs on libuv's thread pool, so the event loop never waits for the disk;
 * the one on close is synchronous. A file that is only a cache syncs on close alone
 * (`'on-close'`).
 */
import { closeSync, fsync, fsyncSync, mkdirSync, openSync, writeSync } from 'node:fs';
import path from 'node:path';

const maxBuffered = 64 * 1024;

export class AppendFile {
  readonly file: string;
  private fd: number | undefined;
  private buffer: string[] = [];
  private bufferedBytes = 0;
  /** Written since the last fsync started. */
  private dirty = false;
  /** An fsync is running on the thread pool: the descriptor stays open until it is done. */
  private syncing = false;
  private readonly syncTimer: NodeJS.Timeout | undefined;

  constructor(file: string, syncIntervalMs: number | 'on-close' = 100) {
    this.file = file;
    mkdirSync(path.dirname(file), { recursive: true });
    this.fd = openSync(file, 'a', 0o600);
    if (syncIntervalMs !== 'on-close') {
      this.syncTimer = setInterval(() => this.syncInBackground(), syncIntervalMs);
      this.syncTimer.unref();
    }
  }

  append(text: string): void {
    if (this.fd === undefined) throw new Error(`append to closed file ${this.file}`);
    this.buffer.push(text);
    this.bufferedBytes += text.length;
    if (this.bufferedBytes >= maxBuffered) this.flush();
  }

  flush(): void {
    if (this.fd === undefined || this.buffer.length === 0) return;
    const text = this.buffer.length === 1 ? this.buffer[0]! : this.buffer.join('');
    this.buffer = [];
    this.bufferedBytes = 0;
    writeSync(this.fd, text);
    this.dirty = true;
  }

  /** Flushes and fsyncs, waiting for the disk. */
  sync(): void {
    this.flush();
    if (this.fd !== undefined && (this.dirty || this.syncing)) {
      fsyncSync(this.fd);
      this.dirty = false;
    }
  }

  /** Flushes, and fsyncs on the thread pool what was written since the last fsync started. */
  private syncInBackground(): void {
    this.flush();
    if (this.fd === undefined || !this.dirty || this.syncing) return;
    const fd = this.fd;
    this.dirty = false;
    this.syncing = true;
    fsync(fd, (error) => {
      this.syncing = false;
      // Closed meanwhile (after its own fsync): the descriptor was left for this callback to close.
      if (this.fd === undefined) closeSync(fd);
      // Not on disk: the next fsync (at the latest the one on close, which throws) tries again.
      else if (error) this.dirty = true;
    });
  }

  close(): void {
    const fd = this.fd;
    if (fd === undefined) return;
    clearInterval(this.syncTimer);
    this.sync();
    this.fd = undefined;
    if (!this.syncing) closeSync(fd);
  }
}
