/**
 * Dashboard sessions of people signed in through the OpenID provider: a random session id
 * (stored as its sha256, like tokens) bound to the person's subject, e-mail and groups, with a
 * CSRF token. Expired rows are pruned when a session is created.
 */
import type { Kysely } from 'kysely';
import { generateSecret, hashToken } from '../credentials.js';
import type { Database } from '../schema.js';

export interface PersonSession {
  issuer: string;
  subject: string;
  email: string | null;
  name: string | null;
  groups: string[];
  csrf: string;
}

export class PersonSessionRepository {
  /** `reader` serves the reads outside a transaction (ServerDatabase.reader). */
  constructor(
    private readonly db: Kysely<Database>,
    private readonly reader: Kysely<Database> = db,
  ) {}

  /** A new session; returns its id (for the cookie, never stored) and CSRF token. */
  async create(
    person: Omit<PersonSession, 'csrf'>,
    ttlMs: number,
    now: Date,
  ): Promise<{ id: string; csrf: string }> {
    const id = generateSecret();
    const csrf = generateSecret();
    await this.db.deleteFrom('person_sessions').where('expires_at', '<=', now.toISOString()).execute();
    await this.db
      .insertInto('person_sessions')
      .values({
        id_hash: hashToken(id),
        issuer: person.issuer,
        subject: person.subject,
        email: person.email,
        name: person.name,
        groups: JSON.stringify(person.groups),
        csrf_token: csrf,
        created_at: now.toISOString(),
        expires_at: new Date(now.getTime() + ttlMs).toISOString(),
      })
      .execute();
    return { id, csrf };
  }

  async find(id: string, now: Date): Promise<PersonSession | undefined> {
    const row = await this.reader
      .selectFrom('person_sessions')
      .selectAll()
      .where('id_hash', '=', hashToken(id))
      .where('expires_at', '>', now.toISOString())
      .executeTakeFirst();
    if (!row) return undefined;
    return {
      issuer: row.issuer,
      subject: row.subject,
      email: row.email,
      name: row.name,
      groups: JSON.parse(row.groups) as string[],
      csrf: row.csrf_token,
    };
  }

  async delete(id: string): Promise<void> {
    await this.db.deleteFrom('person_sessions').where('id_hash', '=', hashToken(id)).execute();
  }
}
