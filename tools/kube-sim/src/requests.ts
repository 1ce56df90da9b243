/**
 * The request log: what every API request asked for (method, path, verb, resource, the namespace
 * it targets) and who asked (user agent), in arrival order. A ring buffer, so long runs keep
 * only the newest `capacity` requests. Lets a test check the wire rather than a client's word,
 * e.g. that every namespace a plugin touched was also reported.
 */

export interface RecordedRequest {
  /** 1, 2, 3, … in arrival order; never reused, also across `clear()`. */
  seq: number;
  /** Arrival time, ISO 8601. */
  time: string;
  method: string;
  /** URL path without the query. */
  path: string;
  /** get, list, watch, create, update, patch, delete, deletecollection (exec/attach: create). */
  verb: string;
  /** `pods`, `deployments.apps`, `pods/exec`, …; absent for discovery and unknown paths. */
  resource?: string;
  /**
   * The namespace the request targets: `<ns>` of `/api/v1/namespaces/<ns>/…`, or the Namespace
   * object's own name for namespace get, create, update, patch, delete, status and finalize.
   */
  namespace?: string;
  /** Who asked: `kube-sim-admin` (the simulator's token) or `system:serviceaccount:<ns>:<name>`; absent without a known token. */
  user?: string;
  userAgent?: string;
  /** A DELETE's `preconditions` (uid, resourceVersion) as its body sent them; absent when it sent none or was refused before its body was read. */
  preconditions?: { uid?: string; resourceVersion?: string };
  /** HTTP status of the answer (101 for exec/attach); absent while a watch or log stream is open, or when the connection was dropped. */
  status?: number;
}

export interface RequestQuery {
  /** Only requests with a `seq` greater than this (a value of `latest()` taken earlier). */
  since?: number;
}

export const DEFAULT_REQUEST_LOG_SIZE = 100_000;

export class RequestLog {
  private readonly ring: (RecordedRequest | undefined)[] = [];
  private next = 1;
  /** Seq of the oldest request still held. */
  private first = 1;
  /** Seq of the newest request forgotten by `clear()` (those are not counted as dropped). */
  private cleared = 0;

  constructor(readonly capacity = DEFAULT_REQUEST_LOG_SIZE) {
    if (!Number.isInteger(capacity) || capacity < 1)
      throw new Error(`kube-sim: the request log size must be a positive integer (got ${capacity})`);
  }

  /** Append a request; the returned entry may be completed later (namespace, status). */
  record(req: Omit<RecordedRequest, 'seq' | 'time'>): RecordedRequest {
    const entry: RecordedRequest = { seq: this.next++, time: new Date().toISOString(), ...req };
    this.ring[(entry.seq - 1) % this.capacity] = entry;
    if (entry.seq - this.first >= this.capacity) this.first = entry.seq - this.capacity + 1;
    return entry;
  }

  /** Recorded requests, oldest first (copies). */
  list(query: RequestQuery = {}): RecordedRequest[] {
    const out: RecordedRequest[] = [];
    const from = Math.max(this.first, (query.since ?? 0) + 1);
    for (let seq = from; seq < this.next; seq++) out.push({ ...this.ring[(seq - 1) % this.capacity]! });
    return out;
  }

  /** The namespaces the recorded requests targeted, sorted, each once. */
  namespacesTouched(query: RequestQuery = {}): string[] {
    const names = new Set<string>();
    for (const r of this.list(query)) if (r.namespace !== undefined) names.add(r.namespace);
    return [...names].sort();
  }

  /** Seq of the newest request recorded so far (0 before the first): a mark for `since`. */
  latest(): number {
    return this.next - 1;
  }

  /** How many requests fell out of the ring since the last clear. */
  dropped(): number {
    return this.first - 1 - this.cleared;
  }

  /** Forget every request recorded so far; sequence numbers keep counting. */
  clear(): void {
    this.ring.length = 0;
    this.first = this.next;
    this.cleared = this.next - 1;
  }
}
