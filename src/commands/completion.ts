/**
 * `tend completion bash|zsh|fish`: a shell completion script generated from the command table
 * (commander's tree in main.ts), so it completes exactly the commands, subcommands, flags and
 * fixed argument values tend has. The user sources it: `source <(tend completion bash)`.
 */
import type { Command, Option } from 'commander';
import type { CommandResult } from '../cli/output.js';
import { TendError } from '../errors.js';

export const shells = ['bash', 'zsh', 'fish'] as const;
export type Shell = (typeof shells)[number];

/** One command of the tree: its path from the root, subcommands, flags and argument values. */
interface CompletionNode {
  path: string[];
  description: string;
  subcommands: string[];
  /** Long flags (and short ones) valid here: the command's own and its ancestors'. */
  flags: { names: string[]; takesValue: boolean; description: string }[];
  /** Fixed values of its arguments (`completion <shell>`: bash zsh fish). */
  values: string[];
}

function flagsOf(options: readonly Option[]): CompletionNode['flags'] {
  return options
    .filter((o) => !o.hidden)
    .map((o) => ({
      names: [o.long, o.short].filter((n): n is string => Boolean(n)),
      takesValue: o.required || o.optional,
      description: o.description,
    }));
}

function nodes(program: Command): CompletionNode[] {
  const out: CompletionNode[] = [];
  const visit = (command: Command, path: string[], inherited: CompletionNode['flags']) => {
    const flags = [...flagsOf(command.options), ...inherited];
    // A hidden command (a deprecated name kept working) is not offered.
    const visible = new Set(command.createHelp().visibleCommands(command));
    out.push({
      path,
      description: command.description().split('\n')[0] ?? '',
      subcommands: command.commands.filter((c) => visible.has(c)).flatMap((c) => [c.name(), ...c.aliases()]),
      flags: [...flags, { names: ['--help', '-h'], takesValue: false, description: 'display help' }],
      values: command.registeredArguments.flatMap((a) => a.argChoices ?? []),
    });
    for (const sub of command.commands) {
      const at = out.length;
      visit(sub, [...path, sub.name()], flags);
      // An alias (`envs`) completes like the command it stands for.
      for (const alias of sub.aliases()) out.push({ ...out[at]!, path: [...path, alias] });
    }
  };
  visit(program, [], []);
  return out;
}

const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

function bash(program: Command): string {
  const all = nodes(program);
  const valueFlags = [
    ...new Set(all.flatMap((n) => n.flags.filter((f) => f.takesValue).flatMap((f) => f.names))),
  ];
  const cases = all
    .map((n) => {
      const words = [...n.subcommands, ...n.values].join(' ');
      const flags = [...new Set(n.flags.flatMap((f) => f.names.filter((x) => x.startsWith('--'))))].join(' ');
      return `    ${quote(n.path.join(' '))}) words=${quote(words)} flags=${quote(flags)} ;;`;
    })
    .join('\n');
  return `# tend completion for bash. Load it with:  source <(tend completion bash)
_tend_node() {
  # The subcommands (and argument values) and the flags of a command path ("" is tend itself).
  case "$1" in
${cases}
    *) words='' flags='' ;;
  esac
}

_tend() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" path='' words flags word i
  local value_flags=${quote(` ${valueFlags.join(' ')} `)}
  for ((i = 1; i < COMP_CWORD; i++)); do
    word="\${COMP_WORDS[i]}"
    if [[ "$word" == -* ]]; then
      # A flag that takes a value (not given as --flag=value) consumes the next word.
      [[ "$word" != *=* && "$value_flags" == *" $word "* ]] && ((i++))
      continue
    fi
    _tend_node "$path"
    if [[ " $words " == *" $word "* ]]; then path="\${path:+$path }$word"; fi
  done
  local prev="\${COMP_WORDS[COMP_CWORD-1]}"
  if ((COMP_CWORD > 1)) && [[ "$prev" == -* && "$prev" != *=* && "$value_flags" == *" $prev "* ]]; then
    COMPREPLY=()
    [[ "$prev" == --root || "$prev" == --kubeconfig || "$prev" == --data-dir ]] && COMPREPLY=($(compgen -f -- "$cur"))
    return 0
  fi
  _tend_node "$path"
  # Flags when the word starts with a dash, else subcommands and argument values.
  if [[ "$cur" == -* ]]; then
    COMPREPLY=($(compgen -W "$flags" -- "$cur"))
  else
    COMPREPLY=($(compgen -W "$words" -- "$cur"))
  fi
}

complete -F _tend tend
`;
}

function zsh(program: Command): string {
  // zsh runs the bash completion through bashcompinit: one generator, the same answers.
  return `#compdef tend
# tend completion for zsh. Load it with:  source <(tend completion zsh)
autoload -U +X compinit && compinit
autoload -U +X bashcompinit && bashcompinit
${bash(program).split('\n').slice(1).join('\n')}`;
}

function fish(program: Command): string {
  const all = nodes(program);
  const lines = [
    '# tend completion for fish. Load it with:  tend completion fish | source',
    'complete -c tend -f',
  ];
  // The condition that the command line is at `path` (and no deeper).
  const at = (node: CompletionNode): string => {
    if (node.path.length === 0) return '__fish_use_subcommand';
    const seen = node.path.map((p) => `__fish_seen_subcommand_from ${p}`).join('; and ');
    return node.subcommands.length > 0
      ? `${seen}; and not __fish_seen_subcommand_from ${node.subcommands.join(' ')}`
      : seen;
  };
  const byPath = new Map(all.map((n) => [n.path.join(' '), n]));
  for (const node of all) {
    const condition = quote(at(node));
    // Flags are offered from the command that defines them on (globals everywhere).
    const parent = node.path.length > 0 ? byPath.get(node.path.slice(0, -1).join(' ')) : undefined;
    const inherited = new Set(parent?.flags.flatMap((f) => f.names) ?? []);
    const within =
      node.path.length === 0
        ? 'true'
        : node.path.map((p) => `__fish_seen_subcommand_from ${p}`).join('; and ');
    for (const sub of node.subcommands) {
      const child = all.find((n) => n.path.join(' ') === [...node.path, sub].join(' '));
      lines.push(`complete -c tend -n ${condition} -a ${quote(sub)} -d ${quote(child?.description ?? '')}`);
    }
    for (const value of node.values) lines.push(`complete -c tend -n ${condition} -a ${quote(value)}`);
    for (const flag of node.flags) {
      const long = flag.names.find((n) => n.startsWith('--'));
      const short = flag.names.find((n) => !n.startsWith('--'));
      if (!long || inherited.has(long)) continue;
      const shortFlag = short ? ` -s ${short.slice(1)}` : '';
      lines.push(
        `complete -c tend -n ${quote(within)} -l ${long.slice(2)}${shortFlag}${flag.takesValue ? ' -r' : ''} -d ${quote(flag.description)}`,
      );
    }
  }
  return [...new Set(lines)].join('\n') + '\n';
}

export function completionCommand(
  shell: string,
  program: Command,
): CommandResult<{ shell: Shell; script: string }> {
  if (!(shells as readonly string[]).includes(shell)) {
    throw new TendError('TEND_USAGE', `tend completion knows ${shells.join(', ')}, not "${shell}"`);
  }
  const generate = { bash, zsh, fish }[shell as Shell];
  const script = generate(program);
  return { data: { shell: shell as Shell, script }, human: script, exitCode: 0 };
}
