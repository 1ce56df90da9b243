/**
 * An append-only file with a write buffer: `append` is cheap, `flush` hands the buffer to the
 * OS (write(2)), and the data is fsynced at least every `syncIntervalMs` and on close, so a
 * killed process loses nothing that was flushed and a crashed machine at most that interval.
 */
import { closeSync, fsyncSync, mkdirSync, openSync, writeSync } from 'node:fs';
import path from 'node:path';

const maxBuffered = 64 * 1024;

export class AppendFile {
  readonly file: string;
  private fd: number | undefined;
  private buffer: string[] = [];
  private bufferedBytes = 0;
  private dirty = false;
  private readonly syncTimer: NodeJS.Timeout;

  constructor(file: string, syncIntervalMs = 100) {
    this.file = file;
    mkdirSync(path.dirname(file), { recursive: true });
    this.fd = openSync(file, 'a', 0o600);
    this.syncTimer = setInterval(() => this.sync(), syncIntervalMs);
    this.syncTimer.unref();
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

  sync(): void {
    this.flush();
    if (this.fd !== undefined && this.dirty) {
      fsyncSync(this.fd);
      this.dirty = false;
    }
  }

  close(): void {
    if (this.fd === undefined) return;
    clearInterval(this.syncTimer);
    this.sync();
    closeSync(this.fd);
    this.fd = undefined;
  }
}
