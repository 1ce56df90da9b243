/**
 * The argument table of `tend workflow` and `tend command` (Garden's Workflows and custom
 * Commands), and `tend <name>` for a custom Command. Command modules are imported lazily, as in
 * main.ts.
 */
import type { Command } from 'commander';
import type { CommandResult } from '../cli/output.js';

/** tend workflow and tend command: Garden's Workflows and custom Commands of the project. */
export function addWorkflowCommands(
  program: Command,
  execute: (command: Command, load: () => Promise<CommandResult>) => Promise<void>,
): void {
  program
    .command('workflow [name]')
    .description(
      "run a Garden Workflow's steps in order (kind: Workflow: Garden commands, scripts); without a name, list the workflows",
    )
    .addHelpText(
      'after',
      `
Each step runs a Garden command as the tend command that does the same (build, deploy, test, run,
validate, logs, get status, cleanup namespace|deploy, workflow, a custom Command) with this
command's global options, or a script with sh -c, in the project root. when (onSuccess, onError,
always, never), skip and continueOnError as in Garden; \${steps.<name>.log} and
\${steps.<name>.outputs.*} read the steps before. Exit code 1 when a step failed, 130 on Ctrl-C
(the running step is stopped, the rest are not run). See docs/garden.md.

Examples:
  tend workflow                    the project's workflows
  tend workflow full-test --env ci
  tend workflow full-test --json   each step's outcome, exit code and duration`,
    )
    .action(async (name: string | undefined, _opts, cmd: Command) =>
      execute(cmd, async () => (await import('./workflow.js')).workflowCommand(name, cmd.optsWithGlobals())),
    );
  program
    .command('command [name] [args...]')
    .description(
      'run a Garden custom Command of the project (kind: Command) with its arguments and options; without a name, list them',
    )
    .helpOption(false)
    .allowUnknownOption()
    .addHelpText(
      'after',
      `
A Command whose name is not one of tend's runs as \`tend <name>\` too. \`tend command <name> --help\`
shows its arguments and options. Its steps run as a Workflow's (see tend workflow --help).

Examples:
  tend command                     the project's custom Commands and how to run each
  tend command api-dev --help
  tend command wrapped my-task --db test`,
    )
    .action(async (name: string | undefined, args: string[], _opts, cmd: Command) =>
      execute(cmd, async () => {
        if (name === '--help' || name === '-h')
          return { data: {}, human: cmd.helpInformation(), exitCode: 0 };
        return (await import('./custom-command.js')).customCommand(name, args, cmd.optsWithGlobals());
      }),
    );
}

/**
 * `tend <name> …` for a custom Command of the project named <name> (one that is not a tend
 * command): the command line as `tend command <name> …`. Only a first word that names no
 * command costs a look at the project; when there is none, or it has no such Command, the
 * command line is left as it is (and commander says the command is unknown).
 */
export async function customCommandLine(
  program: Command,
  argv: readonly string[],
): Promise<readonly string[]> {
  let root: string | undefined;
  for (let i = 2; i < argv.length; i++) {
    const arg = argv[i]!;
    const [flag, inline] = arg.startsWith('--') && arg.includes('=') ? arg.split(/=(.*)/s) : [arg, undefined];
    const option = program.options.find((o) => o.long === flag || o.short === flag);
    if (option) {
      if (!option.required && !option.optional) continue;
      const value = inline ?? argv[++i];
      if (value === undefined) return argv;
      if (flag === '--root') root = value;
      continue;
    }
    if (arg.startsWith('-')) return argv;
    const known = program.commands.some((c) => c.name() === arg || c.aliases().includes(arg));
    if (known || arg === 'help') return argv;
    const { isTopLevelCommand } = await import('./custom-command.js');
    return (await isTopLevelCommand(arg, { root }))
      ? [...argv.slice(0, i), 'command', ...argv.slice(i)]
      : argv;
  }
  return argv;
}
