/**
 * What the pods of namespaces request, for the cleanup inventory: one list of the cluster's pods
 * that have not finished (pages of 500, through the request gate), summed per namespace as the
 * scheduler counts a pod — its containers' requests added up, or its largest init container's
 * when that is larger — in millicores of CPU and bytes of memory. Quantities are Kubernetes'
 * (`250m`, `0.5`, `1e3`, `512Mi`, `1G`).
 */
import type { RequestGate } from './gate.js';
import { describeFailure } from './errors.js';
import type { List } from './wire.js';

export interface NamespaceRequests {
  cpuMillicores: number;
  memoryBytes: number;
  pods: number;
}

const binary: Record<string, number> = {
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};
const decimal: Record<string, number> = {
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
};

/** A Kubernetes quantity as a number of its unit (cores, bytes), or undefined when it is not one. */
export function parseQuantity(text: string): number | undefined {
  const m =
    /^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(?:([eE][+-]?[0-9]+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)$/.exec(
      text.trim(),
    );
  if (!m) return undefined;
  const base = Number(m[1]);
  const value =
    m[2] !== undefined ? Number(`${m[1]}${m[2]}`) : base * (binary[m[3] ?? ''] ?? decimal[m[3] ?? '']!);
  return Number.isFinite(value) && value >= 0 ? value : undefined;
}

interface ContainerLike {
  resources?: { requests?: Record<string, string | number> };
}
interface PodLike {
  metadata?: { namespace?: string };
  spec?: {
    containers?: ContainerLike[];
    initContainers?: ContainerLike[];
    overhead?: Record<string, string>;
  };
}

function requested(c: ContainerLike | undefined, resource: 'cpu' | 'memory'): number {
  const v = c?.resources?.requests?.[resource];
  return v === undefined ? 0 : (parseQuantity(String(v)) ?? 0);
}

/** One pod's requests as the scheduler reserves them: max(sum of containers, largest init container) + overhead. */
export function podRequests(pod: PodLike): { cpu: number; memory: number } {
  const of = (resource: 'cpu' | 'memory') => {
    const sum = (pod.spec?.containers ?? []).reduce((n, c) => n + requested(c, resource), 0);
    const init = Math.max(0, ...(pod.spec?.initContainers ?? []).map((c) => requested(c, resource)));
    const overhead = pod.spec?.overhead?.[resource];
    return Math.max(sum, init) + (overhead === undefined ? 0 : (parseQuantity(overhead) ?? 0));
  };
  return { cpu: of('cpu'), memory: of('memory') };
}

/** Rounded up to a whole unit, past the float noise of adding decimal quantities (never -0). */
const whole = (n: number) => Math.max(0, Math.ceil(n - 1e-6));

/** Upper bounds of the inventory item's fields: a sum past them says nothing a person could use. */
const maxMillicores = 1_000_000_000;

export class RequestCalls {
  constructor(private readonly gate: RequestGate) {}

  /**
   * The requests of the running (not finished) pods of each of `namespaces`; a namespace with no
   * such pod has zeros. Throws when the list fails (the caller leaves requests out then).
   */
  async byNamespace(
    namespaces: ReadonlySet<string>,
    pageSize = 500,
  ): Promise<Map<string, NamespaceRequests>> {
    const sums = new Map<string, { cpu: number; memory: number; pods: number }>();
    for (const ns of namespaces) sums.set(ns, { cpu: 0, memory: 0, pods: 0 });
    if (namespaces.size === 0) return new Map();
    let cont: string | undefined;
    do {
      const page = await this.gate.retry(
        'list pods',
        () =>
          this.gate.connection.request<List<PodLike>>({
            method: 'GET',
            path: '/api/v1/pods',
            query: {
              fieldSelector: 'status.phase!=Succeeded,status.phase!=Failed',
              limit: pageSize,
              continue: cont,
            },
          }),
        true,
      );
      for (const pod of page.items) {
        const sum = sums.get(pod.metadata?.namespace ?? '');
        if (!sum) continue;
        const r = podRequests(pod);
        sum.cpu += r.cpu;
        sum.memory += r.memory;
        sum.pods++;
      }
      cont = page.metadata?.continue || undefined;
      if (this.gate.ctx.signal.aborted) throw new Error('interrupted');
    } while (cont);
    const out = new Map<string, NamespaceRequests>();
    for (const [ns, s] of sums) {
      out.set(ns, {
        cpuMillicores: Math.min(maxMillicores, whole(s.cpu * 1000)),
        memoryBytes: Math.min(Number.MAX_SAFE_INTEGER, whole(s.memory)),
        pods: Math.min(1_000_000, s.pods),
      });
    }
    return out;
  }
}

/** Why listing pods failed, in a line. */
export function requestsFailure(error: unknown): string {
  const f = describeFailure(error);
  return `${f.status ?? f.networkCode ?? 'error'} ${f.message}`;
}
