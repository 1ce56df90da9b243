/** API tokens: create (returning the secret once), find by secret, list, revoke. */
import type { Kysely } from 'kysely';
import { ulid } from 'ulidx';
import { TendError } from '../../../errors.js';
import { displayPrefix, generateToken, hashToken } from '../credentials.js';
import type { ApiToken, Database, TokenScope } from '../schema.js';

export interface TokenInfo {
  id: string;
  name: string;
  prefix: string;
  scope: TokenScope;
  project: string | null;
  /** Cluster ids an `agent` token is bound to (null: any). */
  clusters: string[] | null;
  /** Executor targets (`<kind>/<id>`) an `agent` token is bound to (null: none beyond `clusters`). */
  targets: string[] | null;
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
}

function toInfo(row: ApiToken): TokenInfo {
  return {
    id: row.id,
    name: row.name,
    prefix: row.token_prefix,
    scope: row.scope,
    project: row.project,
    clusters: row.clusters ? (JSON.parse(row.clusters) as string[]) : null,
    targets: row.targets ? (JSON.parse(row.targets) as string[]) : null,
    createdAt: row.created_at,
    lastUsedAt: row.last_used_at,
    revokedAt: row.revoked_at,
  };
}

export class TokenRepository {
  /** `reader` serves the reads outside a transaction (ServerDatabase.reader). */
  constructor(
    private readonly db: Kysely<Database>,
    private readonly reader: Kysely<Database> = db,
  ) {}

  async create(input: {
    name: string;
    scope: TokenScope;
    project?: string | null;
    clusters?: string[] | null;
    targets?: string[] | null;
    now?: Date;
  }): Promise<{ token: string; info: TokenInfo }> {
    const token = generateToken();
    const row: ApiToken = {
      id: ulid(),
      name: input.name,
      token_hash: hashToken(token),
      token_prefix: displayPrefix(token),
      scope: input.scope,
      project: input.project ?? null,
      clusters: input.clusters && input.clusters.length > 0 ? JSON.stringify(input.clusters) : null,
      targets: input.targets && input.targets.length > 0 ? JSON.stringify(input.targets) : null,
      created_at: (input.now ?? new Date()).toISOString(),
      last_used_at: null,
      revoked_at: null,
    };
    const existing = await this.db
      .selectFrom('api_tokens')
      .select('id')
      .where('name', '=', input.name)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    if (existing) {
      throw new TendError('TEND_TOKEN_EXISTS', `a token named "${input.name}" already exists`, {
        detail: { hint: `revoke it first (tend server token revoke ${input.name}) or choose another name` },
      });
    }
    await this.db.insertInto('api_tokens').values(row).execute();
    return { token, info: toInfo(row) };
  }

  /** The live token with this secret, or undefined (unknown or revoked). */
  async findLive(token: string): Promise<ApiToken | undefined> {
    return this.reader
      .selectFrom('api_tokens')
      .selectAll()
      .where('token_hash', '=', hashToken(token))
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
  }

  async findById(id: string): Promise<ApiToken | undefined> {
    return this.reader.selectFrom('api_tokens').selectAll().where('id', '=', id).executeTakeFirst();
  }

  async touch(id: string, at: string): Promise<void> {
    await this.db.updateTable('api_tokens').set({ last_used_at: at }).where('id', '=', id).execute();
  }

  async list(): Promise<TokenInfo[]> {
    const rows = await this.reader.selectFrom('api_tokens').selectAll().orderBy('id').execute();
    return rows.map(toInfo);
  }

  /** Revokes the live token with this id or name; returns it. */
  async revoke(idOrName: string, now = new Date()): Promise<TokenInfo> {
    const row = await this.db
      .selectFrom('api_tokens')
      .selectAll()
      .where('revoked_at', 'is', null)
      .where((eb) => eb.or([eb('id', '=', idOrName), eb('name', '=', idOrName)]))
      .executeTakeFirst();
    if (!row) {
      throw new TendError('TEND_TOKEN_NOT_FOUND', `no live token with id or name "${idOrName}"`, {
        detail: { hint: 'tend server token list shows the tokens' },
      });
    }
    const revokedAt = now.toISOString();
    await this.db.updateTable('api_tokens').set({ revoked_at: revokedAt }).where('id', '=', row.id).execute();
    await this.db.deleteFrom('dashboard_sessions').where('token_id', '=', row.id).execute();
    return toInfo({ ...row, revoked_at: revokedAt });
  }
}
