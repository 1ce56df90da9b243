/**
 * `tend build|deploy|test|run [names…] [--watch]` as the argument table calls it: nothing to run
 * when the project has no action of the kind and none is named, else one run (execute.ts) or a
 * watch (watch.ts), over the project opened once.
 */
import type { CommandResult } from '../cli/output.js';
import { openProject } from './context.js';
import {
  executeCommand,
  kindOf,
  nothingToRun,
  requestedRefs,
  type ExecuteOptions,
  type ExecuteVerb,
} from './execute.js';
import { builtinPlugins } from '../plugins/builtin.js';
import { watchCommand } from './watch.js';

export async function actionsCommand(
  verb: ExecuteVerb,
  names: string[],
  options: ExecuteOptions,
): Promise<CommandResult> {
  const plugins = builtinPlugins();
  const opened = await openProject(options, plugins);
  if (requestedRefs(opened, kindOf[verb], names).length === 0) return nothingToRun(opened, kindOf[verb]);
  return options.watch
    ? watchCommand(verb, names, options, plugins, opened)
    : executeCommand(verb, names, options, plugins, opened);
}
