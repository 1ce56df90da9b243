/**
 * A dotenv varfile (`.env`, `garden.dev.env`): Garden reads a varfile whose name does not end in
 * `.json`, `.yml` or `.yaml` with the `dotenv` package's parser; this is that parser's grammar.
 * One `NAME=value` (or `NAME: value`, after an optional `export `) per line; a value in single,
 * double or back quotes may span lines, and in double quotes `\n` and `\r` are newlines; an
 * unquoted value ends at `#`; lines that are not assignments are skipped. Every value is a string.
 */

/** dotenv's LINE expression (dotenv/lib/main.js). */
const assignment =
  /(?:^|^)\s*(?:export\s+)?([\w.-]+)(?:\s*=\s*?|:\s+?)(\s*'(?:\\'|[^'])*'|\s*"(?:\\"|[^"])*"|\s*`(?:\\`|[^`])*`|[^#\r\n]+)?\s*(?:#.*)?(?:$|$)/dgm;

export interface DotenvEntry {
  value: string;
  /** The 1-based line of the name, for messages. */
  line: number;
}

/** The file's variables by name, in order (a name given twice: the last one). */
export function parseDotenv(text: string): Map<string, DotenvEntry> {
  const lines = text.replace(/\r\n?/g, '\n');
  const entries = new Map<string, DotenvEntry>();
  for (const match of lines.matchAll(assignment)) {
    const name = match[1]!;
    let value = (match[2] ?? '').trim();
    const quote = value[0];
    value = value.replace(/^(['"`])([\s\S]*)\1$/gm, '$2');
    if (quote === '"') value = value.replace(/\\n/g, '\n').replace(/\\r/g, '\r');
    const at = match.indices![1]![0];
    entries.delete(name);
    entries.set(name, { value, line: lines.slice(0, at).split('\n').length });
  }
  return entries;
}
