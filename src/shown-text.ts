/**
 * Text from a user's input as a message shows it: cut to `max` characters, control characters,
 * quotes and lone surrogates escaped (JSON's escapes), so that a hostile value is named, never
 * echoed whole or raw to a terminal.
 */
export const shownText = (text: string, max = 64): string =>
  JSON.stringify(text.length <= max ? text : `${text.slice(0, max)}…`).slice(1, -1);
