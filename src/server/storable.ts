/**
 * What the server's databases can store, checked at the HTTP boundary so bad input is a 400 and
 * never a 500 (docs/server.md, "What the server stores"): text without NUL characters (PostgreSQL
 * refuses them; SQLite is held to the same rule so both databases answer alike), well-formed
 * UTF-16 (a lone surrogate would be stored as U+FFFD, a different value than was sent), values
 * nested at most `maxNestingDepth` levels (checked before anything recurses into them), and
 * finite numbers (`limit=Infinity` passes the schema's coercion).
 */

/** Deepest nesting of objects and arrays inside one event (the envelope is 2 levels of it). */
export const maxNestingDepth = 32;

// In Unicode mode a surrogate pair is one code point: only a lone surrogate is \p{Cs}.
const loneSurrogate = /\p{Cs}/u;

/** What is wrong with a string, or undefined when it can be stored. */
export function textProblem(value: string): string | undefined {
  if (value.includes('\u0000')) return 'contains a NUL character (U+0000), which the server cannot store';
  if (loneSurrogate.test(value)) return 'contains a lone UTF-16 surrogate (not valid Unicode)';
  return undefined;
}

export interface StorableProblem {
  /** JSON pointer of the offending value (or key), each segment cut to 64 characters. */
  path: string;
  message: string;
}

const pointerSegment = (key: string) =>
  key.slice(0, 64).replaceAll('~', '~0').replaceAll('/', '~1').replaceAll('\u0000', '\\u0000');

/**
 * The first value inside `value` that cannot be stored, or undefined. Never recurses deeper
 * than `maxDepth`: a body of 10,000 nested arrays is refused at the limit, not by a stack overflow.
 */
export function storableProblem(value: unknown, maxDepth = maxNestingDepth): StorableProblem | undefined {
  const visit = (v: unknown, path: string, depth: number): StorableProblem | undefined => {
    if (typeof v === 'string') {
      const message = textProblem(v);
      return message ? { path: path || '/', message } : undefined;
    }
    if (typeof v === 'number') {
      return Number.isFinite(v) ? undefined : { path: path || '/', message: 'is not a finite number' };
    }
    if (typeof v !== 'object' || v === null) return undefined;
    if (depth >= maxDepth) {
      return { path: path || '/', message: `is nested deeper than ${maxDepth} levels` };
    }
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        const problem = visit(v[i], `${path}/${i}`, depth + 1);
        if (problem) return problem;
      }
      return undefined;
    }
    for (const [key, item] of Object.entries(v)) {
      const keyMessage = textProblem(key);
      if (keyMessage)
        return { path: `${path}/${pointerSegment(key)}`, message: `has a key that ${keyMessage}` };
      const problem = visit(item, `${path}/${pointerSegment(key)}`, depth + 1);
      if (problem) return problem;
    }
    return undefined;
  };
  return visit(value, '', 0);
}
