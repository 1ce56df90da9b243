/**
 * The executor's log: what it says itself, and the `log` events of the plugins it calls
 * (through its own bus and each restore session's), written as "(plugin) message".
 */
import type { SessionBus } from '../events/bus.js';

export type ExecutorLogLevel = 'debug' | 'info' | 'warn' | 'error';
export type ExecutorLogger = (level: ExecutorLogLevel, message: string) => void;

/** Writes the plugins' `log` events on the bus to the executor's log. */
export function logPluginEvents(bus: SessionBus, log: ExecutorLogger): void {
  bus.on('log', (event) => {
    const { level, message, pluginName } = event.payload as {
      level: ExecutorLogLevel;
      message: string;
      pluginName?: string;
    };
    log(level, `(${pluginName ?? 'plugin'}) ${message}`);
  });
}

/**
 * A target as the log names it: what people know it by (`context kind-dev (https://…)`, the
 * host of local environments), then its key — a cluster's key is the uid of its kube-system
 * namespace, which alone says nothing to whoever reads the log.
 */
export function targetLabel(target: { targetKey: string; description?: string }): string {
  return target.description ? `${target.description} [${target.targetKey}]` : target.targetKey;
}
