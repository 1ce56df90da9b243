/**
 * Rendering of command results and errors. Commands compute typed data; this module prints it:
 * results on stdout (for people, or as JSON with --json), progress and logs on stderr.
 */
import { sourceMappedStack } from './bundle-stack.js';
import { TendError, toTendError } from '../errors.js';
import { redactSecretsIn, redactUrlsIn } from '../redact.js';

export interface GlobalOptions {
  root?: string;
  env?: string;
  var?: string[];
  /** `--var-file <path>` (repeatable): YAML files of variables, below --var, above tend.yml's. */
  varFile?: string[];
  json?: boolean;
  debug?: boolean;
  /** kubectl's global flags: the kubeconfig file and context(s), overriding the provider's. */
  kubeconfig?: string;
  context?: string[];
  /** The command running, for `${command.name}` and `${command.params.<name>}` (set by cli/execute.ts). */
  commandInfo?: { name: string; params: Record<string, unknown> };
}

/** What every command returns: data for --json, a rendering for people, and the exit code. */
export interface CommandResult<T = unknown> {
  data: T;
  human: string;
  exitCode: number;
}

export function printResult(result: CommandResult, options: GlobalOptions): void {
  // A secret value a command read is never printed (the --json output included).
  if (options.json) {
    process.stdout.write(redactSecretsIn(JSON.stringify(result.data, null, 2)) + '\n');
  } else if (result.human) {
    const human = redactSecretsIn(result.human);
    process.stdout.write(human.endsWith('\n') ? human : human + '\n');
  }
}

/**
 * Prints an error without a stack trace unless --debug, and returns its exit code. Whatever it
 * prints has the user info of URLs redacted: an error (ours or a library's) may quote a URL
 * given with `user:password@`; and the secret values the command read.
 */
export function printError(error: unknown, options: GlobalOptions): number {
  const tendError = flagHint(toTendError(error), options);
  const stdout = (text: string) => process.stdout.write(redactSecretsIn(redactUrlsIn(text)));
  const stderr = (text: string) => process.stderr.write(redactSecretsIn(redactUrlsIn(text)));
  if (options.json) {
    stdout(JSON.stringify({ error: tendError.toJSON() }, null, 2) + '\n');
  } else {
    stderr(`error: ${tendError.toString()}\n`);
    const hint = tendError.detail?.hint;
    if (typeof hint === 'string') stderr(`  ${hint}\n`);
  }
  if (options.debug) {
    const stack = error instanceof Error ? error.stack : undefined;
    if (stack) stderr(sourceMappedStack(stack) + '\n');
    if (error instanceof TendError && error.cause instanceof Error && error.cause.stack) {
      stderr('caused by: ' + sourceMappedStack(error.cause.stack) + '\n');
    }
  }
  return tendError.exitCode;
}

/**
 * An error about a value the command line gave, with the hint naming the flag: a kubeconfig
 * context that does not exist is the provider's `context:` in tend.yml, unless `--context` named
 * it (the message lists the contexts there are).
 */
function flagHint(error: TendError, options: GlobalOptions): TendError {
  const missing = error.code === 'TEND_K8S_CONTEXT' ? error.detail?.context : undefined;
  const flagged = options.context?.find((name) => name === missing);
  if (flagged === undefined) return error;
  return new TendError(error.code, error.message, {
    location: error.location,
    plugin: error.plugin,
    handler: error.handler,
    actionRef: error.actionRef,
    cause: error.cause,
    detail: {
      ...error.detail,
      hint: `"${flagged}" came from --context: pass --context one of the available contexts (kubectl config get-contexts), or leave it out to use the provider's context:`,
    },
  });
}

/** Aligns rows of cells into columns, for tables printed to people. */
export function formatTable(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}
