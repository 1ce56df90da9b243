/** Dashboard login sessions: a cookie value (stored hashed) bound to a read token, with a CSRF token. */
import type { Kysely } from 'kysely';
import { generateSecret, hashToken } from '../credentials.js';
import type { ApiToken, Database } from '../schema.js';

export class DashboardSessionRepository {
  /** `reader` serves the reads outside a transaction (ServerDatabase.reader). */
  constructor(
    private readonly db: Kysely<Database>,
    private readonly reader: Kysely<Database> = db,
  ) {}

  async create(tokenId: string, ttlMs: number, now = new Date()): Promise<{ cookie: string; csrf: string }> {
    const cookie = generateSecret();
    const csrf = generateSecret();
    await this.db
      .insertInto('dashboard_sessions')
      .values({
        id_hash: hashToken(cookie),
        token_id: tokenId,
        csrf_token: csrf,
        created_at: now.toISOString(),
        expires_at: new Date(now.getTime() + ttlMs).toISOString(),
      })
      .execute();
    return { cookie, csrf };
  }

  /** The live session and its (live) token for a cookie value. */
  async find(cookie: string, now = new Date()): Promise<{ csrf: string; token: ApiToken } | undefined> {
    const row = await this.reader
      .selectFrom('dashboard_sessions')
      .innerJoin('api_tokens', 'api_tokens.id', 'dashboard_sessions.token_id')
      .selectAll('api_tokens')
      .select('dashboard_sessions.csrf_token')
      .where('dashboard_sessions.id_hash', '=', hashToken(cookie))
      .where('dashboard_sessions.expires_at', '>', now.toISOString())
      .where('api_tokens.revoked_at', 'is', null)
      .executeTakeFirst();
    if (!row) return undefined;
    const { csrf_token, ...token } = row;
    return { csrf: csrf_token, token };
  }

  async delete(cookie: string): Promise<void> {
    await this.db.deleteFrom('dashboard_sessions').where('id_hash', '=', hashToken(cookie)).execute();
  }
}
