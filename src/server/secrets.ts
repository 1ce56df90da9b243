/**
 * The project secrets `${secrets.NAME}` reads, as `tend server` keeps them: per project, and per
 * environment (an environment's value overrides the project-wide one). Values are sealed at rest
 * with AES-256-GCM under the `--secrets-key-file` key (the archives' sealing,
 * cleanup/archive-key.ts), bound to their project, environment and name, so that a value copied
 * onto another row in the database fails to open. Values leave this module only in `values`, the
 * answer of the one route the CLI reads them with; nothing here logs, audits or returns them
 * elsewhere.
 */
import { TendError } from '../errors.js';
import { archiveKeyOf, openSealed, seal, type ArchiveKey } from './cleanup/archive-key.js';
import type { AuditRepository } from './db/repositories/audit.js';
import type { ProjectSecretEntry, SecretRepository } from './db/repositories/secrets.js';
import { readSecretFile } from './secret-file.js';

export { secretNamePattern, secretValueMaxLength } from '../config/secrets-file.js';
/** The most secrets one project holds, every environment's together. */
export const secretsPerProjectMax = 500;

export type SecretsKey = ArchiveKey;

export function readSecretsKey(file: string): SecretsKey {
  return archiveKeyOf(readSecretFile('--secrets-key-file', file), file, '--secrets-key-file');
}

/** Where a secret is: its project and environment ('' for project-wide). */
export interface SecretPlace {
  project: string;
  /** '' or undefined: the project-wide value. */
  environment?: string;
}

export interface SecretListing {
  name: string;
  /** null: project-wide. */
  environment: string | null;
  createdAt: string;
  updatedAt: string;
  updatedBy: string;
}

function aadOf(project: string, environment: string, name: string): Buffer {
  return Buffer.from(`tend-secret\0${project}\0${environment}\0${name}`, 'utf8');
}

function describe(place: SecretPlace, name: string): string {
  return place.environment
    ? `secret ${name} of project ${place.project}, environment ${place.environment}`
    : `secret ${name} of project ${place.project}`;
}

export class ProjectSecrets {
  constructor(
    private readonly repository: SecretRepository,
    private readonly audit: AuditRepository,
    /** `--secrets-key-file`; undefined: the server keeps no secrets (writes and reads are refused). */
    private readonly key: SecretsKey | undefined,
    private readonly now: () => Date,
  ) {}

  private requireKey(): SecretsKey {
    if (!this.key) {
      throw new TendError(
        'TEND_SECRETS_KEY',
        'this server keeps no secrets: start tend server with --secrets-key-file <file> (a 32-byte key: openssl rand -hex 32)',
      );
    }
    return this.key;
  }

  async set(place: SecretPlace, name: string, value: string, actor: string): Promise<SecretListing> {
    const key = this.requireKey();
    const environment = place.environment ?? '';
    const existing = await this.repository.list(place.project);
    const replaces = existing.some((e) => e.environment === environment && e.name === name);
    if (!replaces && existing.length >= secretsPerProjectMax) {
      throw new TendError(
        'TEND_SERVER_BAD_REQUEST',
        `project ${place.project} holds ${existing.length} secrets, the most a project may hold (${secretsPerProjectMax}); delete some first`,
      );
    }
    const now = this.now().toISOString();
    const created = existing.find((e) => e.environment === environment && e.name === name)?.created_at;
    await this.repository.put({
      project: place.project,
      environment,
      name,
      value_sealed: seal(key, Buffer.from(value, 'utf8'), aadOf(place.project, environment, name)),
      key_fingerprint: key.fingerprint,
      created_at: created ?? now,
      updated_at: now,
      updated_by: actor,
    });
    await this.audit.record({
      actor,
      action: 'secret-set',
      detail: { project: place.project, environment: environment || null, name, replaced: replaces },
      now: this.now(),
    });
    return {
      name,
      environment: environment || null,
      createdAt: created ?? now,
      updatedAt: now,
      updatedBy: actor,
    };
  }

  async list(project: string): Promise<SecretListing[]> {
    return (await this.repository.list(project)).map(listing);
  }

  async delete(place: SecretPlace, name: string, actor: string): Promise<void> {
    const environment = place.environment ?? '';
    if (!(await this.repository.delete(place.project, environment, name))) {
      throw new TendError('TEND_SECRET_NOT_FOUND', `there is no ${describe(place, name)}`);
    }
    await this.audit.record({
      actor,
      action: 'secret-deleted',
      detail: { project: place.project, environment: environment || null, name },
      now: this.now(),
    });
  }

  /** What `${secrets.*}` reads in an environment: the project-wide values, the environment's over them. */
  async values(project: string, environment: string): Promise<Record<string, string>> {
    const rows = await this.repository.forEnvironment(project, environment);
    if (rows.length === 0) return {};
    const key = this.requireKey();
    const values: Record<string, string> = {};
    // Project-wide first: the environment's own value of a name replaces it.
    for (const row of rows.sort((a, b) => a.environment.length - b.environment.length)) {
      const place = { project, environment: row.environment };
      const plaintext =
        row.key_fingerprint === key.fingerprint
          ? openSealed(key, row.value_sealed, aadOf(project, row.environment, row.name))
          : undefined;
      if (!plaintext) {
        throw new TendError(
          'TEND_SECRETS_KEY',
          row.key_fingerprint === key.fingerprint
            ? `${describe(place, row.name)} fails authentication: it was changed after it was stored; set it again`
            : `${describe(place, row.name)} was sealed with key ${row.key_fingerprint}; this server has key ${key.fingerprint}: start it with the key it was set with, or set it again`,
        );
      }
      values[row.name] = plaintext.toString('utf8');
    }
    return values;
  }
}

function listing(entry: ProjectSecretEntry): SecretListing {
  return {
    name: entry.name,
    environment: entry.environment || null,
    createdAt: entry.created_at,
    updatedAt: entry.updated_at,
    updatedBy: entry.updated_by,
  };
}
