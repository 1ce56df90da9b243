/**
 * The archive an executor takes of an environment right before it deletes it (docs/cleanup.md#undo):
 * what tend can re-create, stripped of what the API server owns, as the executor sends it
 * (`POST /api/v1/cleanup/jobs/:id/archive`, gzip-compressed JSON) and `tend restore` reads it
 * back. The server validates it with these schemas at the boundary, encrypts the Secrets with its
 * archive key or keeps only their names, and stores it for the retention.
 */
import type * as zlib from 'node:zlib';
import { Type, type Static } from 'typebox';
import { builtinModule } from '../builtin-module.js';
import { AnyKey } from '../schema-check.js';

/** The largest compressed archive the server takes by default (`--archive-max-size`). */
export const defaultArchiveMaxBytes = 8 * 1024 * 1024;

/** The most objects one archive holds: a namespace with more is refused (the job fails, nothing deleted). */
const maxArchivedObjects = 5_000;

/** The kinds archived (a restore creates them in install order: plugins/kubernetes/install-order.ts). */
export const archivedKinds = [
  { apiVersion: 'v1', kind: 'ServiceAccount' },
  { apiVersion: 'v1', kind: 'ConfigMap' },
  { apiVersion: 'v1', kind: 'Secret' },
  { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role' },
  { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding' },
  { apiVersion: 'v1', kind: 'PersistentVolumeClaim' },
  { apiVersion: 'v1', kind: 'Service' },
  { apiVersion: 'apps/v1', kind: 'Deployment' },
  { apiVersion: 'apps/v1', kind: 'StatefulSet' },
  { apiVersion: 'apps/v1', kind: 'DaemonSet' },
  { apiVersion: 'batch/v1', kind: 'CronJob' },
  { apiVersion: 'batch/v1', kind: 'Job' },
  { apiVersion: 'networking.k8s.io/v1', kind: 'Ingress' },
] as const;

/** An object's name as a path segment of the API takes it: never `.`, `..`, nor with `/` or `%`. */
const Name = () => Type.String({ minLength: 1, maxLength: 253, pattern: '^(?!\\.{1,2}$)[^/%]+$' });
const StringMap = () =>
  Type.Record(AnyKey(), Type.String({ maxLength: 262_144 }), {
    propertyNames: { minLength: 1, maxLength: 317 },
    maxProperties: 500,
  });

/**
 * One object as it will be re-created: apiVersion, kind, its name, labels and annotations, and
 * the rest of its body (spec, data, rules, …) without status or what the API server sets.
 */
export const ArchivedObject = Type.Object(
  {
    apiVersion: Type.String({ minLength: 1, maxLength: 253 }),
    kind: Type.String({ minLength: 1, maxLength: 63 }),
    metadata: Type.Object(
      {
        name: Name(),
        labels: Type.Optional(StringMap()),
        annotations: Type.Optional(StringMap()),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: true },
);
export type ArchivedObject = Static<typeof ArchivedObject> & Record<string, unknown>;

export const KubernetesArchive = Type.Object(
  {
    kind: Type.Literal('kubernetes'),
    namespace: Type.Object(
      { name: Name(), uid: Type.String({ maxLength: 100 }), labels: StringMap(), annotations: StringMap() },
      { additionalProperties: false },
    ),
    /** Everything but Secrets, in the order they were listed. */
    objects: Type.Array(ArchivedObject, { maxItems: maxArchivedObjects }),
    /** Secrets whole, as the executor read them; the server encrypts them or keeps only their names. */
    secrets: Type.Array(ArchivedObject, { maxItems: maxArchivedObjects }),
    /** What was not archived and why, for the restore to say (volume data, unlistable kinds). */
    notArchived: Type.Array(Type.String({ maxLength: 1000 }), { maxItems: 1000 }),
  },
  { additionalProperties: false },
);
export type KubernetesArchive = Static<typeof KubernetesArchive>;

/**
 * What the schema cannot say of a Kubernetes archive: every object of a kind tend archives (and
 * re-creates), Secrets only among the Secrets. The first object that breaks it, or undefined.
 */
export function foreignArchivedObject(archive: KubernetesArchive): string | undefined {
  const known = (o: ArchivedObject, secret: boolean) =>
    archivedKinds.some(
      (k) => k.apiVersion === o.apiVersion && k.kind === o.kind && (k.kind === 'Secret') === secret,
    );
  const index = archive.objects.findIndex((o) => !known(o, false));
  if (index >= 0) {
    const o = archive.objects[index]!;
    return `/objects/${index} is a ${o.apiVersion.slice(0, 64)} ${o.kind}: not a kind tend archives (nor a Secret, which goes in /secrets)`;
  }
  const secret = archive.secrets.findIndex((o) => !known(o, true));
  if (secret >= 0) return `/secrets/${secret} is not a v1 Secret`;
  return undefined;
}

/** An exec environment: its state record (processes, outputs), as the exec plugin keeps it. */
const ExecArchive = Type.Object(
  {
    kind: Type.Literal('exec'),
    path: Type.String({ minLength: 1, maxLength: 4096 }),
    state: Type.Unknown(),
    notArchived: Type.Array(Type.String({ maxLength: 1000 }), { maxItems: 1000 }),
  },
  { additionalProperties: false },
);

/**
 * Any other plugin's environment: what its cleanup handler archived before the deletion, in the
 * plugin's own shape (`content`, JSON), for its `restore` handler to read back. The server checks
 * that it is of the job's plugin and environment, and stores it as it is.
 */
export const PluginArchive = Type.Object(
  {
    kind: Type.Literal('plugin'),
    /** The plugin that took it: the job's plugin. */
    pluginName: Type.String({ minLength: 1, maxLength: 200 }),
    /** The environment's name in its target: the job's `namespaceName`. */
    name: Name(),
    /** What the plugin keeps to re-create the environment. */
    content: Type.Unknown(),
    /** What was not archived and why, for the restore to say. */
    notArchived: Type.Array(Type.String({ maxLength: 1000 }), { maxItems: 1000 }),
  },
  { additionalProperties: false },
);
export type PluginArchive = Static<typeof PluginArchive>;

export const EnvironmentArchive = Type.Union([KubernetesArchive, ExecArchive, PluginArchive]);
export type EnvironmentArchive = Static<typeof EnvironmentArchive>;

/**
 * What a job archives before it deletes: `none` (not a delete, or the policy says
 * `archive: false`), `objects` (the server has no archive key: Secrets by name only), or
 * `with-secrets`.
 */
export const ArchiveMode = Type.Union([
  Type.Literal('none'),
  Type.Literal('objects'),
  Type.Literal('with-secrets'),
]);
export type ArchiveMode = Static<typeof ArchiveMode>;

export const ArchiveResponse = Type.Object({
  archiveId: Type.String(),
  expiresAt: Type.String({ format: 'date-time' }),
  objects: Type.Integer({ minimum: 0 }),
  /** Secrets stored encrypted. */
  secrets: Type.Integer({ minimum: 0 }),
  /** Secrets kept by name only: the server has no archive key. */
  secretsNotKept: Type.Array(Type.String()),
});
export type ArchiveResponse = Static<typeof ArchiveResponse>;

/** An archive as `tend restore` reads it (admin): Secrets decrypted, or named as missing. */
export const RestorableArchive = Type.Object({
  archiveId: Type.String(),
  environmentId: Type.String(),
  project: Type.String(),
  environment: Type.String(),
  namespaceName: Type.String(),
  createdAt: Type.String({ format: 'date-time' }),
  expiresAt: Type.String({ format: 'date-time' }),
  archive: EnvironmentArchive,
  /** Secrets whose content was not kept (no archive key when it was taken). */
  missingSecrets: Type.Array(Type.String()),
});
export type RestorableArchive = Static<typeof RestorableArchive>;

/** Summary of an environment's archive, as `tend envs <id>` and the dashboard show it. */
export const ArchiveSummary = Type.Object({
  archiveId: Type.String(),
  namespaceName: Type.String(),
  createdAt: Type.String({ format: 'date-time' }),
  restorableUntil: Type.String({ format: 'date-time' }),
  objects: Type.Integer({ minimum: 0 }),
  secrets: Type.Integer({ minimum: 0 }),
  secretsNotKept: Type.Integer({ minimum: 0 }),
  restoredAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
});
export type ArchiveSummary = Static<typeof ArchiveSummary>;

/** Whether an archived Secret carries its content (not only its name). */
export function secretHasContent(secret: ArchivedObject): boolean {
  return 'data' in secret || 'stringData' in secret;
}

/**
 * The archive as the executor sends it: gzip-compressed JSON. (node:zlib loaded here, not with the
 * module: every Kubernetes command imports this one, few archive.)
 */
export function compressArchive(archive: EnvironmentArchive): Buffer {
  return builtinModule<typeof zlib>('node:zlib').gzipSync(Buffer.from(JSON.stringify(archive), 'utf8'));
}
