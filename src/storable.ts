/**
 * What the server's databases can store, checked at the HTTP boundary so bad input is a 400 and
 * never a 500 (docs/server.md, "What the server stores"): text without NUL characters (PostgreSQL
 * refuses them; SQLite is held to the same rule so both databases answer alike), well-formed
 * UTF-16 (a lone surrogate would be stored as U+FFFD, a different value than was sent), values
 * nested at most `maxNestingDepth` levels (checked before anything recurses into them), and
 * finite numbers (`limit=Infinity` passes the schema's coercion).
 */
import { pointerSegment } from './schema-check.js';

/** Deepest nesting of objects and arrays in one event (the envelope, payload and detail take 3). */
export const maxNestingDepth = 32;

// Fast test first (most text has neither); then, in Unicode mode, a surrogate pair is one code
// point: only a lone surrogate is \p{Cs}.
// eslint-disable-next-line no-control-regex -- finding NUL is the point
const nulOrSurrogate = /[\u0000\ud800-\udfff]/;
const loneSurrogate = /\p{Cs}/u;

/** What is wrong with a string, or undefined when it can be stored. */
export function textProblem(value: string): string | undefined {
  if (!nulOrSurrogate.test(value)) return undefined;
  if (value.includes('\u0000')) return 'contains a NUL character (U+0000), which the server cannot store';
  if (loneSurrogate.test(value)) return 'contains a lone UTF-16 surrogate (not valid Unicode)';
  return undefined;
}

export interface StorableProblem {
  /** JSON pointer of the offending value (or key), each segment cut to 64 characters. */
  path: string;
  message: string;
}

/** A problem found at some depth; its path is built on the way back up, only when there is one. */
interface Found {
  segments: string[];
  message: string;
}

/** Whether `v` can be stored: the fast pass over every event; the path is worked out only on failure. */
function storable(v: unknown, depth: number, maxDepth: number): boolean {
  switch (typeof v) {
    case 'string':
      return !nulOrSurrogate.test(v) || textProblem(v) === undefined;
    case 'number':
      return Number.isFinite(v);
    case 'object': {
      if (v === null) return true;
      if (depth >= maxDepth) return false;
      if (Array.isArray(v)) {
        for (let i = 0; i < v.length; i++) if (!storable(v[i], depth + 1, maxDepth)) return false;
        return true;
      }
      for (const key in v) {
        if (nulOrSurrogate.test(key) && textProblem(key) !== undefined) return false;
        if (!storable((v as Record<string, unknown>)[key], depth + 1, maxDepth)) return false;
      }
      return true;
    }
    default:
      return true;
  }
}

/**
 * The first value inside `value` that cannot be stored, or undefined. Never recurses deeper
 * than `maxDepth`: a body of 10,000 nested arrays is refused at the limit, not by a stack overflow.
 */
export function storableProblem(value: unknown, maxDepth = maxNestingDepth): StorableProblem | undefined {
  if (storable(value, 0, maxDepth)) return undefined;
  const visit = (v: unknown, depth: number): Found | undefined => {
    if (typeof v === 'string') {
      const message = textProblem(v);
      return message === undefined ? undefined : { segments: [], message };
    }
    if (typeof v === 'number') {
      return Number.isFinite(v) ? undefined : { segments: [], message: 'is not a finite number' };
    }
    if (typeof v !== 'object' || v === null) return undefined;
    if (depth >= maxDepth) return { segments: [], message: `is nested deeper than ${maxDepth} levels` };
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        const found = visit(v[i], depth + 1);
        if (found) {
          found.segments.push(String(i));
          return found;
        }
      }
      return undefined;
    }
    for (const key of Object.keys(v)) {
      const keyMessage = textProblem(key);
      if (keyMessage) return { segments: [pointerSegment(key)], message: `has a key that ${keyMessage}` };
      const found = visit((v as Record<string, unknown>)[key], depth + 1);
      if (found) {
        found.segments.push(pointerSegment(key));
        return found;
      }
    }
    return undefined;
  };
  const found = visit(value, 0);
  if (!found) return undefined;
  const path = found.segments
    .reverse()
    .map((segment) => `/${segment}`)
    .join('');
  return { path: path || '/', message: found.message };
}
