/** JSON merge patch (RFC 7386), strategic merge patch (common cases) and JSON patch (RFC 6902). */
import { ApiError, isPlainObject } from './types.js';

export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isPlainObject(patch)) return patch;
  const out: Record<string, unknown> = isPlainObject(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

/** Merge keys for lists of objects, by field name, as the Kubernetes API types declare them. */
const MERGE_KEYS: Record<string, string> = {
  containers: 'name',
  initContainers: 'name',
  ephemeralContainers: 'name',
  volumes: 'name',
  env: 'name',
  volumeMounts: 'mountPath',
  volumeDevices: 'devicePath',
  imagePullSecrets: 'name',
  hostAliases: 'ip',
  ownerReferences: 'uid',
  conditions: 'type',
  containerStatuses: 'name',
  initContainerStatuses: 'name',
  topologySpreadConstraints: 'topologyKey',
};
/** `ports` merges on containerPort in containers and on port in services. */
function mergeKeyFor(field: string, items: unknown[]): string | undefined {
  if (field === 'ports') {
    const first = items.find(isPlainObject);
    if (first && 'containerPort' in first) return 'containerPort';
    return 'port';
  }
  if (field === 'finalizers') return undefined;
  return MERGE_KEYS[field];
}
/** Lists of scalars that merge as sets rather than being replaced. */
const SET_LISTS = new Set(['finalizers']);

export function strategicMergePatch(target: unknown, patch: unknown): unknown {
  if (!isPlainObject(patch)) return patch;
  if (patch['$patch'] === 'replace') {
    const rest = { ...patch };
    delete rest['$patch'];
    return rest;
  }
  if (patch['$patch'] === 'delete') return undefined;
  const out: Record<string, unknown> = isPlainObject(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (k.startsWith('$setElementOrder/') || k === '$retainKeys' || k === '$patch') continue;
    if (k.startsWith('$deleteFromPrimitiveList/')) {
      const field = k.slice('$deleteFromPrimitiveList/'.length);
      const cur = out[field];
      if (Array.isArray(cur) && Array.isArray(v)) out[field] = cur.filter((x) => !v.includes(x));
      continue;
    }
    if (v === null) {
      delete out[k];
      continue;
    }
    const cur = out[k];
    if (Array.isArray(v)) {
      out[k] = mergeList(k, Array.isArray(cur) ? cur : [], v);
    } else if (isPlainObject(v)) {
      const merged = strategicMergePatch(cur, v);
      if (merged === undefined) delete out[k];
      else out[k] = merged;
    } else out[k] = v;
  }
  return out;
}

function mergeList(field: string, cur: unknown[], patch: unknown[]): unknown[] {
  if (patch.some((p) => isPlainObject(p) && p['$patch'] === 'replace')) {
    return patch.filter((p) => !(isPlainObject(p) && p['$patch'] === 'replace'));
  }
  if (SET_LISTS.has(field)) {
    const out = [...cur];
    for (const p of patch) if (!out.includes(p)) out.push(p);
    return out;
  }
  const key = mergeKeyFor(field, patch.length ? patch : cur);
  if (!key || !patch.every(isPlainObject)) return patch;
  const out = cur.map((x) => x);
  for (const p of patch as Record<string, unknown>[]) {
    const idx = out.findIndex((c) => isPlainObject(c) && c[key] === p[key]);
    if (p['$patch'] === 'delete') {
      if (idx >= 0) out.splice(idx, 1);
      continue;
    }
    if (idx >= 0) out[idx] = strategicMergePatch(out[idx], p);
    else out.push(strategicMergePatch({}, p));
  }
  return out;
}

interface JsonPatchOp {
  op: string;
  path: string;
  value?: unknown;
  from?: string;
}

function parsePointer(path: string): string[] {
  if (path === '') return [];
  if (!path.startsWith('/')) throw invalidPatch(`invalid JSON pointer ${path}`);
  return path
    .slice(1)
    .split('/')
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
}

function invalidPatch(message: string): ApiError {
  return new ApiError(422, 'Invalid', message);
}

function getAt(doc: unknown, parts: string[]): unknown {
  let cur = doc;
  for (const p of parts) {
    if (Array.isArray(cur)) cur = cur[Number(p)];
    else if (isPlainObject(cur)) cur = cur[p];
    else return undefined;
  }
  return cur;
}

export function jsonPatch(doc: unknown, ops: unknown): unknown {
  if (!Array.isArray(ops)) throw new ApiError(400, 'BadRequest', 'json patch must be an array of operations');
  let root = structuredClone(doc);
  for (const raw of ops as JsonPatchOp[]) {
    const parts = parsePointer(raw.path);
    const apply = (op: string, value?: unknown): void => {
      if (parts.length === 0) {
        if (op === 'remove') throw invalidPatch('cannot remove the root');
        root = value;
        return;
      }
      const parent = getAt(root, parts.slice(0, -1));
      const last = parts[parts.length - 1]!;
      if (Array.isArray(parent)) {
        const idx = last === '-' ? parent.length : Number(last);
        if (!Number.isInteger(idx) || idx < 0 || idx > parent.length) {
          throw invalidPatch(
            `the server rejected our request due to an error in our request: index ${last} out of range`,
          );
        }
        if (op === 'add') parent.splice(idx, 0, value);
        else if (idx >= parent.length) throw invalidPatch(`unable to ${op} nonexistent index ${idx}`);
        else if (op === 'remove') parent.splice(idx, 1);
        else parent[idx] = value;
      } else if (isPlainObject(parent)) {
        if (op !== 'add' && !(last in parent)) {
          throw invalidPatch(
            `the server rejected our request due to an error in our request: missing value at ${raw.path}`,
          );
        }
        if (op === 'remove') delete parent[last];
        else parent[last] = value;
      } else throw invalidPatch(`doc is missing path: "${raw.path}"`);
    };
    switch (raw.op) {
      case 'add':
      case 'replace':
        apply(raw.op, structuredClone(raw.value));
        break;
      case 'remove':
        apply('remove');
        break;
      case 'test':
        if (JSON.stringify(getAt(root, parts)) !== JSON.stringify(raw.value)) {
          throw invalidPatch(
            `the server rejected our request due to an error in our request: testing value ${raw.path} failed`,
          );
        }
        break;
      case 'copy':
      case 'move': {
        const from = parsePointer(raw.from ?? '');
        const v = structuredClone(getAt(root, from));
        if (raw.op === 'move') {
          const parent = getAt(root, from.slice(0, -1));
          const last = from[from.length - 1]!;
          if (Array.isArray(parent)) parent.splice(Number(last), 1);
          else if (isPlainObject(parent)) delete parent[last];
        }
        apply('add', v);
        break;
      }
      default:
        throw new ApiError(400, 'BadRequest', `unexpected json patch operation ${String(raw.op)}`);
    }
  }
  return root;
}
