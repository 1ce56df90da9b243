/**
 * Vitest's global setup: no test leaves a process running. Every process the tests start inherits
 * TEND_TEST_RUN (a value of this run's own) through its environment; once every file has run, a
 * process that still carries it — a `tend server`, a service, a wrapper's child — fails the run,
 * named with its command line, after it was given a few seconds to end and then killed. (A killed
 * faketime once left its `tend server` running after every run, unnoticed.)
 */
import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { setTimeout as delay } from 'node:timers/promises';

const variable = 'TEND_TEST_RUN';

interface Leftover {
  pid: number;
  command: string;
}

/** The processes (Linux: /proc) whose environment holds `variable=marker`, this one and its parents' aside. */
function processesOf(marker: string): Leftover[] {
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((name) => /^\d+$/.test(name));
  } catch {
    return []; // no /proc: nothing to check on this system
  }
  const entry = Buffer.from(`${variable}=${marker}\0`);
  const found: Leftover[] = [];
  for (const pid of pids.map(Number)) {
    if (pid === process.pid) continue;
    try {
      const environ = readFileSync(`/proc/${pid}/environ`);
      if (!environ.includes(entry)) continue;
      const command = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
      // Vitest's own workers end with it; a zombie has no command line left to run.
      if (command === '' || /node_modules\/(vitest|tinypool)\//.test(command)) continue;
      found.push({ pid, command });
    } catch {
      // gone meanwhile, or another user's
    }
  }
  return found;
}

/**
 * Fails (throws) when processes of the run `marker` are left once `graceMs` passed, after killing
 * them; resolves when none is.
 */
export async function checkLeftovers(marker: string, graceMs: number): Promise<void> {
  let left = processesOf(marker);
  for (let waited = 0; left.length > 0 && waited < graceMs; waited += 100) {
    await delay(100);
    left = processesOf(marker);
  }
  if (left.length === 0) return;
  for (const { pid } of left) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // ended meanwhile
    }
  }
  throw new Error(
    `the tests left ${left.length} process(es) running (killed now):\n` +
      left.map((p) => `  ${p.pid}: ${p.command.slice(0, 300)}`).join('\n'),
  );
}

export default function setup(): () => Promise<void> {
  const marker = randomUUID();
  process.env[variable] = marker;
  return async () => {
    try {
      await checkLeftovers(marker, 5_000);
    } catch (error) {
      // Vitest prints a teardown's error but exits 0 for it.
      process.exitCode = 1;
      throw error;
    }
  };
}
