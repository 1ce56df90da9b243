/**
 * Decoding of Kubernetes protobuf request bodies (`application/vnd.kubernetes.protobuf`).
 * kubectl's typed clients (`kubectl create namespace|configmap|secret|serviceaccount|
 * deployment|job`) send protobuf; this decodes the `k8s\0` envelope and the types those
 * commands produce into the JSON the rest of the simulator works with. Unknown fields are
 * skipped. Types outside the table get 415.
 */
import { ApiError } from './types.js';

type Kind =
  | 'string'
  | 'bytes'
  | 'int'
  | 'bool'
  | 'time'
  | 'intOrString'
  | 'quantity'
  | 'mapString'
  | 'mapBytes'
  | 'mapQuantity';
/** [json name, kind or message type, repeated] */
type Field = [string, Kind | { msg: string }, boolean?];
type Schema = Record<number, Field>;

const m = (msg: string): { msg: string } => ({ msg });

const SCHEMAS: Record<string, Schema> = {
  Unknown: {
    1: ['typeMeta', m('TypeMeta')],
    2: ['raw', 'bytes'],
    3: ['contentEncoding', 'string'],
    4: ['contentType', 'string'],
  },
  TypeMeta: { 1: ['apiVersion', 'string'], 2: ['kind', 'string'] },
  ObjectMeta: {
    1: ['name', 'string'],
    2: ['generateName', 'string'],
    3: ['namespace', 'string'],
    5: ['uid', 'string'],
    6: ['resourceVersion', 'string'],
    7: ['generation', 'int'],
    8: ['creationTimestamp', 'time'],
    11: ['labels', 'mapString'],
    12: ['annotations', 'mapString'],
    13: ['ownerReferences', m('OwnerReference'), true],
    14: ['finalizers', 'string', true],
  },
  OwnerReference: {
    1: ['kind', 'string'],
    3: ['name', 'string'],
    4: ['uid', 'string'],
    5: ['apiVersion', 'string'],
    6: ['controller', 'bool'],
    7: ['blockOwnerDeletion', 'bool'],
  },
  LabelSelector: {
    1: ['matchLabels', 'mapString'],
    2: ['matchExpressions', m('LabelSelectorRequirement'), true],
  },
  LabelSelectorRequirement: {
    1: ['key', 'string'],
    2: ['operator', 'string'],
    3: ['values', 'string', true],
  },
  Namespace: { 1: ['metadata', m('ObjectMeta')], 2: ['spec', m('NamespaceSpec')] },
  NamespaceSpec: { 1: ['finalizers', 'string', true] },
  ConfigMap: {
    1: ['metadata', m('ObjectMeta')],
    2: ['data', 'mapString'],
    3: ['binaryData', 'mapBytes'],
    4: ['immutable', 'bool'],
  },
  Secret: {
    1: ['metadata', m('ObjectMeta')],
    2: ['data', 'mapBytes'],
    3: ['type', 'string'],
    4: ['stringData', 'mapString'],
    5: ['immutable', 'bool'],
  },
  ServiceAccount: {
    1: ['metadata', m('ObjectMeta')],
    3: ['imagePullSecrets', m('LocalObjectReference'), true],
    4: ['automountServiceAccountToken', 'bool'],
  },
  LocalObjectReference: { 1: ['name', 'string'] },
  Service: { 1: ['metadata', m('ObjectMeta')], 2: ['spec', m('ServiceSpec')] },
  ServiceSpec: {
    1: ['ports', m('ServicePort'), true],
    2: ['selector', 'mapString'],
    3: ['clusterIP', 'string'],
    4: ['type', 'string'],
    7: ['sessionAffinity', 'string'],
  },
  ServicePort: {
    1: ['name', 'string'],
    2: ['protocol', 'string'],
    3: ['port', 'int'],
    4: ['targetPort', 'intOrString'],
    5: ['nodePort', 'int'],
  },
  Deployment: { 1: ['metadata', m('ObjectMeta')], 2: ['spec', m('DeploymentSpec')] },
  DeploymentSpec: {
    1: ['replicas', 'int'],
    2: ['selector', m('LabelSelector')],
    3: ['template', m('PodTemplateSpec')],
    4: ['strategy', m('DeploymentStrategy')],
    5: ['minReadySeconds', 'int'],
    6: ['revisionHistoryLimit', 'int'],
    7: ['paused', 'bool'],
    9: ['progressDeadlineSeconds', 'int'],
  },
  DeploymentStrategy: { 1: ['type', 'string'] },
  Job: { 1: ['metadata', m('ObjectMeta')], 2: ['spec', m('JobSpec')] },
  JobSpec: {
    1: ['parallelism', 'int'],
    2: ['completions', 'int'],
    3: ['activeDeadlineSeconds', 'int'],
    4: ['selector', m('LabelSelector')],
    5: ['manualSelector', 'bool'],
    6: ['template', m('PodTemplateSpec')],
    7: ['backoffLimit', 'int'],
    8: ['ttlSecondsAfterFinished', 'int'],
  },
  Pod: { 1: ['metadata', m('ObjectMeta')], 2: ['spec', m('PodSpec')] },
  PodTemplateSpec: { 1: ['metadata', m('ObjectMeta')], 2: ['spec', m('PodSpec')] },
  PodSpec: {
    2: ['containers', m('Container'), true],
    3: ['restartPolicy', 'string'],
    4: ['terminationGracePeriodSeconds', 'int'],
    5: ['activeDeadlineSeconds', 'int'],
    6: ['dnsPolicy', 'string'],
    7: ['nodeSelector', 'mapString'],
    8: ['serviceAccountName', 'string'],
    15: ['imagePullSecrets', m('LocalObjectReference'), true],
    20: ['initContainers', m('Container'), true],
  },
  Container: {
    1: ['name', 'string'],
    2: ['image', 'string'],
    3: ['command', 'string', true],
    4: ['args', 'string', true],
    5: ['workingDir', 'string'],
    6: ['ports', m('ContainerPort'), true],
    7: ['env', m('EnvVar'), true],
    8: ['resources', m('ResourceRequirements')],
    14: ['imagePullPolicy', 'string'],
    16: ['stdin', 'bool'],
    17: ['stdinOnce', 'bool'],
    18: ['tty', 'bool'],
  },
  ContainerPort: {
    1: ['name', 'string'],
    2: ['hostPort', 'int'],
    3: ['containerPort', 'int'],
    4: ['protocol', 'string'],
  },
  EnvVar: { 1: ['name', 'string'], 2: ['value', 'string'] },
  ResourceRequirements: { 1: ['limits', 'mapQuantity'], 2: ['requests', 'mapQuantity'] },
  IntOrString: { 1: ['type', 'int'], 2: ['intVal', 'int'], 3: ['strVal', 'string'] },
  Time: { 1: ['seconds', 'int'], 2: ['nanos', 'int'] },
  Quantity: { 1: ['string', 'string'] },
};

class Reader {
  pos = 0;
  constructor(readonly buf: Buffer) {}
  get done(): boolean {
    return this.pos >= this.buf.length;
  }
  varint(): number {
    let result = 0;
    let mul = 1;
    for (;;) {
      if (this.pos >= this.buf.length) throw new Error('truncated varint');
      const b = this.buf[this.pos++]!;
      result += (b & 0x7f) * mul;
      if ((b & 0x80) === 0) break;
      mul *= 128;
    }
    return result;
  }
  bytes(): Buffer {
    const len = this.varint();
    const out = this.buf.subarray(this.pos, this.pos + len);
    this.pos += len;
    return out;
  }
  skip(wire: number): void {
    if (wire === 0) this.varint();
    else if (wire === 1) this.pos += 8;
    else if (wire === 2) this.bytes();
    else if (wire === 5) this.pos += 4;
    else throw new Error(`unsupported wire type ${wire}`);
  }
}

function toSigned(n: number): number {
  // int32/int64 negative values are 10-byte varints; map them back.
  return n >= 2 ** 63 ? n - 2 ** 64 : n;
}

function decodeMap(buf: Buffer, valueKind: 'string' | 'bytes' | 'quantity'): [string, string] {
  const r = new Reader(buf);
  let k = '';
  let v = '';
  while (!r.done) {
    const tag = r.varint();
    const field = Math.floor(tag / 8);
    const wire = tag & 7;
    if (wire !== 2) {
      r.skip(wire);
      continue;
    }
    const b = r.bytes();
    if (field === 1) k = b.toString('utf8');
    else if (field === 2) {
      if (valueKind === 'bytes') v = b.toString('base64');
      else if (valueKind === 'quantity') v = String(decodeMessage(b, 'Quantity')['string'] ?? '');
      else v = b.toString('utf8');
    }
  }
  return [k, v];
}

function decodeMessage(buf: Buffer, type: string): Record<string, unknown> {
  const schema = SCHEMAS[type];
  if (!schema) throw new Error(`no schema for ${type}`);
  const out: Record<string, unknown> = {};
  const r = new Reader(buf);
  while (!r.done) {
    const tag = r.varint();
    const num = Math.floor(tag / 8);
    const wire = tag & 7;
    const f = schema[num];
    if (!f) {
      r.skip(wire);
      continue;
    }
    const [name, kind, repeated] = f;
    let value: unknown;
    if (typeof kind === 'object') value = decodeMessage(r.bytes(), kind.msg);
    else {
      switch (kind) {
        case 'string':
          value = r.bytes().toString('utf8');
          break;
        case 'bytes':
          value = r.bytes();
          break;
        case 'int':
          value = toSigned(r.varint());
          break;
        case 'bool':
          value = r.varint() !== 0;
          break;
        case 'time': {
          const t = decodeMessage(r.bytes(), 'Time');
          const secs = Number(t['seconds'] ?? 0);
          value = secs ? new Date(secs * 1000).toISOString().replace(/\.\d+Z$/, 'Z') : undefined;
          break;
        }
        case 'intOrString': {
          const t = decodeMessage(r.bytes(), 'IntOrString');
          value = t['type'] === 1 ? (t['strVal'] ?? '') : (t['intVal'] ?? 0);
          break;
        }
        case 'quantity':
          value = decodeMessage(r.bytes(), 'Quantity')['string'];
          break;
        case 'mapString':
        case 'mapBytes':
        case 'mapQuantity': {
          const [k, v] = decodeMap(
            r.bytes(),
            kind === 'mapBytes' ? 'bytes' : kind === 'mapQuantity' ? 'quantity' : 'string',
          );
          const map = (out[name] ??= {}) as Record<string, string>;
          map[k] = v;
          continue;
        }
      }
    }
    if (value === undefined || value === '') {
      if (repeated && value === '') ((out[name] ??= []) as unknown[]).push('');
      continue;
    }
    if (repeated) ((out[name] ??= []) as unknown[]).push(value);
    else out[name] = value;
  }
  return out;
}

export const PROTOBUF = 'application/vnd.kubernetes.protobuf';

/** Decode a `k8s\0`-prefixed protobuf body into a JSON object. */
export function decodeProtobuf(body: Buffer): Record<string, unknown> {
  if (body.length < 4 || body.subarray(0, 4).toString('latin1') !== 'k8s\0') {
    throw new ApiError(
      400,
      'BadRequest',
      'the body of the request was in an unknown format: missing protobuf envelope',
    );
  }
  let unknown: Record<string, unknown>;
  try {
    unknown = decodeMessage(body.subarray(4), 'Unknown');
  } catch (e) {
    throw new ApiError(400, 'BadRequest', `error decoding protobuf: ${(e as Error).message}`);
  }
  const tm = (unknown['typeMeta'] ?? {}) as { apiVersion?: string; kind?: string };
  const kind = tm.kind ?? '';
  if (
    !SCHEMAS[kind] ||
    !['Namespace', 'ConfigMap', 'Secret', 'ServiceAccount', 'Service', 'Deployment', 'Job', 'Pod'].includes(
      kind,
    )
  ) {
    throw new ApiError(
      415,
      'UnsupportedMediaType',
      `kube-sim cannot decode protobuf for kind ${kind || '(unknown)'}; send application/json (e.g. kubectl create -f / kubectl apply -f)`,
    );
  }
  let obj: Record<string, unknown>;
  try {
    obj = decodeMessage((unknown['raw'] as Buffer | undefined) ?? Buffer.alloc(0), kind);
  } catch (e) {
    throw new ApiError(400, 'BadRequest', `error decoding protobuf ${kind}: ${(e as Error).message}`);
  }
  return { apiVersion: tm.apiVersion, kind, ...obj };
}
