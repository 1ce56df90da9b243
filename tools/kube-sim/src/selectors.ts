/** Label and field selectors, compiled once per request into predicates. */
import type { KObject } from './types.js';
import { badRequest } from './types.js';

export type Predicate = (obj: KObject) => boolean;

type Requirement =
  { key: string; op: 'in' | 'notin'; values: string[] } | { key: string; op: 'exists' | '!exists' };

/** Split on commas that are not inside parentheses. */
function splitTerms(selector: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let cur = '';
  for (const ch of selector) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) {
      out.push(cur);
      cur = '';
    } else cur += ch;
  }
  out.push(cur);
  return out.map((t) => t.trim()).filter((t) => t !== '');
}

export function parseLabelSelector(selector: string): Requirement[] {
  const reqs: Requirement[] = [];
  for (const term of splitTerms(selector)) {
    let m = /^([A-Za-z0-9_./-]+)\s+(in|notin)\s+\(([^)]*)\)$/.exec(term);
    if (m) {
      const values = m[3]!
        .split(',')
        .map((v) => v.trim())
        .filter((v) => v !== '');
      reqs.push({ key: m[1]!, op: m[2] as 'in' | 'notin', values });
      continue;
    }
    m = /^([A-Za-z0-9_./-]+)\s*(==|=|!=)\s*([A-Za-z0-9_.-]*)$/.exec(term);
    if (m) {
      reqs.push({ key: m[1]!, op: m[2] === '!=' ? 'notin' : 'in', values: [m[3]!] });
      continue;
    }
    m = /^(!?)([A-Za-z0-9_./-]+)$/.exec(term);
    if (m) {
      reqs.push({ key: m[2]!, op: m[1] ? '!exists' : 'exists' });
      continue;
    }
    throw badRequest(`unable to parse requirement: found '${term}', expected: in, notin, =, ==, !=, gt, lt`);
  }
  return reqs;
}

export function matchLabels(reqs: Requirement[], labels: Record<string, string> | undefined): boolean {
  for (const r of reqs) {
    const v = labels?.[r.key];
    switch (r.op) {
      case 'exists':
        if (v === undefined) return false;
        break;
      case '!exists':
        if (v !== undefined) return false;
        break;
      case 'in':
        if (v === undefined || !r.values.includes(v)) return false;
        break;
      case 'notin':
        if (v !== undefined && r.values.includes(v)) return false;
        break;
    }
  }
  return true;
}

/** A `matchLabels`/`matchExpressions` selector as found in workload specs. */
export function matchesLabelSelectorObject(
  sel:
    | {
        matchLabels?: Record<string, string>;
        matchExpressions?: { key: string; operator: string; values?: string[] }[];
      }
    | undefined,
  labels: Record<string, string> | undefined,
): boolean {
  if (!sel) return false;
  for (const [k, v] of Object.entries(sel.matchLabels ?? {})) if (labels?.[k] !== v) return false;
  for (const e of sel.matchExpressions ?? []) {
    const v = labels?.[e.key];
    const op = e.operator;
    if (op === 'In' && (v === undefined || !(e.values ?? []).includes(v))) return false;
    if (op === 'NotIn' && v !== undefined && (e.values ?? []).includes(v)) return false;
    if (op === 'Exists' && v === undefined) return false;
    if (op === 'DoesNotExist' && v !== undefined) return false;
  }
  return true;
}

function fieldValue(obj: KObject, path: string): string {
  let cur: unknown = obj;
  for (const part of path.split('.')) {
    if (typeof cur !== 'object' || cur === null) return '';
    cur = (cur as Record<string, unknown>)[part];
  }
  if (cur === undefined || cur === null) return '';
  return String(cur);
}

export interface FieldSelector {
  predicate: Predicate;
  /** Set when the selector pins `metadata.name=x`, so the store can look it up directly. */
  name?: string;
  namespace?: string;
}

export function parseFieldSelector(selector: string): FieldSelector {
  const terms: { path: string; neg: boolean; value: string }[] = [];
  const out: FieldSelector = { predicate: () => true };
  for (const term of splitTerms(selector)) {
    const m = /^([A-Za-z0-9_.]+)\s*(==|=|!=)\s*(.*)$/.exec(term);
    if (!m) throw badRequest(`invalid selector: '${selector}'; can't understand '${term}'`);
    const t = { path: m[1]!, neg: m[2] === '!=', value: m[3]! };
    if (t.path === 'metadata.name' && !t.neg) out.name = t.value;
    if (t.path === 'metadata.namespace' && !t.neg) out.namespace = t.value;
    terms.push(t);
  }
  out.predicate = (obj) => terms.every((t) => (fieldValue(obj, t.path) === t.value) !== t.neg);
  return out;
}

export function compileSelectors(
  labelSelector?: string | null,
  fieldSelector?: string | null,
): {
  predicate: Predicate;
  name?: string;
  namespace?: string;
} {
  const preds: Predicate[] = [];
  let name: string | undefined;
  let namespace: string | undefined;
  if (labelSelector) {
    const reqs = parseLabelSelector(labelSelector);
    if (reqs.length) preds.push((o) => matchLabels(reqs, o.metadata.labels));
  }
  if (fieldSelector) {
    const fs = parseFieldSelector(fieldSelector);
    preds.push(fs.predicate);
    name = fs.name;
    namespace = fs.namespace;
  }
  const predicate: Predicate =
    preds.length === 0 ? () => true : preds.length === 1 ? preds[0]! : (o) => preds.every((p) => p(o));
  return {
    predicate,
    ...(name !== undefined ? { name } : {}),
    ...(namespace !== undefined ? { namespace } : {}),
  };
}
