/** Shapes shared by every part of the simulator. Objects are plain JSON. */

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

export interface ObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
  generation?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: OwnerReference[];
  finalizers?: string[];
  [key: string]: unknown;
}

export interface KObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  spec?: any;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  status?: any;
  [key: string]: unknown;
}

export interface StatusCause {
  reason?: string;
  message?: string;
  field?: string;
}

/** A Kubernetes `Status` failure, thrown by handlers and written as the response body. */
export class ApiError extends Error {
  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
    readonly details?: {
      name?: string;
      group?: string;
      kind?: string;
      uid?: string;
      causes?: StatusCause[];
      retryAfterSeconds?: number;
    },
  ) {
    super(message);
  }

  toStatus(): Record<string, unknown> {
    return {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: this.message,
      reason: this.reason,
      ...(this.details ? { details: this.details } : {}),
      code: this.code,
    };
  }
}

export function groupResource(group: string, plural: string): string {
  return group ? `${plural}.${group}` : plural;
}

export function notFound(group: string, plural: string, name: string): ApiError {
  return new ApiError(404, 'NotFound', `${groupResource(group, plural)} "${name}" not found`, {
    name,
    ...(group ? { group } : {}),
    kind: plural,
  });
}

export function alreadyExists(group: string, plural: string, name: string): ApiError {
  return new ApiError(409, 'AlreadyExists', `${groupResource(group, plural)} "${name}" already exists`, {
    name,
    ...(group ? { group } : {}),
    kind: plural,
  });
}

export function conflict(group: string, plural: string, name: string, why: string): ApiError {
  return new ApiError(
    409,
    'Conflict',
    `Operation cannot be fulfilled on ${groupResource(group, plural)} "${name}": ${why}`,
    { name, ...(group ? { group } : {}), kind: plural },
  );
}

export function badRequest(message: string): ApiError {
  return new ApiError(400, 'BadRequest', message);
}

export function deepClone<T>(value: T): T {
  return structuredClone(value);
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
