/**
 * Fault injection: rules matched against each API request by verb, resource and namespace.
 * Rules fire with probability `rate` (default 1) and at most `times` times (default forever).
 */
import { randomUUID } from 'node:crypto';

export type FaultType =
  /** Delay the response by `ms`. */
  | 'latency'
  /** Answer with `status` (default 500; 429 carries `Retry-After: retryAfterSeconds`). */
  | 'error'
  /** Destroy the socket without answering. */
  | 'drop'
  /** Carry the request out, then destroy the socket instead of answering (a lost answer). */
  | 'drop-response'
  /** Lists fail with `status` (default 500). Same as `error` restricted to list. */
  | 'list-fail'
  /** Lists return at most `keep` items (default half) and no continue token. */
  | 'list-truncate'
  /** Lists that continue a previous page answer 410 Expired. */
  | 'continue-expire';

export interface FaultRule {
  type: FaultType;
  /** get, list, watch, create, update, patch, delete, deletecollection; omitted = any. */
  verb?: string | string[];
  /** `pods`, `deployments` (or `deployments.apps`), `pods/log`, `pods/*`; omitted = any. */
  resource?: string | string[];
  namespace?: string;
  ms?: number;
  status?: number;
  retryAfterSeconds?: number;
  keep?: number;
  rate?: number;
  times?: number;
  message?: string;
}

export interface ActiveFault extends FaultRule {
  id: string;
  fired: number;
}

export interface RequestInfo {
  verb: string;
  /** plural, with `.group` for named groups, plus `/subresource`. */
  resource: string;
  plural: string;
  subresource?: string;
  namespace?: string;
}

const TYPES: FaultType[] = [
  'latency',
  'error',
  'drop',
  'drop-response',
  'list-fail',
  'list-truncate',
  'continue-expire',
];

export class Faults {
  private rules: ActiveFault[] = [];

  add(rule: FaultRule): string {
    if (!TYPES.includes(rule.type))
      throw new Error(`unknown fault type ${String(rule.type)}; expected one of ${TYPES.join(', ')}`);
    if (rule.rate !== undefined && (rule.rate < 0 || rule.rate > 1))
      throw new Error('rate must be between 0 and 1');
    const id = randomUUID();
    this.rules.push({ ...rule, id, fired: 0 });
    return id;
  }

  remove(id: string): boolean {
    const n = this.rules.length;
    this.rules = this.rules.filter((r) => r.id !== id);
    return this.rules.length !== n;
  }

  clear(): void {
    this.rules = [];
  }

  list(): ActiveFault[] {
    return this.rules.map((r) => ({ ...r }));
  }

  /** How many times the rule has fired. */
  fired(id: string): number {
    return this.rules.find((r) => r.id === id)?.fired ?? 0;
  }

  /** The rules of the given types that fire for this request, each counted once. */
  take(info: RequestInfo, types: FaultType[]): ActiveFault[] {
    const out: ActiveFault[] = [];
    for (const r of this.rules) {
      if (!types.includes(r.type)) continue;
      if (r.times !== undefined && r.fired >= r.times) continue;
      if (!matches(r, info)) continue;
      if (r.rate !== undefined && r.rate < 1 && Math.random() >= r.rate) continue;
      r.fired++;
      out.push(r);
    }
    return out;
  }
}

function asList(v: string | string[] | undefined): string[] | undefined {
  return v === undefined ? undefined : Array.isArray(v) ? v : [v];
}

function matches(rule: FaultRule, info: RequestInfo): boolean {
  const verbs = asList(rule.verb);
  if (verbs && !verbs.includes('*') && !verbs.includes(info.verb)) return false;
  if (rule.type === 'list-fail' || rule.type === 'list-truncate' || rule.type === 'continue-expire') {
    if (info.verb !== 'list') return false;
  }
  const resources = asList(rule.resource);
  if (resources && !resources.includes('*')) {
    const full = info.subresource ? `${info.resource}/${info.subresource}` : info.resource;
    const short = info.subresource ? `${info.plural}/${info.subresource}` : info.plural;
    const ok = resources.some(
      (r) =>
        r === full ||
        r === short ||
        (r.endsWith('/*') &&
          info.subresource !== undefined &&
          (r === `${info.resource}/*` || r === `${info.plural}/*`)),
    );
    if (!ok) return false;
  }
  if (rule.namespace !== undefined && rule.namespace !== info.namespace) return false;
  return true;
}
