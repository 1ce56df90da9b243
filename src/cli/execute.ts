/**
 * How the argument table runs a command: the command module is imported when it runs, its result
 * printed (for people, or JSON with --json) and its exit code set; an error printed the same way.
 */
import type { Command } from 'commander';
import { printError, printResult, type CommandResult, type GlobalOptions } from './output.js';

/** A repeatable option's values, in order. */
export const collect = (value: string, previous: string[] = []) => [...previous, value];

/** Runs a lazily imported command and turns its result or error into output and an exit code. */
export async function execute(command: Command, load: () => Promise<CommandResult>): Promise<void> {
  const options = command.optsWithGlobals<GlobalOptions>();
  try {
    const result = await load();
    printResult(result, options);
    process.exitCode = result.exitCode;
  } catch (error) {
    process.exitCode = printError(error, options);
  }
}
