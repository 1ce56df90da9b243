/**
 * `patchResources` of a kubernetes Deploy, as Garden applies them (`kubectl patch --dry-run=client`)
 * to the manifests before they are applied: each object gets the first patch whose `kind` and
 * `name` are its own. Strategies (docs/kubernetes.md#patchresources):
 * - `strategic` (the default): Kubernetes' strategic merge patch for the lists it merges by key —
 *   containers, env, volumes, volumeMounts, ports… (the table below, from the Kubernetes API's
 *   patchMergeKey tags) — and the `$patch: replace | delete` directives; other lists are
 *   replaced, `null` removes a key.
 * - `merge`: a JSON merge patch (RFC 7386): mappings merged, lists replaced, `null` removes.
 * - `json`: a JSON patch (RFC 6902): a list of `add`, `remove`, `replace`, `move`, `copy`, `test`.
 */

export type PatchStrategy = 'strategic' | 'merge' | 'json';

export interface PatchResource {
  kind: string;
  name: string;
  strategy?: PatchStrategy;
  patch: unknown;
}

/** A patch that cannot be applied; the message says which operation and why. */
export class PatchError extends Error {
  override name = 'PatchError';
}

type Mapping = Record<string, unknown>;

function isMapping(value: unknown): value is Mapping {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** The object patched (a new one; the given object is not changed). */
export function applyPatch(object: unknown, patch: PatchResource): unknown {
  const strategy = patch.strategy ?? 'strategic';
  if (strategy === 'json') {
    if (!Array.isArray(patch.patch)) {
      throw new PatchError('a json patch is a list of operations ({ op, path, value })');
    }
    return applyJsonPatch(object, patch.patch);
  }
  if (!isMapping(patch.patch)) {
    throw new PatchError(`a ${strategy} patch is a mapping (the fields to change); a list is a json patch`);
  }
  return strategy === 'merge' ? mergePatch(object, patch.patch) : strategicMerge(object, patch.patch);
}

/** RFC 7386. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isMapping(patch)) return structuredClone(patch);
  const out: Mapping = isMapping(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key];
    else out[key] = mergePatch(out[key], value);
  }
  return out;
}

/**
 * The key each list is merged by, by field name (the Kubernetes API's patchMergeKey). `ports`
 * is a container's (`containerPort`) or a Service's (`port`), told apart by its items.
 */
const mergeKeys: Record<string, string | ((items: Mapping[]) => string)> = {
  containers: 'name',
  initContainers: 'name',
  ephemeralContainers: 'name',
  env: 'name',
  volumes: 'name',
  volumeMounts: 'mountPath',
  volumeDevices: 'devicePath',
  imagePullSecrets: 'name',
  hostAliases: 'ip',
  topologySpreadConstraints: 'topologyKey',
  ownerReferences: 'uid',
  conditions: 'type',
  ports: (items) => (items.some((item) => 'containerPort' in item) ? 'containerPort' : 'port'),
};

/** Lists of plain values Kubernetes merges as sets. */
const mergedSets = new Set(['finalizers']);

/** Kubernetes' strategic merge patch, for the keys of `mergeKeys`. */
export function strategicMerge(target: unknown, patch: unknown): unknown {
  if (!isMapping(patch)) return structuredClone(patch);
  const directive = patch.$patch;
  if (directive === 'replace') {
    const { $patch: _replace, ...rest } = patch;
    return strategicMerge({}, rest);
  }
  if (directive !== undefined) {
    throw new PatchError(
      `$patch: ${JSON.stringify(directive)} is not a directive tend applies to a mapping (replace)`,
    );
  }
  const out: Mapping = isMapping(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (key.startsWith('$setElementOrder/') || key === '$retainKeys') continue;
    if (value === null) delete out[key];
    else if (Array.isArray(value)) out[key] = mergeList(key, out[key], value);
    else if (isMapping(value) && value.$patch === 'delete') delete out[key];
    else out[key] = strategicMerge(out[key], value);
  }
  return out;
}

function mergeList(field: string, target: unknown, patch: unknown[]): unknown[] {
  const current = Array.isArray(target) ? target : [];
  if (mergedSets.has(field)) return [...new Set([...current, ...patch])];
  const rule = mergeKeys[field];
  const key = typeof rule === 'function' ? rule([...current, ...patch].filter(isMapping)) : rule;
  if (key === undefined || patch.some((item) => !isMapping(item))) {
    // A list Kubernetes does not merge is replaced (as a whole; `$patch: replace` items dropped).
    return patch
      .filter((item) => !(isMapping(item) && item.$patch !== undefined))
      .map((item) => structuredClone(item));
  }
  const items = patch as Mapping[];
  // `- $patch: replace` in a list: the list is the patch's other items.
  const replace = items.some((item) => item.$patch === 'replace');
  const out = replace ? [] : current.map((item) => structuredClone(item) as unknown);
  for (const item of items) {
    if (item.$patch === 'replace') continue;
    const index = out.findIndex((existing) => isMapping(existing) && existing[key] === item[key]);
    if (item.$patch === 'delete') {
      if (index >= 0) out.splice(index, 1);
      continue;
    }
    if (index >= 0) out[index] = strategicMerge(out[index], item);
    else out.push(strategicMerge({}, item));
  }
  return out;
}

/** `/a/b~1c` → ['a', 'b/c']. */
function pointer(path: unknown, what: string): string[] {
  if (typeof path !== 'string' || (path !== '' && !path.startsWith('/'))) {
    throw new PatchError(`${what} must be a JSON pointer ("/spec/replicas"), got ${JSON.stringify(path)}`);
  }
  return path === ''
    ? []
    : path
        .slice(1)
        .split('/')
        .map((s) => s.replaceAll('~1', '/').replaceAll('~0', '~'));
}

/** The container of a pointer's last segment, and that segment. */
function parentOf(document: unknown, segments: string[], path: string): [Mapping | unknown[], string] {
  let node: unknown = document;
  for (const segment of segments.slice(0, -1)) {
    node = Array.isArray(node) ? node[Number(segment)] : isMapping(node) ? node[segment] : undefined;
    if (node === undefined) throw new PatchError(`path ${path} does not exist in the object`);
  }
  if (!Array.isArray(node) && !isMapping(node)) {
    throw new PatchError(`path ${path} does not exist in the object`);
  }
  return [node, segments.at(-1)!];
}

function arrayIndex(list: unknown[], segment: string, path: string, adding: boolean): number {
  if (adding && segment === '-') return list.length;
  const index = /^(0|[1-9][0-9]*)$/.test(segment) ? Number(segment) : NaN;
  if (!(index >= 0 && index < list.length + (adding ? 1 : 0))) {
    throw new PatchError(`path ${path}: no item ${segment} in a list of ${list.length}`);
  }
  return index;
}

function read(document: unknown, path: string): unknown {
  let node = document;
  for (const segment of pointer(path, 'from')) {
    node = Array.isArray(node) ? node[Number(segment)] : isMapping(node) ? node[segment] : undefined;
    if (node === undefined) throw new PatchError(`path ${path} does not exist in the object`);
  }
  return node;
}

function remove(document: unknown, path: string): unknown {
  const [parent, last] = parentOf(document, pointer(path, 'path'), path);
  if (Array.isArray(parent)) return parent.splice(arrayIndex(parent, last, path, false), 1)[0];
  if (!Object.hasOwn(parent, last)) throw new PatchError(`path ${path} does not exist in the object`);
  const value = parent[last];
  delete parent[last];
  return value;
}

function add(document: unknown, path: string, value: unknown): unknown {
  const segments = pointer(path, 'path');
  if (segments.length === 0) return value;
  const [parent, last] = parentOf(document, segments, path);
  if (Array.isArray(parent)) parent.splice(arrayIndex(parent, last, path, true), 0, value);
  else parent[last] = value;
  return document;
}

/** RFC 6902, on a copy of the document. */
export function applyJsonPatch(document: unknown, operations: readonly unknown[]): unknown {
  let out = structuredClone(document);
  operations.forEach((operation, index) => {
    const at = `operation ${index} (${JSON.stringify(operation)})`;
    if (!isMapping(operation)) throw new PatchError(`${at}: an operation is a mapping { op, path, … }`);
    const { op, path } = operation;
    const needs = (key: 'value' | 'from') => {
      if (!(key in operation)) throw new PatchError(`${at}: "${String(op)}" needs "${key}"`);
    };
    try {
      switch (op) {
        case 'add':
          needs('value');
          out = add(out, String(path), structuredClone(operation.value));
          break;
        case 'remove':
          pointer(path, 'path');
          remove(out, String(path));
          break;
        case 'replace':
          needs('value');
          pointer(path, 'path');
          if (String(path) === '') out = structuredClone(operation.value);
          else {
            remove(out, String(path));
            out = add(out, String(path), structuredClone(operation.value));
          }
          break;
        case 'move':
        case 'copy': {
          needs('from');
          const from = String(operation.from);
          pointer(path, 'path');
          const value = op === 'move' ? remove(out, from) : structuredClone(read(out, from));
          out = add(out, String(path), value);
          break;
        }
        case 'test':
          needs('value');
          if (JSON.stringify(read(out, String(path))) !== JSON.stringify(operation.value)) {
            throw new PatchError(`path ${String(path)} is not ${JSON.stringify(operation.value)}`);
          }
          break;
        default:
          throw new PatchError(
            `unknown op ${JSON.stringify(op)}; expected add, remove, replace, move, copy or test`,
          );
      }
    } catch (error) {
      if (error instanceof PatchError && !error.message.startsWith(at)) {
        throw new PatchError(`${at}: ${error.message}`);
      }
      throw error;
    }
  });
  return out;
}
