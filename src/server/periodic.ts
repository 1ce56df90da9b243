/**
 * A pass that `tend server` runs every interval (the first one right away): a tick while the
 * previous pass still runs is skipped, a failing pass is handed to `onError` and the next one
 * tried at the next tick, and `stop` waits for the pass in flight.
 */
export interface Periodic {
  stop(): Promise<void>;
}

export function startPeriodic(
  intervalMs: number,
  pass: () => Promise<void>,
  onError: (err: unknown) => void,
): Periodic {
  let running: Promise<void> | undefined;
  let stopped = false;
  const tick = () => {
    if (running || stopped) return;
    running = pass()
      .catch(onError)
      .finally(() => {
        running = undefined;
      });
  };
  const timer = setInterval(tick, intervalMs);
  timer.unref();
  tick();
  return {
    stop: async () => {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}
