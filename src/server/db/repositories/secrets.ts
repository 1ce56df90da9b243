/**
 * The project secrets of `${secrets.NAME}` (table `project_secrets`): values are stored sealed
 * (secrets.ts seals and opens them); listing reads names and times, never a sealed value.
 */
import type { Kysely } from 'kysely';
import type { Database, ProjectSecretRow } from '../schema.js';

export type ProjectSecretEntry = Omit<ProjectSecretRow, 'value_sealed' | 'key_fingerprint'>;

export class SecretRepository {
  /** `reader` serves the reads outside a transaction (ServerDatabase.reader). */
  constructor(
    private readonly db: Kysely<Database>,
    private readonly reader: Kysely<Database> = db,
  ) {}

  /** Creates the secret or replaces its value (one statement: a reader sees the old value or the new). */
  async put(row: ProjectSecretRow): Promise<void> {
    await this.db
      .insertInto('project_secrets')
      .values(row)
      .onConflict((oc) =>
        oc.columns(['project', 'environment', 'name']).doUpdateSet({
          value_sealed: row.value_sealed,
          key_fingerprint: row.key_fingerprint,
          updated_at: row.updated_at,
          updated_by: row.updated_by,
        }),
      )
      .execute();
  }

  /** Names and times of a project's secrets (every environment's), without their values. */
  list(project: string): Promise<ProjectSecretEntry[]> {
    return this.reader
      .selectFrom('project_secrets')
      .select(['project', 'environment', 'name', 'created_at', 'updated_at', 'updated_by'])
      .where('project', '=', project)
      .orderBy('environment')
      .orderBy('name')
      .execute();
  }

  /** The sealed rows an environment reads: the project-wide ones and the environment's own. */
  forEnvironment(project: string, environment: string): Promise<ProjectSecretRow[]> {
    return this.reader
      .selectFrom('project_secrets')
      .selectAll()
      .where('project', '=', project)
      .where('environment', 'in', ['', environment])
      .execute();
  }

  /** Whether a secret was there to delete. */
  async delete(project: string, environment: string, name: string): Promise<boolean> {
    const result = await this.db
      .deleteFrom('project_secrets')
      .where('project', '=', project)
      .where('environment', '=', environment)
      .where('name', '=', name)
      .executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }
}
