/**
 * Live progress of a command on stderr: on a terminal one line per action, redrawn in place
 * with its state and duration; otherwise a plain line per transition. A summary at the end.
 */
import type { SessionBus } from '../events/bus.js';
import type { ActionState, TendEvent } from '../events/catalog.js';
import type { ActionOutcome } from '../graph/solver.js';

const symbols: Record<ActionState, string> = {
  'getting-status': '…',
  cached: '=',
  processing: '▶',
  ready: '✓',
  failed: '✗',
  aborted: '-',
};

export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)}s`;
  return `${Math.floor(ms / 60_000)}m${Math.round((ms % 60_000) / 1000)}s`;
}

export class ProgressReporter {
  private readonly rows = new Map<string, { state: ActionState; durationMs?: number; version: string }>();
  private drawnLines = 0;
  private readonly stop: () => void;
  private redrawTimer: NodeJS.Timeout | undefined;
  private finished = false;

  constructor(
    bus: SessionBus,
    private readonly stream: NodeJS.WriteStream = process.stderr,
    private readonly interactive = Boolean(process.stderr.isTTY) && !process.env.CI,
  ) {
    this.stop = bus.on('actionStatus', (event) => this.onStatus(event as TendEvent<'actionStatus'>));
  }

  private onStatus(event: TendEvent<'actionStatus'>): void {
    const { actionRef, state, durationMs, version } = event.payload;
    this.rows.set(actionRef, { state, durationMs, version });
    if (!this.interactive) {
      if (state === 'getting-status') return;
      const took = durationMs === undefined ? '' : ` (${formatDuration(durationMs)})`;
      this.stream.write(`${state.padEnd(10)} ${actionRef} ${version}${took}\n`);
      return;
    }
    // Coalesce redraws: thousands of transitions per second would otherwise flood the terminal.
    this.redrawTimer ??= setTimeout(() => {
      this.redrawTimer = undefined;
      this.redraw();
    }, 50);
  }

  private redraw(): void {
    const lines = [...this.rows].map(([ref, row]) => {
      const took = row.durationMs === undefined ? '' : ` ${formatDuration(row.durationMs)}`;
      return `${symbols[row.state]} ${ref.padEnd(30)} ${row.state}${took}`;
    });
    const rows = this.stream.rows ?? 24;
    const visible = lines.length > rows - 2 ? lines.slice(lines.length - (rows - 2)) : lines;
    let out = this.drawnLines > 0 ? `\x1b[${this.drawnLines}A` : '';
    for (const line of visible) out += `\x1b[2K${line}\n`;
    this.stream.write(out);
    this.drawnLines = visible.length;
  }

  /** A line for people before the action rows (e.g. "resumed the paused environment …"). */
  note(line: string): void {
    this.stream.write(`${line}\n`);
  }

  /** Stops listening and draws the rows a last time; once (a second call draws nothing). */
  finish(): void {
    if (this.finished) return;
    this.finished = true;
    this.stop();
    if (this.redrawTimer) {
      clearTimeout(this.redrawTimer);
      this.redrawTimer = undefined;
    }
    if (this.interactive && this.rows.size > 0) this.redraw();
  }
}

export function summarize(outcomes: ActionOutcome[], durationMs: number): string {
  const count = (state: ActionOutcome['state']) => outcomes.filter((o) => o.state === state).length;
  const lines = [
    `${outcomes.length} action(s): ${count('ready')} ready, ${count('cached')} cached, ` +
      `${count('failed')} failed, ${count('aborted')} aborted in ${formatDuration(durationMs)}`,
  ];
  for (const outcome of outcomes.filter((o) => o.state === 'failed')) {
    lines.push(`✗ ${outcome.ref}: ${outcome.error?.message ?? 'failed'}`);
    const log = outcome.error?.detail?.log;
    if (typeof log === 'string' && log) lines.push(...log.split('\n').map((l) => `    ${l}`));
  }
  return lines.join('\n');
}
