/**
 * The Garden command a Workflow's or Command's step names (`command:`, `gardenCommand:`), as the
 * tend command line that does the same (workflows.ts reads the steps; commands/steps.ts runs them).
 */
import { listWords } from './translation.js';

/**
 * Garden's commands a step can run, as tend's command lines: the words Garden reads (the longest
 * match wins) and tend's words for them. The rest of the step's words follow.
 */
const gardenCommands: readonly [string[], string[]][] = [
  [['build'], ['build']],
  [['deploy'], ['deploy']],
  [['test'], ['test']],
  [['run'], ['run']],
  [['validate'], ['validate']],
  [['logs'], ['logs']],
  [['workflow'], ['workflow']],
  [['get', 'status'], ['status']],
  [['get', 'workflows'], ['workflow']],
  [
    ['cleanup', 'namespace'],
    ['cleanup', 'env'],
  ],
  [
    ['cleanup', 'deploy'],
    ['cleanup', 'deploy'],
  ],
  [
    ['delete', 'environment'],
    ['cleanup', 'env'],
  ],
  [
    ['delete', 'env'],
    ['cleanup', 'env'],
  ],
  [
    ['delete', 'namespace'],
    ['cleanup', 'env'],
  ],
  [
    ['delete', 'deploy'],
    ['cleanup', 'deploy'],
  ],
  [
    ['delete', 'service'],
    ['cleanup', 'deploy'],
  ],
];

/** Garden's global options about its own output: tend has none of them, and they change nothing run. */
const ignoredOptions: Record<string, boolean> = {
  '--log-level': true,
  '-l': true,
  '--logger-type': true,
  '--silent': false,
  '--emoji': false,
  '--no-emoji': false,
  '--show-timestamps': false,
};

/** The Garden command names a step may start with (for messages). */
const gardenCommandNames = [...new Set(gardenCommands.map(([words]) => words.join(' ')))];

/**
 * Garden 0.12's spellings, which Garden 0.14 still runs with a warning (core/src/commands/run.ts
 * maybeOldRunCommand): `run task X` is `run X`, `run test X` is `test X`, `run workflow X` is
 * `workflow X`. `run module` and `run service` it refuses as removed.
 */
const oldRunCommands: readonly [string[], string[]][] = [
  [['run', 'task'], ['run']],
  [['run', 'test'], ['test']],
  [['run', 'workflow'], ['workflow']],
];
const removedRunCommands = ['module', 'service'];

/**
 * The tend command line (without `tend`) for a step's Garden command words, or why there is
 * none. A custom command of the project runs as `tend command <name> …`.
 */
export function tendCommandLine(
  words: readonly string[],
  customCommands: readonly string[],
): { argv: string[] } | { problem: string } {
  const kept: string[] = [];
  for (let i = 0; i < words.length; i++) {
    const word = words[i]!;
    const [flag] = word.split('=', 1);
    if (flag! in ignoredOptions) {
      if (ignoredOptions[flag!] && !word.includes('=')) i++;
      continue;
    }
    kept.push(word);
  }
  if (kept[0] === 'run' && removedRunCommands.includes(kept[1] ?? '')) {
    return {
      problem: `Garden command "run ${kept[1]!}" was removed in Garden 0.13 (as it says); run a Run action (\`run <name>\`) instead`,
    };
  }
  const match = [...gardenCommands, ...oldRunCommands]
    .filter(([garden]) => garden.every((word, i) => kept[i] === word))
    .sort(([a], [b]) => b.length - a.length)[0];
  if (match) return { argv: [...match[1], ...kept.slice(match[0].length)] };
  const [first] = kept;
  if (first !== undefined && customCommands.includes(first)) return { argv: ['command', ...kept] };
  return {
    problem:
      `Garden command "${kept.join(' ')}" is not one tend runs; a step runs ${listWords(gardenCommandNames)}` +
      (customCommands.length > 0
        ? `, or a custom command of the project (${customCommands.join(', ')})`
        : '') +
      '; use a script step for anything else',
  };
}

/** Whether a word starts one of the Garden commands a step may run (its other words templated). */
export function startsGardenCommand(word: string): boolean {
  return gardenCommands.some(([garden]) => garden[0] === word);
}
