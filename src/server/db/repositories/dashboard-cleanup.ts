/**
 * What the dashboard reads of cleanup that no other repository does: the decisions of listed
 * environments, the delete jobs that cleaned them, one environment's decisions, the blocked
 * decisions and the policies seen on active environments (for the Cleanup page). Reads only,
 * from the reader connection.
 */
import type { Kysely } from 'kysely';
import type { CleanupDecisionRow, Database } from '../schema.js';
import type { VisibleProjects } from '../visible-projects.js';
import { inVisibleProjects } from '../visible-projects.js';

export class DashboardCleanupRepository {
  constructor(private readonly reader: Kysely<Database>) {}

  /** The decisions of these environments (every namespace of each). */
  async decisionsOf(environmentIds: string[]): Promise<CleanupDecisionRow[]> {
    if (environmentIds.length === 0) return [];
    return this.reader
      .selectFrom('cleanup_decisions')
      .selectAll()
      .where('environment_id', 'in', environmentIds)
      .execute();
  }

  /** The finished, done, not-dry-run delete jobs of these environments, oldest first. */
  async doneDeleteJobs(environmentIds: string[]) {
    if (environmentIds.length === 0) return [];
    return this.reader
      .selectFrom('cleanup_jobs')
      .select(['id', 'environment_id', 'finished_at'])
      .where('environment_id', 'in', environmentIds)
      .where('action', '=', 'delete')
      .where('result', '=', 'done')
      .where('dry_run', '=', 0)
      .orderBy('finished_at', 'asc')
      .execute();
  }

  /** One environment's decisions, by due time and namespace. */
  async environmentDecisions(environmentId: string): Promise<CleanupDecisionRow[]> {
    return this.reader
      .selectFrom('cleanup_decisions')
      .selectAll()
      .where('environment_id', '=', environmentId)
      .orderBy('due_at')
      .orderBy('namespace_name')
      .execute();
  }

  /** The blocked decisions (of the projects visible), by project, environment and namespace. */
  async blockedDecisions(visible: VisibleProjects, limit: number): Promise<CleanupDecisionRow[]> {
    let query = this.reader.selectFrom('cleanup_decisions').selectAll().where('kind', '=', 'blocked');
    if (visible !== 'all') query = query.where(inVisibleProjects(visible));
    return query.orderBy('project').orderBy('environment').orderBy('namespace_name').limit(limit).execute();
  }

  /** The distinct policies of active environments (of the projects visible). */
  async activePolicies(visible: VisibleProjects) {
    let query = this.reader
      .selectFrom('environments')
      .select([
        'project',
        'name',
        'policy_after_inactivity',
        'policy_action',
        'policy_after_close',
        'policy_schedule',
      ])
      .where('state', '=', 'active')
      .where('policy_action', 'is not', null)
      .distinct();
    if (visible !== 'all') query = query.where(inVisibleProjects(visible));
    return query.execute();
  }
}
