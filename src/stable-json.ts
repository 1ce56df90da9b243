/**
 * Deterministic JSON: object keys sorted, `undefined` members left out, so equal values give equal
 * text (action versions, event deduplication).
 */
export function stableStringify(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  // Loops and concatenation, not entries/filter/map/join: this runs for every action of every command.
  if (Array.isArray(value)) {
    let out = '[';
    for (let i = 0; i < value.length; i++) out += (i === 0 ? '' : ',') + stableStringify(value[i]);
    return `${out}]`;
  }
  const record = value as Record<string, unknown>;
  // sort() compares UTF-16 code units, as `<` does.
  const keys = Object.keys(record).sort();
  let out = '{';
  for (const key of keys) {
    const item = record[key];
    if (item === undefined) continue;
    out += `${out.length === 1 ? '' : ','}${JSON.stringify(key)}:${stableStringify(item)}`;
  }
  return `${out}}`;
}
