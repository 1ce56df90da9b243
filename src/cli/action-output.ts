/**
 * `--show-output`: the output lines of each action that ran in a session (the `log` events that
 * carry a `stream`), kept per action and printed after the run — passing actions too, where by
 * default only a failure shows its last lines.
 */
import type { SessionBus } from '../events/bus.js';
import type { TendEvent } from '../events/catalog.js';
import type { ActionOutcome } from '../graph/solver.js';

/** Lines kept per action; earlier ones are counted, not kept. */
const maxLines = 10_000;

export interface ActionOutput {
  lines: { stream: 'stdout' | 'stderr'; text: string }[];
  /** Lines left out at the start (more than `maxLines`). */
  omitted: number;
}

export class OutputCollector {
  private readonly byAction = new Map<string, ActionOutput>();
  private readonly stop: () => void;

  constructor(bus: SessionBus) {
    this.stop = bus.on('log', (event) => {
      const { actionRef, stream, message } = (event as TendEvent<'log'>).payload;
      if (!actionRef || !stream) return;
      let output = this.byAction.get(actionRef);
      if (!output) this.byAction.set(actionRef, (output = { lines: [], omitted: 0 }));
      output.lines.push({ stream, text: message });
      if (output.lines.length > maxLines) {
        output.lines.shift();
        output.omitted++;
      }
    });
  }

  finish(): void {
    this.stop();
  }

  /** The output of one action in this session (empty when it printed nothing or did not run). */
  of(ref: string): ActionOutput {
    return this.byAction.get(ref) ?? { lines: [], omitted: 0 };
  }

  /** For people: a block per action that ran, in the order of the outcomes; cached ones say so. */
  render(outcomes: readonly ActionOutcome[]): string {
    const blocks: string[] = [];
    for (const outcome of outcomes) {
      if (outcome.state === 'aborted') continue;
      if (outcome.state === 'cached') {
        blocks.push(
          `── ${outcome.ref}: cached, not run in this session (its earlier output: tend events --action ${outcome.ref})`,
        );
        continue;
      }
      const { lines, omitted } = this.of(outcome.ref);
      const passed = outcome.state === 'ready' ? 'passed' : 'failed';
      const label = outcome.kind === 'Test' || outcome.kind === 'Run' ? passed : outcome.state;
      blocks.push(
        [
          `── ${outcome.ref} (${label}) ${lines.length === 0 ? '— no output' : ''}`.trimEnd(),
          ...(omitted > 0 ? [`… ${omitted} earlier line(s) not kept`] : []),
          ...lines.map((l) => (l.stream === 'stderr' ? `[stderr] ${l.text}` : l.text)),
        ].join('\n'),
      );
    }
    return blocks.join('\n');
  }
}
