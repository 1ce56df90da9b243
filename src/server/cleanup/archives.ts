/**
 * Environment archives on the server (docs/cleanup.md#undo): what the archive route takes from
 * the executor of a started delete job — gzip-compressed JSON, size-limited before and after
 * decompression, checked for what the databases can store and against the archive schema, and
 * for the job's namespace — sealed and stored; read back (Secrets unsealed) for `tend restore`;
 * summarised for `tend envs <id>` and the dashboard; pruned after the retention.
 *
 * With an archive key, the Secrets and the body are bound together by AES-256-GCM (the body is
 * the authenticated data): a change to either, or an archive moved to another environment, is
 * refused when read. Without one, Secrets are kept by name only and the restore names them.
 */
import { createHash } from 'node:crypto';
import { gunzipSync, gzipSync } from 'node:zlib';
import { newId } from '../../events/bus.js';
import {
  compressArchive,
  EnvironmentArchive,
  foreignArchivedObject,
  secretHasContent,
  type ArchiveMode,
  type ArchiveResponse,
  type ArchiveSummary,
  type ArchivedObject,
  type RestorableArchive,
} from '../../cleanup/archive.js';
import { TendError } from '../../errors.js';
import { schemaCheck, schemaProblems } from '../../schema-check.js';
import type { ArchiveRepository } from '../db/repositories/archives.js';
import type { CleanupJobRow, EnvironmentArchiveEntry, EnvironmentArchiveRow } from '../db/schema.js';
import type { Metrics } from '../metrics.js';
import { storableProblem } from '../../storable.js';
import { seal, unseal, type ArchiveKey } from './archive-key.js';

export interface ArchiveSettings {
  /** `--archive-retention` (default 7d, at most 365 days). */
  retentionMs: number;
  /** `--archive-max-size`: the largest compressed archive taken (default 8 MiB). */
  maxBytes: number;
  /** `--archive-key-file`: without it, Secrets are kept by name only. */
  key?: ArchiveKey;
}

/** A decompressed archive may be this many times its compressed limit (JSON compresses well; a zip bomb does not pass). */
const expansionLimit = 16;

export class ArchiveStore {
  constructor(
    private readonly archives: ArchiveRepository,
    private readonly metrics: Metrics,
    readonly settings: ArchiveSettings,
  ) {}

  /** What a job archives before it acts: only a delete, unless its policy says `archive: false`. */
  modeOf(action: string, policyArchive: number | null | undefined): ArchiveMode {
    if (action !== 'delete' || policyArchive === 0) return 'none';
    return this.settings.key ? 'with-secrets' : 'objects';
  }

  /** The route's body: gzip-compressed JSON, decompressed within bounds, then as `store`. */
  receive(job: CleanupJobRow, compressed: Buffer, now: Date): Promise<ArchiveResponse> {
    if (compressed.length > this.settings.maxBytes) {
      this.metrics.recordArchive('refused');
      throw new TendError(
        'TEND_SERVER_PAYLOAD_TOO_LARGE',
        `the archive of namespace ${job.namespace_name} is ${compressed.length} bytes compressed, over the limit of ${this.settings.maxBytes} bytes (--archive-max-size); not stored, so the namespace is not deleted: raise --archive-max-size, or set archive: false in the policy of an environment holding nothing worth keeping`,
      );
    }
    let json: Buffer;
    try {
      json = gunzipSync(compressed, { maxOutputLength: this.settings.maxBytes * expansionLimit });
    } catch (error) {
      this.metrics.recordArchive('refused');
      const tooLarge = (error as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE';
      throw tooLarge
        ? new TendError(
            'TEND_SERVER_PAYLOAD_TOO_LARGE',
            `the archive decompresses to more than ${(this.settings.maxBytes * expansionLimit) / 1_048_576} MiB; not stored (the namespace is not deleted)`,
          )
        : new TendError(
            'TEND_SERVER_BAD_REQUEST',
            `the archive is not gzip-compressed JSON: ${(error as Error).message}`,
          );
    }
    let value: unknown;
    try {
      value = JSON.parse(json.toString('utf8'));
    } catch (error) {
      this.metrics.recordArchive('refused');
      throw new TendError('TEND_SERVER_BAD_REQUEST', `the archive is not JSON: ${(error as Error).message}`);
    }
    return this.store(job, value, compressed.length, now);
  }

  /** Checks and stores the archive of a started delete job. */
  private async store(
    job: CleanupJobRow,
    value: unknown,
    compressedBytes: number,
    now: Date,
  ): Promise<ArchiveResponse> {
    const archive = this.check(job, value);
    const id = newId();
    const secrets = archive.kind === 'kubernetes' ? archive.secrets : [];
    const key = this.settings.key;
    const kept = key ? secrets.filter((s) => secretHasContent(s)) : [];
    const notKept = key
      ? secrets.filter((s) => !secretHasContent(s)).map((s) => s.metadata.name)
      : secrets.map((s) => s.metadata.name);
    const withoutSecrets: EnvironmentArchive =
      archive.kind === 'kubernetes'
        ? {
            ...archive,
            secrets: secrets.map((s) => ({ apiVersion: s.apiVersion, kind: s.kind, metadata: s.metadata })),
          }
        : archive;
    const body = compressArchive(withoutSecrets).toString('base64');
    const row: EnvironmentArchiveRow = {
      id,
      environment_id: job.environment_id,
      project: job.project ?? '',
      environment: job.environment ?? '',
      namespace_name: job.namespace_name ?? '',
      job_id: job.id,
      target_key: job.target_key ?? '',
      created_at: now.toISOString(),
      expires_at: new Date(now.getTime() + this.settings.retentionMs).toISOString(),
      body,
      size_bytes: compressedBytes,
      objects: archive.kind === 'kubernetes' ? archive.objects.length : 1,
      secrets: kept.length,
      // With a key the body is sealed too (an empty list of Secrets still authenticates it).
      secrets_sealed: key
        ? seal(key, gzipSync(JSON.stringify(kept)), aadOf(id, job.environment_id, body))
        : null,
      key_fingerprint: key?.fingerprint ?? null,
      secrets_not_kept: JSON.stringify(notKept),
      restored_at: null,
    };
    await this.archives.store(row);
    this.metrics.recordArchive('stored');
    return {
      archiveId: id,
      expiresAt: row.expires_at,
      objects: row.objects,
      secrets: kept.length,
      secretsNotKept: notKept,
    };
  }

  private check(job: CleanupJobRow, value: unknown): EnvironmentArchive {
    const refuse = (message: string) => {
      this.metrics.recordArchive('refused');
      return new TendError('TEND_SERVER_BAD_REQUEST', `the archive is refused: ${message}`);
    };
    const problem = storableProblem(value);
    if (problem) throw refuse(`${problem.path} ${problem.message}`);
    const check = schemaCheck(EnvironmentArchive);
    if (!check.Check(value)) {
      const [first] = schemaProblems(check.Errors(value), 1);
      throw refuse(`${first?.path ?? '/'} ${first?.message ?? 'does not match the archive schema'}`);
    }
    // A Kubernetes namespace's archive, or another plugin's environment's: never one for the other,
    // and a plugin's own archive only of that plugin's resource.
    if (
      (value.kind === 'kubernetes') !== (job.plugin === 'kubernetes') ||
      (value.kind === 'plugin' && value.pluginName !== job.plugin)
    ) {
      const of = value.kind === 'plugin' ? `plugin ${value.pluginName.slice(0, 64)}` : value.kind;
      throw refuse(`it is a ${of} archive, the job deletes a resource of plugin ${job.plugin ?? '?'}`);
    }
    const foreign = value.kind === 'kubernetes' ? foreignArchivedObject(value) : undefined;
    if (foreign) throw refuse(foreign);
    const name =
      value.kind === 'kubernetes'
        ? value.namespace.name
        : value.kind === 'plugin'
          ? value.name
          : value.path.split('/').pop();
    if (name !== job.namespace_name) {
      throw refuse(
        `it is of ${value.kind === 'kubernetes' ? 'namespace' : 'environment'} "${String(name).slice(0, 64)}", the job deletes "${job.namespace_name}"`,
      );
    }
    if (value.kind === 'kubernetes' && job.namespace_uid && value.namespace.uid !== job.namespace_uid) {
      throw refuse(
        `it is of namespace uid ${value.namespace.uid.slice(0, 64)}, the job deletes uid ${job.namespace_uid}`,
      );
    }
    return value;
  }

  /** The environment's latest archive, Secrets unsealed; TEND_ARCHIVE_NOT_FOUND or TEND_ARCHIVE (tampered, other key). */
  async restorable(
    environmentId: string,
    now: Date,
  ): Promise<{ row: EnvironmentArchiveEntry; archive: RestorableArchive }> {
    const row = await this.requireLatest(environmentId, now);
    const key = this.keyFor(row);
    const contents = await this.archives.contents(row.id);
    // Pruned between the two reads.
    if (!contents) throw notFound(environmentId);
    let secrets: ArchivedObject[] = [];
    if (contents.secrets_sealed !== null && key) {
      const plain = unseal(
        key,
        contents.secrets_sealed,
        aadOf(row.id, row.environment_id, contents.body),
        describe(row),
      );
      secrets = JSON.parse(gunzipSync(plain).toString('utf8')) as ArchivedObject[];
    }
    const archive = JSON.parse(
      gunzipSync(Buffer.from(contents.body, 'base64')).toString('utf8'),
    ) as EnvironmentArchive;
    if (archive.kind === 'kubernetes') {
      const byName = new Map(secrets.map((s) => [s.metadata.name, s]));
      archive.secrets = archive.secrets.map((s) => byName.get(s.metadata.name) ?? s);
    }
    return {
      row,
      archive: {
        archiveId: row.id,
        environmentId: row.environment_id,
        project: row.project,
        environment: row.environment,
        namespaceName: row.namespace_name,
        createdAt: row.created_at,
        expiresAt: row.expires_at,
        archive,
        missingSecrets: JSON.parse(row.secrets_not_kept) as string[],
      },
    };
  }

  /**
   * The key that unseals the archive's Secrets (undefined: it has none sealed); TEND_ARCHIVE when
   * this server has not the key it was sealed with.
   */
  keyFor(row: EnvironmentArchiveEntry): ArchiveKey | undefined {
    if (row.key_fingerprint === null) return undefined;
    const key = this.settings.key;
    if (!key || key.fingerprint !== row.key_fingerprint) {
      throw new TendError(
        'TEND_ARCHIVE',
        `${describe(row)} was sealed with archive key ${row.key_fingerprint}; this server has ${key ? `key ${key.fingerprint}` : 'no --archive-key-file'}: start it with the key the archive was taken with`,
      );
    }
    return key;
  }

  /** The environment's latest archive that has not expired, without its contents. */
  latestRow(environmentId: string, now: Date): Promise<EnvironmentArchiveEntry | undefined> {
    return this.archives.latest(environmentId, now);
  }

  /** The same, or TEND_ARCHIVE_NOT_FOUND. */
  async requireLatest(environmentId: string, now: Date): Promise<EnvironmentArchiveEntry> {
    const row = await this.latestRow(environmentId, now);
    if (!row) throw notFound(environmentId);
    return row;
  }

  async summary(environmentId: string, now: Date): Promise<ArchiveSummary | undefined> {
    const row = await this.archives.latest(environmentId, now);
    if (!row) return undefined;
    return {
      archiveId: row.id,
      namespaceName: row.namespace_name,
      createdAt: row.created_at,
      restorableUntil: row.expires_at,
      objects: Number(row.objects),
      secrets: Number(row.secrets),
      secretsNotKept: (JSON.parse(row.secrets_not_kept) as string[]).length,
      restoredAt: row.restored_at,
    };
  }

  markRestored(row: EnvironmentArchiveEntry, actor: string, now: Date): Promise<void> {
    return this.archives.markRestored(row.id, now, archiveAudit(row, actor, 'archive-restored'));
  }

  /** Audits that the archive was read for a restore (its Secrets unsealed). */
  audited(row: EnvironmentArchiveEntry, actor: string, now: Date): Promise<void> {
    return this.archives.audit(now, archiveAudit(row, actor, 'archive-read'));
  }

  /**
   * Deletes the expired archives (at start, then once an hour); how many. Expiry is capped to
   * the current retention first, so a lowered `--archive-retention` holds for every archive.
   */
  async prune(now: Date): Promise<number> {
    await this.archives.capExpiry(this.settings.retentionMs);
    const pruned = await this.archives.prune(now);
    this.metrics.recordArchive('pruned', pruned);
    return pruned;
  }

  totals(now: Date): Promise<{ count: number; bytes: number }> {
    return this.archives.totals(now);
  }
}

/** What the seal authenticates besides the Secrets: the archive's identity and its body. */
function aadOf(id: string, environmentId: string, body: string): Buffer {
  const digest = createHash('sha256').update(body).digest('hex');
  return Buffer.from(`tend-archive\0${id}\0${environmentId}\0${digest}`, 'utf8');
}

function describe(row: EnvironmentArchiveEntry): string {
  return `the archive ${row.id} of environment ${row.project}/${row.environment}`;
}

function notFound(environmentId: string): TendError {
  return new TendError(
    'TEND_ARCHIVE_NOT_FOUND',
    `environment ${environmentId.slice(0, 64)} has no archive that can be restored (none was taken, or it expired after --archive-retention)`,
  );
}

/** The audit entry of something done with an archive. */
function archiveAudit(
  row: EnvironmentArchiveEntry,
  actor: string,
  action: 'archive-read' | 'archive-restored',
) {
  return {
    actor,
    action,
    environmentId: row.environment_id,
    detail: {
      project: row.project,
      environment: row.environment,
      namespace: row.namespace_name,
      archiveId: row.id,
    },
  };
}
