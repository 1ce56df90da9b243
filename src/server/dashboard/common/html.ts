/**
 * HTML with escaping by default: `html\`<td>${value}</td>\`` escapes every interpolated value
 * unless it is already `Html` (the result of another `html` template or `raw`). Names that come
 * from events (projects, namespaces, users, commands) are attacker-controlled text.
 */

export class Html {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

const entities: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
  '`': '&#96;',
};

export function escapeHtml(value: string): string {
  return value.replace(/[&<>"'`]/g, (c) => entities[c] ?? c);
}

type Interpolation = Html | string | number | boolean | null | undefined | Interpolation[];

function render(value: Interpolation): string {
  if (value === null || value === undefined || value === false) return '';
  if (value instanceof Html) return value.value;
  if (Array.isArray(value)) return value.map(render).join('');
  return escapeHtml(String(value));
}

export function html(strings: TemplateStringsArray, ...values: Interpolation[]): Html {
  let out = strings[0] ?? '';
  values.forEach((v, i) => {
    out += render(v) + (strings[i + 1] ?? '');
  });
  return new Html(out);
}

/** Trusted markup, never built from input. */
export function raw(value: string): Html {
  return new Html(value);
}

/** "3m ago", "2h ago", "in 5h": a time relative to now, for people. */
export function relativeTime(iso: string | null, now: Date): string {
  if (!iso) return '—';
  const diff = now.getTime() - Date.parse(iso);
  const future = diff < 0;
  const s = Math.abs(diff) / 1000;
  const text =
    s < 45
      ? `${Math.round(s)}s`
      : s < 3600
        ? `${Math.round(s / 60)}m`
        : s < 86_400 * 2
          ? `${Math.round(s / 3600)}h`
          : `${Math.round(s / 86_400)}d`;
  return future ? `in ${text}` : `${text} ago`;
}
