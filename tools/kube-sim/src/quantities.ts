/**
 * Containers' resource quantities as a real API server treats them: a quantity that does not
 * parse is a 400 (the object cannot be decoded), a negative one or a request above its limit a
 * 422; requests left out default to the limits, and a pod's QoS class follows from both.
 */
import type { StatusCause } from './types.js';
import { badRequest } from './types.js';

const QUANTITY = /^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$/;
const SUFFIX = /^(?:[eE][+-]?[0-9]+|Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?$/;
const scale: Record<string, number> = {
  n: 1e-9,
  u: 1e-6,
  m: 1e-3,
  '': 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};

/** The value of a quantity, or throws the API server's decoding error. */
export function quantityValue(text: unknown): number {
  const s = String(text);
  const m = QUANTITY.exec(s);
  if (!m || !SUFFIX.test(m[2]!) || !/^[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)$/.test(m[1]!)) {
    throw badRequest(
      `quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'`,
    );
  }
  const suffix = m[2]!;
  return /^[eE]/.test(suffix) ? Number(`${m[1]}${suffix}`) : Number(m[1]) * scale[suffix]!;
}

interface Resources {
  requests?: Record<string, unknown>;
  limits?: Record<string, unknown>;
}
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type PodSpec = any;

function containersOf(spec: PodSpec): [string, { resources?: Resources }][] {
  const out: [string, { resources?: Resources }][] = [];
  for (const list of ['containers', 'initContainers'] as const) {
    const cs: unknown = spec?.[list];
    if (!Array.isArray(cs)) continue;
    cs.forEach((c, i) => {
      if (typeof c === 'object' && c !== null) out.push([`${list}[${i}]`, c as { resources?: Resources }]);
    });
  }
  return out;
}

/** Problems with the quantities of a pod spec (`at`: its field path); throws 400 for one that does not parse. */
export function resourceProblems(spec: PodSpec, at: string): StatusCause[] {
  const causes: StatusCause[] = [];
  for (const [path, c] of containersOf(spec)) {
    const r = c.resources ?? {};
    for (const kind of ['requests', 'limits'] as const) {
      for (const [name, q] of Object.entries(r[kind] ?? {})) {
        if (quantityValue(q) < 0) {
          causes.push({
            field: `${at}.${path}.resources.${kind}[${name}]`,
            message: `Invalid value: "${String(q)}": must be greater than or equal to 0`,
          });
        }
      }
    }
    for (const [name, q] of Object.entries(r.requests ?? {})) {
      const limit = r.limits?.[name];
      if (limit !== undefined && quantityValue(q) > quantityValue(limit)) {
        causes.push({
          field: `${at}.${path}.resources.requests`,
          message: `Invalid value: "${String(q)}": must be less than or equal to ${name} limit of ${String(limit)}`,
        });
      }
    }
  }
  return causes;
}

/** Requests left out default to the limits (what the API server does on create). */
export function defaultRequests(spec: PodSpec): void {
  for (const [, c] of containersOf(spec)) {
    const limits = c.resources?.limits;
    if (!limits) continue;
    const requests = (c.resources!.requests ??= {});
    for (const [name, q] of Object.entries(limits)) requests[name] ??= q;
  }
}

/** Guaranteed: every container's cpu and memory limits set and equal to its requests; BestEffort: none set. */
export function qosClass(spec: PodSpec): 'Guaranteed' | 'Burstable' | 'BestEffort' {
  const containers = containersOf(spec).map(([, c]) => c.resources ?? {});
  const any = containers.some(
    (r) => Object.keys(r.requests ?? {}).length > 0 || Object.keys(r.limits ?? {}).length > 0,
  );
  if (!any) return 'BestEffort';
  const guaranteed = containers.every((r) =>
    ['cpu', 'memory'].every(
      (name) =>
        r.limits?.[name] !== undefined &&
        quantityValue(r.limits[name]) === quantityValue(r.requests?.[name] ?? r.limits[name]),
    ),
  );
  return guaranteed ? 'Guaranteed' : 'Burstable';
}
