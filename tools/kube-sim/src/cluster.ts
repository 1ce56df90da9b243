/**
 * API semantics on top of the store: create, update, patch, delete with the checks and
 * side effects of a real API server (namespaces, finalizers, owner references, status
 * subresources, generation). Used by the HTTP layer and by the simulated controllers.
 */
import { randomUUID } from 'node:crypto';
import { parse as parseYaml } from 'yaml';
import { jsonPatch, mergePatch, strategicMergePatch } from './patch.js';
import type { ResourceType } from './resources.js';
import { NS, RESOURCES, resourceForKind } from './resources.js';
import type { Stored } from './store.js';
import { Store } from './store.js';
import { Admission, type AdmissionRequest } from './admission.js';
import type { User } from './rbac.js';
import type { KObject } from './types.js';
import { ApiError, alreadyExists, badRequest, conflict, isPlainObject, notFound } from './types.js';
import { applyDefaults, hasGeneration, mergeStringData, validateObject } from './validation.js';

export interface DeleteOptions {
  propagationPolicy?: 'Foreground' | 'Background' | 'Orphan';
  preconditions?: { uid?: string; resourceVersion?: string };
  gracePeriodSeconds?: number;
  dryRun?: string[];
}

export interface WriteOptions {
  dryRun?: boolean;
  fieldManager?: string;
  force?: boolean;
  /** Who asks, for a write through the API: admitted (admission.ts). Controllers' writes are not. */
  requester?: User;
}

const NAME_CHARS = 'bcdfghjklmnpqrstvwxz2456789';
export function randomSuffix(n = 5): string {
  let s = '';
  for (let i = 0; i < n; i++) s += NAME_CHARS[Math.floor(Math.random() * NAME_CHARS.length)];
  return s;
}

export function now(): string {
  return new Date().toISOString().replace(/\.\d+Z$/, 'Z');
}

export class Cluster {
  constructor(clock?: () => number) {
    this.store = new Store(clock);
    this.admission = new Admission(this.store);
  }

  readonly store: Store;
  /** ValidatingAdmissionPolicies, for the writes made through the API. */
  readonly admission: Admission;
  /** Called (deferred) when a namespace is marked for deletion. */
  onNamespaceTerminating: (name: string) => void = () => {};

  getOrThrow(rt: ResourceType, namespace: string, name: string): Stored {
    const s = this.store.getStored(rt, rt.namespaced ? namespace : '', name);
    if (!s) throw notFound(rt.group, rt.plural, name);
    return s;
  }

  private checkNamespace(rt: ResourceType, namespace: string, name: string): void {
    if (!rt.namespaced) return;
    const ns = this.store.get(NS, '', namespace);
    if (!ns) throw notFound('', 'namespaces', namespace);
    if (ns.status?.phase === 'Terminating') {
      throw new ApiError(
        403,
        'Forbidden',
        `${rt.group ? `${rt.plural}.${rt.group}` : rt.plural} "${name}" is forbidden: unable to create new content in namespace ${namespace} because it is being terminated`,
        {
          name,
          ...(rt.group ? { group: rt.group } : {}),
          kind: rt.plural,
          causes: [
            {
              reason: 'NamespaceTerminating',
              message: `namespace ${namespace} is being terminated`,
              field: 'metadata.namespace',
            },
          ],
        },
      );
    }
  }

  private checkKind(rt: ResourceType, body: KObject): void {
    if (body.kind && body.kind !== rt.kind) {
      throw badRequest(
        `the API version in the data (${body.apiVersion}) does not match the expected API version (${rt.apiVersion}) or kind ${body.kind} is not ${rt.kind}`,
      );
    }
    if (body.apiVersion && body.apiVersion !== rt.apiVersion) {
      throw badRequest(
        `the API version in the data (${body.apiVersion}) does not match the expected API version (${rt.apiVersion})`,
      );
    }
  }

  create(rt: ResourceType, namespace: string, body: unknown, opts: WriteOptions = {}): Stored {
    if (!isPlainObject(body)) throw badRequest('the body of the request was in an unknown format');
    const obj = structuredClone(body) as KObject;
    this.checkKind(rt, obj);
    obj.apiVersion = rt.apiVersion;
    obj.kind = rt.kind;
    obj.metadata = isPlainObject(obj.metadata) ? obj.metadata : {};
    if (rt.namespaced) {
      if (obj.metadata.namespace && obj.metadata.namespace !== namespace) {
        throw badRequest(
          'the namespace of the provided object does not match the namespace sent on the request',
        );
      }
      obj.metadata.namespace = namespace;
    } else delete obj.metadata.namespace;
    if (!obj.metadata.name && obj.metadata.generateName) {
      obj.metadata.name = obj.metadata.generateName + randomSuffix();
    }
    for (const k of [
      'uid',
      'resourceVersion',
      'creationTimestamp',
      'deletionTimestamp',
      'generation',
      'selfLink',
    ]) {
      delete obj.metadata[k];
    }
    mergeStringData(rt, obj);
    validateObject(rt, obj);
    const name = obj.metadata.name!;
    this.checkNamespace(rt, namespace, name);
    if (this.store.getStored(rt, rt.namespaced ? namespace : '', name))
      throw alreadyExists(rt.group, rt.plural, name);
    obj.metadata.uid = randomUUID();
    if (hasGeneration(rt)) obj.metadata.generation = 1;
    applyDefaults(rt, obj);
    if (rt.kind === 'Job') this.defaultJobSelector(obj);
    if (opts.fieldManager) this.setManagedFields(obj, opts.fieldManager, 'Update');
    this.admit(rt, 'CREATE', obj, null, opts);
    if (opts.dryRun) {
      obj.metadata.creationTimestamp = now();
      return { obj, json: JSON.stringify(obj), rv: this.store.resourceVersion };
    }
    return this.store.insert(rt, obj);
  }

  private defaultJobSelector(obj: KObject): void {
    const uid = obj.metadata.uid!;
    const name = obj.metadata.name!;
    const spec = obj.spec;
    if (spec.manualSelector) return;
    spec.selector ??= { matchLabels: { 'batch.kubernetes.io/controller-uid': uid } };
    const tmeta = (spec.template.metadata ??= {});
    tmeta.labels = {
      ...(tmeta.labels ?? {}),
      'batch.kubernetes.io/controller-uid': uid,
      'batch.kubernetes.io/job-name': name,
      'controller-uid': uid,
      'job-name': name,
    };
  }

  private setManagedFields(obj: KObject, manager: string, operation: 'Apply' | 'Update'): void {
    const list = (Array.isArray(obj.metadata.managedFields) ? obj.metadata.managedFields : []) as {
      manager: string;
      operation: string;
    }[];
    const entry = {
      manager,
      operation,
      apiVersion: obj.apiVersion,
      time: now(),
      fieldsType: 'FieldsV1',
      fieldsV1: {},
    };
    const idx = list.findIndex((m) => m.manager === manager && m.operation === operation);
    if (idx >= 0) list[idx] = entry;
    else list.push(entry);
    obj.metadata.managedFields = list;
  }

  /**
   * Replace an object. `subresource` is `status` for status writes. The incoming
   * resourceVersion, when set, must match the stored one.
   */
  update(
    rt: ResourceType,
    namespace: string,
    name: string,
    body: unknown,
    opts: WriteOptions & { subresource?: string } = {},
  ): Stored {
    if (!isPlainObject(body)) throw badRequest('the body of the request was in an unknown format');
    const incoming = structuredClone(body) as KObject;
    this.checkKind(rt, incoming);
    incoming.metadata = isPlainObject(incoming.metadata) ? incoming.metadata : {};
    if (incoming.metadata.name && incoming.metadata.name !== name) {
      throw badRequest(
        `the name of the object (${incoming.metadata.name}) does not match the name on the URL (${name})`,
      );
    }
    const cur = this.getOrThrow(rt, namespace, name);
    const rv = incoming.metadata.resourceVersion;
    if (rv && rv !== cur.obj.metadata.resourceVersion) {
      throw conflict(
        rt.group,
        rt.plural,
        name,
        'the object has been modified; please apply your changes to the latest version and try again',
      );
    }
    if (incoming.metadata.uid && incoming.metadata.uid !== cur.obj.metadata.uid) {
      throw conflict(
        rt.group,
        rt.plural,
        name,
        `Precondition failed: UID in precondition: ${incoming.metadata.uid}, UID in object meta: ${cur.obj.metadata.uid}`,
      );
    }
    return this.commit(rt, cur, incoming, opts);
  }

  /** Write `next` over `cur`, keeping immutable fields and honouring the status subresource. */
  private commit(
    rt: ResourceType,
    cur: Stored,
    next: KObject,
    opts: WriteOptions & { subresource?: string; operation?: 'Apply' | 'Update' },
  ): Stored {
    const old = cur.obj;
    let obj: KObject;
    const hasStatus = rt.subresources.includes('status');
    if (opts.subresource === 'status') {
      obj = { ...old, metadata: { ...old.metadata }, status: next.status };
    } else if (opts.subresource === 'finalize') {
      // Namespaces' finalize subresource writes spec.finalizers and nothing else.
      const finalizers = (next.spec?.finalizers ?? []) as string[];
      obj = { ...old, metadata: { ...old.metadata }, spec: { ...(old.spec ?? {}) } };
      if (finalizers.length) obj.spec.finalizers = [...new Set(finalizers)];
      else delete obj.spec.finalizers;
    } else if (opts.subresource === '*') {
      obj = { ...next, metadata: { ...next.metadata } };
    } else {
      obj = { ...next, apiVersion: rt.apiVersion, kind: rt.kind };
      obj.metadata = { ...next.metadata };
      if (hasStatus) obj.status = old.status;
    }
    const meta = obj.metadata;
    meta.name = old.metadata.name!;
    if (rt.namespaced) meta.namespace = old.metadata.namespace!;
    else delete meta.namespace;
    meta.uid = old.metadata.uid!;
    meta.creationTimestamp = old.metadata.creationTimestamp!;
    if (old.metadata.deletionTimestamp) meta.deletionTimestamp = old.metadata.deletionTimestamp;
    else delete meta.deletionTimestamp;
    if (rt.kind === 'Namespace') {
      if (opts.subresource !== 'finalize') obj.spec = old.spec;
      meta.labels = { ...(meta.labels ?? {}), 'kubernetes.io/metadata.name': old.metadata.name! };
    }
    if (hasGeneration(rt)) {
      const changed = JSON.stringify(obj.spec) !== JSON.stringify(old.spec);
      meta.generation = (old.metadata.generation ?? 1) + (changed ? 1 : 0);
    }
    mergeStringData(rt, obj);
    validateObject(rt, obj, old);
    if (opts.fieldManager) this.setManagedFields(obj, opts.fieldManager, opts.operation ?? 'Update');
    this.admit(rt, 'UPDATE', obj, old, opts);
    if (opts.dryRun) {
      meta.resourceVersion = old.metadata.resourceVersion!;
      return { obj, json: JSON.stringify(obj), rv: cur.rv };
    }
    // Finalizers cleared on an object being deleted: it goes now. (One deleted gracefully, with
    // no finalizers, stays until its grace period ends.)
    if (
      meta.deletionTimestamp &&
      (old.metadata.finalizers ?? []).length > 0 &&
      (!meta.finalizers || meta.finalizers.length === 0) &&
      rt.kind !== 'Namespace'
    ) {
      this.store.replace(rt, obj);
      return this.store.remove(rt, meta.namespace ?? '', meta.name)!;
    }
    const replaced = this.store.replace(rt, obj);
    // A terminating namespace whose last finalizer went: the controller finishes it now.
    if (rt.kind === 'Namespace' && (old.metadata.finalizers ?? []).length > 0)
      this.finishNamespace(meta.name);
    return replaced;
  }

  patch(
    rt: ResourceType,
    namespace: string,
    name: string,
    contentType: string,
    rawBody: string,
    opts: WriteOptions & { subresource?: string } = {},
  ): Stored {
    const type = contentType.split(';')[0]!.trim();
    let patchBody: unknown;
    try {
      patchBody = type === 'application/apply-patch+yaml' ? parseYaml(rawBody) : JSON.parse(rawBody);
    } catch (e) {
      throw badRequest(`error decoding patch: ${(e as Error).message}`);
    }
    const existing = this.store.getStored(rt, rt.namespaced ? namespace : '', name);
    if (type === 'application/apply-patch+yaml') {
      if (!opts.fieldManager) {
        throw new ApiError(
          400,
          'BadRequest',
          'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch',
        );
      }
      if (!isPlainObject(patchBody)) throw badRequest('apply patch must be an object');
      const applied = patchBody as KObject;
      if (applied.metadata?.name && applied.metadata.name !== name) {
        throw badRequest(
          `the name of the object (${applied.metadata.name}) does not match the name on the URL (${name})`,
        );
      }
      if (!existing) {
        const body = { ...applied, metadata: { ...(applied.metadata ?? {}), name } };
        const created = this.create(rt, namespace, body, { ...opts, fieldManager: undefined });
        if (opts.dryRun) return created;
        const obj = structuredClone(created.obj);
        this.setManagedFields(obj, opts.fieldManager, 'Apply');
        return this.store.replace(rt, obj);
      }
      const merged = strategicMergePatch(structuredClone(existing.obj), stripReadOnly(applied)) as KObject;
      if (opts.subresource === 'status')
        return this.commit(rt, existing, merged, { ...opts, operation: 'Apply' });
      return this.commit(rt, existing, merged, { ...opts, operation: 'Apply' });
    }
    if (!existing) throw notFound(rt.group, rt.plural, name);
    let next: unknown;
    const base = structuredClone(existing.obj);
    switch (type) {
      case 'application/merge-patch+json':
        next = mergePatch(base, patchBody);
        break;
      case 'application/strategic-merge-patch+json':
        next = strategicMergePatch(base, patchBody);
        break;
      case 'application/json-patch+json':
        next = jsonPatch(base, patchBody);
        break;
      default:
        throw new ApiError(
          415,
          'UnsupportedMediaType',
          `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json`,
        );
    }
    if (!isPlainObject(next)) throw new ApiError(422, 'Invalid', 'patch produced a non-object');
    const nextObj = next as KObject;
    const rv = nextObj.metadata?.resourceVersion;
    if (rv && rv !== existing.obj.metadata.resourceVersion) {
      throw conflict(
        rt.group,
        rt.plural,
        name,
        'the object has been modified; please apply your changes to the latest version and try again',
      );
    }
    return this.commit(rt, existing, nextObj, opts);
  }

  /** Read-modify-write for controllers; `fn` edits a private copy. Returns undefined if gone. */
  mutate(
    rt: ResourceType,
    namespace: string,
    name: string,
    fn: (obj: KObject) => void,
    subresource = '*',
  ): Stored | undefined {
    const cur = this.store.getStored(rt, rt.namespaced ? namespace : '', name);
    if (!cur) return undefined;
    const copy = structuredClone(cur.obj);
    fn(copy);
    if (JSON.stringify(copy) === cur.json) return cur;
    return this.commit(rt, cur, copy, { subresource });
  }

  /** `requester`: who asks, for a delete through the API (admitted); controllers give none. */
  delete(
    rt: ResourceType,
    namespace: string,
    name: string,
    opts: DeleteOptions = {},
    requester?: User,
  ): Stored {
    const cur = this.getOrThrow(rt, namespace, name);
    const meta = cur.obj.metadata;
    const pre = opts.preconditions;
    if (pre?.uid && pre.uid !== meta.uid) {
      throw conflict(
        rt.group,
        rt.plural,
        name,
        `Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${meta.uid}`,
      );
    }
    if (pre?.resourceVersion && pre.resourceVersion !== meta.resourceVersion) {
      throw conflict(
        rt.group,
        rt.plural,
        name,
        `Precondition failed: ResourceVersion in precondition: ${pre.resourceVersion}, ResourceVersion in object meta: ${meta.resourceVersion}`,
      );
    }
    if (rt.kind === 'Namespace' && (name === 'default' || name === 'kube-system' || name === 'kube-public')) {
      throw new ApiError(
        403,
        'Forbidden',
        `namespaces "${name}" is forbidden: this namespace may not be deleted`,
        {
          name,
          kind: 'namespaces',
        },
      );
    }
    const dryRun = opts.dryRun?.includes('All') ?? false;
    this.admit(rt, 'DELETE', null, cur.obj, { dryRun, ...(requester ? { requester } : {}) });
    if (dryRun) return cur;
    if (rt.kind === 'Namespace') {
      if (cur.obj.status?.phase === 'Terminating') return cur;
      const obj = structuredClone(cur.obj);
      obj.metadata.deletionTimestamp = now();
      obj.metadata.deletionGracePeriodSeconds = 0;
      obj.status = {
        phase: 'Terminating',
        conditions: [
          {
            type: 'NamespaceDeletionDiscoveryFailure',
            status: 'False',
            lastTransitionTime: now(),
            reason: 'ResourcesDiscovered',
            message: 'All resources successfully discovered',
          },
          {
            type: 'NamespaceDeletionContentFailure',
            status: 'False',
            lastTransitionTime: now(),
            reason: 'ContentDeleted',
            message: 'All content successfully deleted, may be waiting on finalization',
          },
        ],
      };
      const stored = this.store.replace(rt, obj);
      this.onNamespaceTerminating(name);
      return stored;
    }
    const policy = opts.propagationPolicy ?? 'Background';
    const ns = rt.namespaced ? namespace : '';
    if (meta.deletionTimestamp) return cur;
    const finalizers = [...(meta.finalizers ?? [])];
    if (policy === 'Foreground') finalizers.push('foregroundDeletion');
    if (finalizers.length) {
      const obj = structuredClone(cur.obj);
      obj.metadata.deletionTimestamp = now();
      obj.metadata.deletionGracePeriodSeconds = 0;
      obj.metadata.finalizers = finalizers;
      const stored = this.store.replace(rt, obj);
      if (policy === 'Foreground') {
        this.deleteDependents(ns, meta.uid!, 'Foreground');
        this.mutate(rt, ns, name, (o) => {
          o.metadata.finalizers = (o.metadata.finalizers ?? []).filter((f) => f !== 'foregroundDeletion');
        });
      }
      return stored;
    }
    const removed = this.store.remove(rt, ns, name)!;
    if (policy === 'Orphan') this.orphanDependents(ns, meta.uid!);
    else queueMicrotask(() => this.deleteDependents(ns, meta.uid!, 'Background'));
    return removed;
  }

  /**
   * Validating admission of a write through the API (`opts.requester` set); `object` is what would
   * be stored, `oldObject` what is.
   */
  admit(
    rt: ResourceType,
    operation: AdmissionRequest['operation'],
    object: KObject | null,
    oldObject: KObject | null,
    opts: WriteOptions & { subresource?: string },
  ): void {
    if (!opts.requester) return;
    const meta = (object ?? oldObject)!.metadata;
    this.admission.check({
      operation,
      rt,
      ...(opts.subresource ? { subresource: opts.subresource } : {}),
      namespace: rt.kind === 'Namespace' ? meta.name! : (meta.namespace ?? ''),
      name: meta.name!,
      object,
      oldObject,
      dryRun: opts.dryRun === true,
      user: opts.requester,
    });
  }

  /**
   * Graceful deletion, as a pod's grace period: the object gets a `deletionTimestamp` now and
   * stays (writes to it keep it) until `endGracefulDeletion` removes it. False if it is gone or
   * already being deleted.
   */
  beginGracefulDeletion(rt: ResourceType, namespace: string, name: string, graceSeconds: number): boolean {
    const cur = this.store.getStored(rt, rt.namespaced ? namespace : '', name);
    if (!cur || cur.obj.metadata.deletionTimestamp) return false;
    const obj = structuredClone(cur.obj);
    obj.metadata.deletionTimestamp = now();
    obj.metadata.deletionGracePeriodSeconds = graceSeconds;
    this.store.replace(rt, obj);
    return true;
  }

  /** The end of a graceful deletion: the object goes, unless finalizers still hold it. */
  endGracefulDeletion(rt: ResourceType, namespace: string, name: string): void {
    const ns = rt.namespaced ? namespace : '';
    const cur = this.store.get(rt, ns, name);
    if (!cur?.metadata.deletionTimestamp || (cur.metadata.finalizers ?? []).length > 0) return;
    this.store.remove(rt, ns, name);
    queueMicrotask(() => this.deleteDependents(ns, cur.metadata.uid!, 'Background'));
  }

  /** Objects in `namespace` whose ownerReferences name `uid`. */
  dependents(namespace: string, uid: string): { rt: ResourceType; obj: KObject }[] {
    const out: { rt: ResourceType; obj: KObject }[] = [];
    for (const rt of RESOURCES) {
      if (!rt.namespaced) continue;
      for (const s of this.store.list(rt, { namespace }).items) {
        if (s.obj.metadata.ownerReferences?.some((r) => r.uid === uid)) out.push({ rt, obj: s.obj });
      }
    }
    return out;
  }

  private deleteDependents(namespace: string, uid: string, policy: 'Foreground' | 'Background'): void {
    for (const d of this.dependents(namespace, uid)) {
      try {
        this.delete(d.rt, namespace, d.obj.metadata.name!, { propagationPolicy: policy });
      } catch {
        // Already gone.
      }
    }
  }

  private orphanDependents(namespace: string, uid: string): void {
    for (const d of this.dependents(namespace, uid)) {
      this.mutate(d.rt, namespace, d.obj.metadata.name!, (o) => {
        o.metadata.ownerReferences = (o.metadata.ownerReferences ?? []).filter((r) => r.uid !== uid);
        if (o.metadata.ownerReferences.length === 0) delete o.metadata.ownerReferences;
      });
    }
  }

  /**
   * Remove every object in a namespace, then the namespace itself — unless finalizers still hold
   * it, as on a real cluster: any in `metadata.finalizers`, or one in `spec.finalizers` other
   * than the namespace controller's own (`kubernetes`). Clearing them finishes it.
   */
  finishNamespace(name: string): void {
    const ns = this.store.get(NS, '', name);
    if (!ns || ns.status?.phase !== 'Terminating') return;
    const held =
      (ns.metadata.finalizers ?? []).length > 0 ||
      ((ns.spec?.finalizers ?? []) as string[]).some((f) => f !== 'kubernetes');
    if (held) return;
    for (const [key, names] of this.store.contentsOf(name)) {
      const rt = RESOURCES.find((r) => r.key === key)!;
      for (const n of names) this.store.remove(rt, name, n);
    }
    this.store.remove(NS, '', name);
  }

  kindFor(apiVersion: string, kind: string): ResourceType | undefined {
    return resourceForKind(apiVersion, kind);
  }
}

function stripReadOnly(obj: KObject): KObject {
  const out = structuredClone(obj);
  if (out.metadata) {
    for (const k of ['uid', 'resourceVersion', 'creationTimestamp', 'generation', 'managedFields'])
      delete out.metadata[k];
  }
  return out;
}
