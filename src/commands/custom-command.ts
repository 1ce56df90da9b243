/**
 * `tend command [name] [args…]`: runs a Garden custom Command (`kind: Command` in a file at the
 * project root) as `garden <name>` runs it: its arguments and options parsed as it declares them
 * (`${args.<name>}`, `${opts.<name>}`, `${args.$all}`, `${args.$rest}`), its `variables` over the
 * project's, then its steps (commands/steps.ts). Without a name, lists the project's Commands.
 * A Command whose name is not one of tend's runs as `tend <name>` too (src/main.ts).
 */
import { formatTable, type CommandResult, type GlobalOptions } from '../cli/output.js';
import path from 'node:path';
import { configError } from '../config/diagnostics.js';
import { readRunnables, type CommandParameter, type CustomCommandSpec } from '../config/garden/workflows.js';
import { loadProjectConfig } from '../config/pipeline.js';
import { ExitCode, TendError } from '../errors.js';
import { builtinPlugins } from '../plugins/builtin.js';
import type { PluginDefinition } from '../plugin/types.js';
import { handleInterrupts } from './context.js';
import { runSteps, type StepOutcome } from './steps.js';
import { configureRunnables, stepsOutcome, tendCommandNames, withSecrets } from './runnables.js';
import { monotonicMs } from '../monotonic.js';

/** Whether the project (found as the options say) has a custom Command `name` offered as `tend <name>`. */
export async function isTopLevelCommand(
  name: string,
  options: Pick<GlobalOptions, 'root'>,
): Promise<boolean> {
  try {
    // The files only: no environment selected, no secrets fetched for a word that may be a typo.
    const loaded = await loadProjectConfig({
      root: options.root ? path.resolve(options.root) : undefined,
      cwd: process.cwd(),
      plugins: builtinPlugins(),
    });
    return readRunnables(loaded.runnables, tendCommandNames).commands.some(
      (c) => c.name === name && c.topLevel,
    );
  } catch {
    return false; // no project, or one that does not load: the command line is left as it is
  }
}

export interface CommandListData {
  project: string;
  commands: { name: string; description: string; topLevel: boolean; file: string; line: number }[];
}

export interface CommandHelpData {
  command: string;
  description: string;
  args: CommandParameter[];
  opts: CommandParameter[];
}

export interface CommandRunData {
  project: string;
  environment: string;
  command: string;
  succeeded: boolean;
  interrupted: boolean;
  durationMs: number;
  steps: StepOutcome[];
}

export async function customCommand(
  name: string | undefined,
  words: readonly string[],
  options: GlobalOptions,
  plugins: PluginDefinition[] = builtinPlugins(),
): Promise<CommandResult<CommandListData | CommandHelpData | CommandRunData>> {
  const { configured, runnables } = await configureRunnables(options, plugins);
  const { commands } = runnables;
  if (name === undefined) return listCommands(configured.project.name, commands);
  const command = commands.find((c) => c.name === name);
  if (!command) {
    throw new TendError(
      'TEND_COMMAND_NOT_FOUND',
      `no custom Command named "${name}"; defined: ${commands.map((c) => c.name).join(', ') || '(none)'}`,
    );
  }
  if (words.includes('--help') || words.includes('-h')) return commandHelp(command);
  if (command.notRun) throw configError([command.notRun]);
  const started = monotonicMs();
  const parsed = parseCommandLine(command, words);
  const base = await withSecrets(configured, command.source.value);
  const variables = (command.variables ?? {}) as Record<string, unknown>;
  const templateContext = {
    ...base,
    actionVarLayers: [variables],
    args: parsed.args,
    opts: parsed.opts,
  };
  const interrupts = handleInterrupts();
  try {
    const run = await runSteps(command.steps, {
      root: configured.project.root,
      source: command.source,
      templateContext,
      env: {},
      options,
      customCommands: commands.map((c) => c.name),
      signal: interrupts.signal,
    });
    const outcome = stepsOutcome(`command ${command.name}`, run, started);
    return {
      data: {
        project: configured.project.name,
        environment: configured.environment.name,
        command: command.name,
        ...outcome.summary,
      },
      human: outcome.human,
      exitCode: outcome.exitCode,
    };
  } finally {
    interrupts.dispose();
  }
}

/**
 * The command line after the Command's name, as Garden parses it: the declared arguments in
 * order, the declared options (`--name value`, `--name=value`, a boolean `--name`); every
 * other word is in `$rest` (an undeclared option with its value is in `opts` too), every word
 * in `$all`.
 */
export function parseCommandLine(
  command: CustomCommandSpec,
  words: readonly string[],
): { args: Record<string, unknown>; opts: Record<string, unknown> } {
  const args: Record<string, unknown> = {};
  const opts: Record<string, unknown> = {};
  // In the order given: the undeclared options (with their values) and the positional words.
  const rest: (string | { positional: number })[] = [];
  const positional: string[] = [];
  for (let i = 0; i < words.length; i++) {
    const word = words[i]!;
    if (!/^--?[^-]/.test(word)) {
      rest.push({ positional: positional.length });
      positional.push(word);
      continue;
    }
    const start = i;
    const [flag, inline] = splitOption(word);
    const declared = command.opts.find((o) => o.name === flag);
    const takesValue = declared ? declared.type !== 'boolean' : !words[i + 1]?.startsWith('-');
    let value: unknown = true;
    if (inline !== undefined) value = inline;
    else if (takesValue && i + 1 < words.length) value = words[++i];
    else if (declared && declared.type !== 'boolean') {
      throw new TendError('TEND_USAGE', `--${flag} of ${command.name} needs a value`);
    }
    if (declared) opts[flag] = typed(command, declared, value, `--${flag}`);
    else {
      opts[flag] = value;
      rest.push(...words.slice(start, i + 1));
    }
  }
  command.args.forEach((declared, i) => {
    const value = positional[i];
    if (value === undefined) {
      if (declared.required) {
        throw new TendError(
          'TEND_USAGE',
          `${command.name} needs the argument <${declared.name}> (${declared.description})`,
        );
      }
      return;
    }
    args[declared.name] = typed(command, declared, value, `<${declared.name}>`);
  });
  for (const declared of command.opts) {
    // As Garden's parser: a boolean option not given is false.
    if (declared.type === 'boolean') opts[declared.name] ??= false;
    if (declared.required && opts[declared.name] === undefined) {
      throw new TendError(
        'TEND_USAGE',
        `${command.name} needs the option --${declared.name} (${declared.description})`,
      );
    }
  }
  args.$all = [...words];
  args.$rest = rest.flatMap((item) =>
    typeof item === 'string'
      ? [item]
      : item.positional < command.args.length
        ? []
        : [positional[item.positional]!],
  );
  return { args, opts };
}

function splitOption(word: string): [string, string | undefined] {
  const bare = word.replace(/^--?/, '');
  const eq = bare.indexOf('=');
  return eq < 0 ? [bare, undefined] : [bare.slice(0, eq), bare.slice(eq + 1)];
}

function typed(
  command: CustomCommandSpec,
  declared: CommandParameter,
  value: unknown,
  label: string,
): unknown {
  if (declared.type === 'integer') {
    const number = Number(value);
    if (!Number.isInteger(number)) {
      throw new TendError(
        'TEND_USAGE',
        `${label} of ${command.name} must be a whole number (got ${String(value)})`,
      );
    }
    return number;
  }
  if (declared.type === 'boolean') return value === true || value === 'true';
  return String(value);
}

function commandHelp(command: CustomCommandSpec): CommandResult<CommandHelpData> {
  const usage = [
    `tend${command.topLevel ? '' : ' command'} ${command.name}`,
    ...command.args.map((a) => (a.required ? `<${a.name}>` : `[${a.name}]`)),
    ...(command.opts.length > 0 ? ['[options]'] : []),
  ].join(' ');
  const parameters = (title: string, list: CommandParameter[], label: (p: CommandParameter) => string) =>
    list.length === 0
      ? []
      : [
          '',
          `${title}:`,
          ...list.map((p) => `  ${label(p).padEnd(24)} ${p.description}${p.required ? ' (required)' : ''}`),
        ];
  const human = [
    `Usage: ${usage}`,
    '',
    command.long ?? command.short,
    ...parameters('Arguments', command.args, (p) => p.name),
    ...parameters('Options', command.opts, (p) => `--${p.name}${p.type === 'boolean' ? '' : ` <${p.type}>`}`),
    '',
    `A custom Command of the project (${command.source.file}); tend's global options apply.`,
  ].join('\n');
  return {
    data: {
      command: command.name,
      description: command.long ?? command.short,
      args: command.args,
      opts: command.opts,
    },
    human,
    exitCode: ExitCode.ok,
  };
}

function listCommands(
  project: string,
  commands: readonly CustomCommandSpec[],
): CommandResult<CommandListData> {
  const data: CommandListData = {
    project,
    commands: commands.map((c) => {
      const at = c.source.locate([]);
      return { name: c.name, description: c.short, topLevel: c.topLevel, file: at.file, line: at.line };
    }),
  };
  const human =
    data.commands.length === 0
      ? `project ${project} has no custom Commands (kind: Command in a garden.yml file at the project root)`
      : formatTable(
          ['COMMAND', 'RUN AS', 'DESCRIPTION'],
          data.commands.map((c) => [
            c.name,
            c.topLevel ? `tend ${c.name}` : `tend command ${c.name}`,
            c.description,
          ]),
        );
  return { data, human, exitCode: ExitCode.ok };
}
