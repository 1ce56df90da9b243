/** Name validation, defaulting and write-only fields, with the messages a real API server returns. */
import { defaultRequests, qosClass, resourceProblems } from './quantities.js';
import { admissionProblems } from './admission.js';
import { rbacProblems } from './rbac.js';
import type { ResourceType } from './resources.js';
import type { KObject, StatusCause } from './types.js';
import { ApiError, badRequest, isPlainObject } from './types.js';

const LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

export function invalid(rt: ResourceType, name: string, causes: StatusCause[]): ApiError {
  const list = causes.map((c) => `${c.field}: ${c.message}`);
  const summary = list.length === 1 ? list[0]! : `[${list.join(', ')}]`;
  return new ApiError(422, 'Invalid', `${rt.kind} "${name}" is invalid: ${summary}`, {
    name,
    ...(rt.group ? { group: rt.group } : {}),
    kind: rt.kind,
    causes: causes.map((c) => ({
      reason: c.reason ?? 'FieldValueInvalid',
      message: c.message ?? '',
      field: c.field ?? '',
    })),
  });
}

export function nameProblem(rt: ResourceType, name: string): string | undefined {
  if (rt.labelNames) {
    if (name.length > 63) return `Invalid value: "${name}": must be no more than 63 characters`;
    if (!LABEL.test(name)) {
      return `Invalid value: "${name}": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`;
    }
    return undefined;
  }
  if (name.length > 253) return `Invalid value: "${name}": must be no more than 253 characters`;
  if (!SUBDOMAIN.test(name)) {
    return `Invalid value: "${name}": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`;
  }
  return undefined;
}

const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

/** Checks a create (or, with `old`, an update) as the API server's validation does: 422 Invalid. */
export function validateObject(rt: ResourceType, obj: KObject, old?: KObject): void {
  const name = obj.metadata.name ?? '';
  const causes: StatusCause[] = [];
  if (!name)
    causes.push({
      reason: 'FieldValueRequired',
      field: 'metadata.name',
      message: 'Required value: name or generateName is required',
    });
  else {
    const p = nameProblem(rt, name);
    if (p) causes.push({ field: 'metadata.name', message: p });
  }
  for (const [k, v] of Object.entries(obj.metadata.labels ?? {})) {
    if (typeof v !== 'string' || v.length > 63 || !LABEL_VALUE.test(v)) {
      causes.push({
        field: `metadata.labels`,
        message: `Invalid value: "${String(v)}": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (key ${k})`,
      });
    }
  }
  if (rt.kind === 'Pod') {
    const containers = obj.spec?.containers;
    if (!Array.isArray(containers) || containers.length === 0) {
      causes.push({ reason: 'FieldValueRequired', field: 'spec.containers', message: 'Required value' });
    } else {
      containers.forEach((c: { name?: string; image?: string }, i: number) => {
        if (!c.name)
          causes.push({
            reason: 'FieldValueRequired',
            field: `spec.containers[${i}].name`,
            message: 'Required value',
          });
        if (!c.image)
          causes.push({
            reason: 'FieldValueRequired',
            field: `spec.containers[${i}].image`,
            message: 'Required value',
          });
      });
    }
  }
  if (rt.kind === 'Pod')
    causes.push(...resourceProblems(obj.spec, 'spec'), ...containerListProblems(obj.spec, 'spec'));
  if (['Deployment', 'ReplicaSet', 'StatefulSet', 'DaemonSet', 'Job'].includes(rt.kind))
    causes.push(
      ...resourceProblems(obj.spec?.template?.spec, 'spec.template.spec'),
      ...containerListProblems(obj.spec?.template?.spec, 'spec.template.spec'),
    );
  if (['Deployment', 'ReplicaSet', 'StatefulSet', 'DaemonSet'].includes(rt.kind)) {
    const sel = obj.spec?.selector;
    if (!sel)
      causes.push({ reason: 'FieldValueRequired', field: 'spec.selector', message: 'Required value' });
    const containers = obj.spec?.template?.spec?.containers;
    if (!Array.isArray(containers) || containers.length === 0) {
      causes.push({
        reason: 'FieldValueRequired',
        field: 'spec.template.spec.containers',
        message: 'Required value',
      });
    }
  }
  if (rt.kind === 'PersistentVolumeClaim') {
    const spec = obj.spec ?? {};
    if (!Array.isArray(spec.accessModes) || spec.accessModes.length === 0)
      causes.push({
        reason: 'FieldValueRequired',
        field: 'spec.accessModes',
        message: 'Required value: at least 1 access mode is required',
      });
    if (!spec.resources?.requests?.storage)
      causes.push({
        reason: 'FieldValueRequired',
        field: 'spec.resources[storage]',
        message: 'Required value',
      });
    if (old && JSON.stringify(old.spec?.accessModes) !== JSON.stringify(spec.accessModes))
      causes.push({
        field: 'spec',
        message:
          'Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims',
      });
  }
  causes.push(...rbacProblems(rt, obj, old));
  causes.push(...admissionProblems(rt, obj));
  if (causes.length) throw invalid(rt, name, causes);
}

const GENERATION_KINDS = new Set(['Deployment', 'ReplicaSet', 'StatefulSet', 'DaemonSet', 'Job']);
export function hasGeneration(rt: ResourceType): boolean {
  return GENERATION_KINDS.has(rt.kind);
}

let nextClusterIp = 10;
function allocClusterIp(): string {
  const n = nextClusterIp++;
  return `10.96.${(n >> 8) & 255}.${n & 255}`;
}

/**
 * A container's list fields given as something else (a JSON string a template made, a mapping):
 * the API server cannot decode them and refuses the object, as here.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
function containerListProblems(spec: any, at: string): StatusCause[] {
  const causes: StatusCause[] = [];
  for (const key of ['containers', 'initContainers'] as const) {
    const containers: unknown = spec?.[key];
    if (!Array.isArray(containers)) continue;
    containers.forEach((c: Record<string, unknown> | null, i: number) => {
      for (const field of ['env', 'envFrom', 'ports', 'volumeMounts', 'command', 'args']) {
        const value = c?.[field];
        if (value !== undefined && value !== null && !Array.isArray(value))
          causes.push({
            reason: 'FieldValueInvalid',
            field: `${at}.${key}[${i}].${field}`,
            message: `Invalid value: ${JSON.stringify(value).slice(0, 80)}: must be a list`,
          });
      }
    });
  }
  return causes;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
function podSpecDefaults(spec: any, restartPolicy: string): void {
  spec.restartPolicy ??= restartPolicy;
  spec.terminationGracePeriodSeconds ??= 30;
  spec.dnsPolicy ??= 'ClusterFirst';
  spec.schedulerName ??= 'default-scheduler';
  spec.serviceAccountName ??= spec.serviceAccount ?? 'default';
  spec.securityContext ??= {};
  for (const c of [...(spec.containers ?? []), ...(spec.initContainers ?? [])]) {
    if (typeof c !== 'object' || c === null) continue;
    c.imagePullPolicy ??=
      typeof c.image === 'string' && (c.image.endsWith(':latest') || !/:[^/]+$/.test(c.image))
        ? 'Always'
        : 'IfNotPresent';
    c.terminationMessagePath ??= '/dev/termination-log';
    c.terminationMessagePolicy ??= 'File';
    c.resources ??= {};
  }
}

/** Fill in the defaults a real API server would, on create. */
export function applyDefaults(rt: ResourceType, obj: KObject): void {
  switch (rt.kind) {
    case 'Namespace':
      obj.spec = { finalizers: ['kubernetes'], ...(obj.spec ?? {}) };
      obj.status = { phase: 'Active' };
      obj.metadata.labels = {
        ...(obj.metadata.labels ?? {}),
        'kubernetes.io/metadata.name': obj.metadata.name!,
      };
      break;
    case 'Pod':
      podSpecDefaults((obj.spec ??= {}), 'Always');
      defaultRequests(obj.spec);
      obj.status = { phase: 'Pending', qosClass: qosClass(obj.spec) };
      break;
    case 'Service': {
      const spec = (obj.spec ??= {});
      spec.type ??= 'ClusterIP';
      spec.sessionAffinity ??= 'None';
      if (spec.clusterIP !== 'None') {
        spec.clusterIP ??= allocClusterIp();
        spec.clusterIPs ??= [spec.clusterIP];
      }
      for (const p of spec.ports ?? []) {
        p.protocol ??= 'TCP';
        p.targetPort ??= p.port;
      }
      obj.status = { loadBalancer: {} };
      break;
    }
    case 'Secret':
      obj.type ??= 'Opaque';
      break;
    case 'PersistentVolumeClaim': {
      // As on a cluster with a default provisioner: bound at once, with the size asked for.
      const spec = (obj.spec ??= {});
      spec.volumeMode ??= 'Filesystem';
      spec.storageClassName ??= 'standard';
      spec.volumeName ??= `pvc-${obj.metadata.uid}`;
      obj.status = {
        phase: 'Bound',
        accessModes: spec.accessModes,
        capacity: { storage: spec.resources?.requests?.storage },
      };
      break;
    }
    case 'Deployment': {
      const spec = (obj.spec ??= {});
      spec.replicas ??= 1;
      spec.revisionHistoryLimit ??= 10;
      spec.progressDeadlineSeconds ??= 600;
      spec.strategy ??= { type: 'RollingUpdate', rollingUpdate: { maxSurge: '25%', maxUnavailable: '25%' } };
      if (spec.template?.spec) podSpecDefaults(spec.template.spec, 'Always');
      obj.status = {};
      break;
    }
    case 'ReplicaSet':
    case 'StatefulSet': {
      const spec = (obj.spec ??= {});
      spec.replicas ??= 1;
      if (rt.kind === 'StatefulSet') {
        spec.podManagementPolicy ??= 'OrderedReady';
        spec.updateStrategy ??= { type: 'RollingUpdate', rollingUpdate: { partition: 0 } };
        spec.revisionHistoryLimit ??= 10;
      }
      if (spec.template?.spec) podSpecDefaults(spec.template.spec, 'Always');
      obj.status = { replicas: 0 };
      break;
    }
    case 'DaemonSet': {
      const spec = (obj.spec ??= {});
      spec.revisionHistoryLimit ??= 10;
      spec.updateStrategy ??= { type: 'RollingUpdate' };
      if (spec.updateStrategy.type === 'RollingUpdate')
        spec.updateStrategy.rollingUpdate = {
          maxUnavailable: 1,
          maxSurge: 0,
          ...spec.updateStrategy.rollingUpdate,
        };
      if (spec.template?.spec) podSpecDefaults(spec.template.spec, 'Always');
      obj.status = {
        currentNumberScheduled: 0,
        numberMisscheduled: 0,
        desiredNumberScheduled: 0,
        numberReady: 0,
      };
      break;
    }
    case 'Job': {
      const spec = (obj.spec ??= {});
      spec.backoffLimit ??= 6;
      spec.completions ??= 1;
      spec.parallelism ??= 1;
      spec.completionMode ??= 'NonIndexed';
      spec.suspend ??= false;
      spec.template ??= {};
      if (spec.template.spec) podSpecDefaults(spec.template.spec, 'Never');
      obj.status = {};
      break;
    }
  }
}

/**
 * A Secret's `stringData` is write-only: on every write (create, update, patch, apply) the API
 * server merges it into `data` as base64, its keys winning over `data`'s, and never stores it.
 */
export function mergeStringData(rt: ResourceType, obj: KObject): void {
  if (rt.kind !== 'Secret' || obj['stringData'] === undefined) return;
  const stringData = obj['stringData'];
  delete obj['stringData'];
  if (stringData === null) return;
  if (!isPlainObject(stringData) || Object.values(stringData).some((v) => typeof v !== 'string'))
    throw badRequest(
      'Secret in version "v1" cannot be handled as a Secret: stringData must map keys to strings',
    );
  const data = isPlainObject(obj['data']) ? { ...(obj['data'] as Record<string, unknown>) } : {};
  for (const [k, v] of Object.entries(stringData as Record<string, string>))
    data[k] = Buffer.from(v, 'utf8').toString('base64');
  obj['data'] = data;
}
