/**
 * How the argument table runs a command: the command module is imported when it runs, its result
 * printed (for people, or JSON with --json) and its exit code set; an error printed the same way.
 */
import type { Command } from 'commander';
import { writeFileSync } from 'node:fs';
import { toTendError } from '../errors.js';
import { redactSecretsIn } from '../redact.js';
import { printError, printResult, type CommandResult, type GlobalOptions } from './output.js';

/** A repeatable option's values, in order. */
export const collect = (value: string, previous: string[] = []) => [...previous, value];

/**
 * Garden's `command.*` template context: the command's name without its arguments (`deploy`,
 * `cleanup env`), and `params`, its arguments by name and its options (the global ones too,
 * with their defaults) by their long name as typed (`--show-output`: `show-output`). An API
 * token (`--token`) is a credential, not configuration: it is left out.
 */
export function commandInfo(command: Command): NonNullable<GlobalOptions['commandInfo']> {
  const names: string[] = [];
  for (let c: Command | null = command; c?.parent; c = c.parent) names.unshift(c.name());
  const params: Record<string, unknown> = {};
  command.registeredArguments.forEach((argument, i) => {
    if (command.processedArgs[i] !== undefined) params[argument.name()] = command.processedArgs[i];
  });
  for (let c: Command | null = command; c; c = c.parent) {
    for (const option of c.options) {
      const value: unknown = c.getOptionValue(option.attributeName());
      if (value !== undefined && option.name() !== 'token' && !(option.name() in params))
        params[option.name()] = value;
    }
  }
  return { name: names.join(' '), params };
}

/** Runs a lazily imported command and turns its result or error into output and an exit code. */
export async function execute(command: Command, load: () => Promise<CommandResult>): Promise<void> {
  // Every option object the command reads (optsWithGlobals) carries it from here.
  command.setOptionValue('commandInfo', commandInfo(command));
  const options = command.optsWithGlobals<GlobalOptions>();
  // Read once and removed: the commands this one runs (exec actions, scripts) do not inherit it.
  const resultFile = process.env.TEND_RESULT_FILE;
  delete process.env.TEND_RESULT_FILE;
  try {
    const result = await load();
    printResult(result, options);
    process.exitCode = result.exitCode;
    if (resultFile) writeResultFile(resultFile, { exitCode: result.exitCode, data: result.data });
  } catch (error) {
    process.exitCode = printError(error, options);
    if (resultFile)
      writeResultFile(resultFile, { exitCode: process.exitCode, error: toTendError(error).toJSON() });
  }
}

/**
 * `TEND_RESULT_FILE`: the command's result as `--json` prints it (its data, or its error), with
 * the exit code, written there too: a Workflow step's outputs (commands/steps.ts), or a script's.
 */
function writeResultFile(file: string, result: Record<string, unknown>): void {
  try {
    writeFileSync(file, redactSecretsIn(JSON.stringify(result)) + '\n', { mode: 0o600 });
  } catch {
    // Whoever asked for it finds no result: the exit code still says how it went.
  }
}
