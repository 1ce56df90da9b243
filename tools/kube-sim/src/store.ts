/**
 * The object store: one bucket per resource type, indexed by namespace then name, a global
 * resourceVersion counter, a bounded event history for watches that resume, and fan-out to
 * watchers. Stored objects are never mutated: every write stores a new object with its JSON
 * serialisation, so reads and lists hand out references and join precomputed strings.
 */
import { randomUUID } from 'node:crypto';
import type { ResourceType } from './resources.js';
import type { Predicate } from './selectors.js';
import type { KObject } from './types.js';
import { ApiError } from './types.js';

export interface Stored {
  readonly obj: KObject;
  readonly json: string;
  readonly rv: number;
}

export type EventType = 'ADDED' | 'MODIFIED' | 'DELETED';

export interface StoreEvent {
  type: EventType;
  rt: ResourceType;
  stored: Stored;
  /** The previous version for MODIFIED events. */
  old?: Stored;
}

export interface Watcher {
  namespace?: string;
  predicate: Predicate;
  send(type: EventType, stored: Stored): void;
}

class Bucket {
  readonly byNs = new Map<string, Map<string, Stored>>();
  size = 0;
  private sortedKeys: [string, string][] | null = null;
  readonly watchers = new Set<Watcher>();

  invalidate(): void {
    this.sortedKeys = null;
  }

  /** All [namespace, name] pairs in key order (namespace, then name), cached between creates/deletes. */
  keys(): [string, string][] {
    if (!this.sortedKeys) {
      const keys: [string, string][] = [];
      for (const ns of [...this.byNs.keys()].sort()) {
        for (const name of [...this.byNs.get(ns)!.keys()].sort()) keys.push([ns, name]);
      }
      this.sortedKeys = keys;
    }
    return this.sortedKeys;
  }
}

const HISTORY = 50_000;

export class Store {
  /** The clock creationTimestamp is stamped with (milliseconds since the epoch). */
  constructor(private readonly clock: () => number = Date.now) {}

  private rv = 1;
  private readonly buckets = new Map<string, Bucket>();
  private history: StoreEvent[] = [];
  private oldestRv = 1;
  private readonly listeners: ((ev: StoreEvent) => void)[] = [];

  get resourceVersion(): number {
    return this.rv;
  }

  /** The oldest resourceVersion a watch can resume from without a 410. */
  get compactedRv(): number {
    return this.oldestRv;
  }

  onEvent(listener: (ev: StoreEvent) => void): void {
    this.listeners.push(listener);
  }

  private bucket(rt: ResourceType): Bucket {
    let b = this.buckets.get(rt.key);
    if (!b) {
      b = new Bucket();
      this.buckets.set(rt.key, b);
    }
    return b;
  }

  getStored(rt: ResourceType, namespace: string, name: string): Stored | undefined {
    return this.buckets.get(rt.key)?.byNs.get(namespace)?.get(name);
  }

  get(rt: ResourceType, namespace: string, name: string): KObject | undefined {
    return this.getStored(rt, namespace, name)?.obj;
  }

  count(rt: ResourceType): number {
    return this.buckets.get(rt.key)?.size ?? 0;
  }

  /**
   * Objects in key order, optionally within one namespace and after `afterKey`. Stops after
   * `limit` matches and reports whether more matching objects remain.
   */
  list(
    rt: ResourceType,
    opts: { namespace?: string; predicate?: Predicate; after?: [string, string]; limit?: number } = {},
  ): { items: Stored[]; more: boolean; remaining: number } {
    const b = this.buckets.get(rt.key);
    const items: Stored[] = [];
    if (!b) return { items, more: false, remaining: 0 };
    const pred = opts.predicate;
    const limit = opts.limit && opts.limit > 0 ? opts.limit : Infinity;
    let keys: [string, string][];
    if (opts.namespace !== undefined) {
      const m = b.byNs.get(opts.namespace);
      keys = m ? [...m.keys()].sort().map((n) => [opts.namespace!, n] as [string, string]) : [];
    } else keys = b.keys();
    let start = 0;
    if (opts.after) {
      const [ans, aname] = opts.after;
      let lo = 0;
      let hi = keys.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        const [kns, kname] = keys[mid]!;
        if (kns < ans || (kns === ans && kname <= aname)) lo = mid + 1;
        else hi = mid;
      }
      start = lo;
    }
    let more = false;
    let remaining = 0;
    for (let i = start; i < keys.length; i++) {
      const [ns, name] = keys[i]!;
      const s = b.byNs.get(ns)?.get(name);
      if (!s) continue;
      if (pred && !pred(s.obj)) continue;
      if (items.length >= limit) {
        more = true;
        if (!pred) {
          remaining = keys.length - i;
          break;
        }
        remaining++;
        continue;
      }
      items.push(s);
    }
    return { items, more, remaining };
  }

  private nextRv(): number {
    return ++this.rv;
  }

  private record(ev: StoreEvent): void {
    this.history.push(ev);
    if (this.history.length > HISTORY * 2) {
      this.history = this.history.slice(-HISTORY);
      this.oldestRv = this.history[0]!.stored.rv - 1;
    }
    const b = this.buckets.get(ev.rt.key);
    if (b) {
      for (const w of b.watchers) {
        const ns = ev.stored.obj.metadata.namespace ?? '';
        if (w.namespace !== undefined && w.namespace !== ns) continue;
        if (ev.type === 'MODIFIED' && ev.old && !w.predicate(ev.stored.obj)) {
          // An object leaving the selection is seen as deleted by this watcher.
          if (w.predicate(ev.old.obj)) w.send('DELETED', ev.stored);
          continue;
        }
        if (!w.predicate(ev.stored.obj)) continue;
        if (ev.type === 'MODIFIED' && ev.old && !w.predicate(ev.old.obj)) w.send('ADDED', ev.stored);
        else w.send(ev.type, ev.stored);
      }
    }
    for (const l of this.listeners) l(ev);
  }

  private freeze(obj: KObject, rv: number): Stored {
    obj.metadata.resourceVersion = String(rv);
    return { obj, json: JSON.stringify(obj), rv };
  }

  /** Insert a new object; the caller has validated it. Assigns uid, timestamps and version. */
  insert(rt: ResourceType, obj: KObject): Stored {
    const ns = rt.namespaced ? (obj.metadata.namespace ?? '') : '';
    const name = obj.metadata.name!;
    const b = this.bucket(rt);
    let m = b.byNs.get(ns);
    if (!m) {
      m = new Map();
      b.byNs.set(ns, m);
    }
    if (m.has(name)) throw new Error('insert over existing object');
    obj.metadata.uid ??= randomUUID();
    obj.metadata.creationTimestamp ??= new Date(this.clock()).toISOString().replace(/\.\d+Z$/, 'Z');
    const stored = this.freeze(obj, this.nextRv());
    m.set(name, stored);
    b.size++;
    b.invalidate();
    this.record({ type: 'ADDED', rt, stored });
    return stored;
  }

  replace(rt: ResourceType, obj: KObject): Stored {
    const ns = rt.namespaced ? (obj.metadata.namespace ?? '') : '';
    const m = this.buckets.get(rt.key)?.byNs.get(ns);
    const old = m?.get(obj.metadata.name!);
    if (!m || !old) throw new Error('replace of missing object');
    const stored = this.freeze(obj, this.nextRv());
    m.set(obj.metadata.name!, stored);
    this.record({ type: 'MODIFIED', rt, stored, old });
    return stored;
  }

  remove(rt: ResourceType, namespace: string, name: string): Stored | undefined {
    const b = this.buckets.get(rt.key);
    const m = b?.byNs.get(namespace);
    const old = m?.get(name);
    if (!b || !m || !old) return undefined;
    m.delete(name);
    if (m.size === 0) b.byNs.delete(namespace);
    b.size--;
    b.invalidate();
    // The DELETED event carries the last state with a fresh resourceVersion, as etcd does.
    const obj = { ...old.obj, metadata: { ...old.obj.metadata } };
    const stored = this.freeze(obj, this.nextRv());
    this.record({ type: 'DELETED', rt, stored });
    return stored;
  }

  /** Names of the objects inside one namespace, per resource key. */
  contentsOf(namespace: string): Map<string, string[]> {
    const out = new Map<string, string[]>();
    for (const [key, b] of this.buckets) {
      const m = b.byNs.get(namespace);
      if (namespace !== '' && m && m.size) out.set(key, [...m.keys()]);
    }
    return out;
  }

  /**
   * Register a watcher. Events after `sinceRv` are replayed first; a version older than the
   * history raises 410 Expired.
   */
  watch(rt: ResourceType, w: Watcher, sinceRv: number | undefined): () => void {
    const b = this.bucket(rt);
    if (sinceRv !== undefined) {
      if (sinceRv < this.oldestRv) {
        throw new ApiError(410, 'Expired', `too old resource version: ${sinceRv} (${this.oldestRv})`);
      }
      // Binary search the first event after sinceRv.
      let lo = 0;
      let hi = this.history.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (this.history[mid]!.stored.rv <= sinceRv) lo = mid + 1;
        else hi = mid;
      }
      for (let i = lo; i < this.history.length; i++) {
        const ev = this.history[i]!;
        if (ev.rt !== rt) continue;
        const ns = ev.stored.obj.metadata.namespace ?? '';
        if (w.namespace !== undefined && w.namespace !== ns) continue;
        if (!w.predicate(ev.stored.obj)) continue;
        w.send(ev.type, ev.stored);
      }
    }
    b.watchers.add(w);
    return () => b.watchers.delete(w);
  }

  watcherCount(): number {
    let n = 0;
    for (const b of this.buckets.values()) n += b.watchers.size;
    return n;
  }
}
