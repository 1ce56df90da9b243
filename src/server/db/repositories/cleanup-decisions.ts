/**
 * The decisions of the last planning pass, one per recorded namespace: stored by the pass (only
 * what changed, with its audit entries), and read back as the plan (paged by due time), the
 * counts of blocked decisions, and the environments whose schedules the plan lists.
 */
import type { Kysely } from 'kysely';
import { writeAudit, type AuditInput } from './audit.js';
import type { CleanupDecisionRow, Database } from '../schema.js';
import { chunks } from '../bulk.js';
import type { VisibleProjects } from '../visible-projects.js';
import { inVisibleProjects } from '../visible-projects.js';

export class CleanupDecisionRepository {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly reader: Kysely<Database> = db,
  ) {}

  async decisionRows(): Promise<CleanupDecisionRow[]> {
    return this.db.selectFrom('cleanup_decisions').selectAll().execute();
  }

  async writeDecisions(
    upserts: CleanupDecisionRow[],
    removed: string[],
    audits: AuditInput[],
    now: Date,
  ): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      for (const chunk of chunks(upserts)) {
        await trx
          .insertInto('cleanup_decisions')
          .values(chunk)
          .onConflict((oc) =>
            oc.column('resource_id').doUpdateSet((eb) => ({
              environment_id: eb.ref('excluded.environment_id'),
              project: eb.ref('excluded.project'),
              environment: eb.ref('excluded.environment'),
              namespace_name: eb.ref('excluded.namespace_name'),
              target_key: eb.ref('excluded.target_key'),
              plugin: eb.ref('excluded.plugin'),
              action: eb.ref('excluded.action'),
              kind: eb.ref('excluded.kind'),
              reason_code: eb.ref('excluded.reason_code'),
              due_at: eb.ref('excluded.due_at'),
              last_activity_at: eb.ref('excluded.last_activity_at'),
              sentence: eb.ref('excluded.sentence'),
              job_id: eb.ref('excluded.job_id'),
              decided_at: eb.ref('excluded.decided_at'),
              warn_at: eb.ref('excluded.warn_at'),
              due_local: eb.ref('excluded.due_local'),
            })),
          )
          .execute();
      }
      for (const ids of chunks(removed)) {
        await trx.deleteFrom('cleanup_decisions').where('resource_id', 'in', ids).execute();
      }
      await writeAudit(trx, now, audits);
    });
  }

  /** Environments (active or paused) whose policy has a schedule, for the plan's transitions. */
  async scheduledEnvironments(
    filter: { project?: string; environment?: string; visible: VisibleProjects },
    limit: number,
  ): Promise<{ id: string; project: string; name: string; state: string; policy_schedule: string }[]> {
    // In id order through the index of scheduled environments (migration 0008), the state
    // checked here: a condition on state would have the database read every active environment
    // by state and sort them. Cleaned ones are few among the scheduled; read on past them.
    const found: { id: string; project: string; name: string; state: string; policy_schedule: string }[] = [];
    const chunk = limit * 2;
    for (let after: string | undefined; found.length < limit;) {
      let q = this.reader
        .selectFrom('environments')
        .select(['id', 'project', 'name', 'state', 'policy_schedule'])
        .where('policy_schedule', 'is not', null);
      if (after !== undefined) q = q.where('id', '>', after);
      if (filter.project) q = q.where('project', '=', filter.project);
      if (filter.environment) q = q.where('name', '=', filter.environment);
      if (filter.visible !== 'all') q = q.where(inVisibleProjects(filter.visible));
      const rows = await q.orderBy('id').limit(chunk).execute();
      for (const r of rows) {
        if (found.length < limit && (r.state === 'active' || r.state === 'paused')) {
          found.push({ ...r, policy_schedule: r.policy_schedule! });
        }
      }
      if (rows.length < chunk) break;
      after = rows[rows.length - 1]!.id;
    }
    return found;
  }

  async planPage(
    filter: {
      dueBefore: string;
      project?: string;
      environment?: string;
      namespace?: string;
      visible?: VisibleProjects;
      after?: { at: string; id: string };
    },
    limit: number,
  ): Promise<CleanupDecisionRow[]> {
    let q = this.reader.selectFrom('cleanup_decisions').selectAll().where('due_at', '<=', filter.dueBefore);
    if (filter.project) q = q.where('project', '=', filter.project);
    if (filter.visible && filter.visible !== 'all') q = q.where(inVisibleProjects(filter.visible));
    if (filter.environment) q = q.where('environment', '=', filter.environment);
    if (filter.namespace) q = q.where('namespace_name', '=', filter.namespace);
    if (filter.after) {
      const a = filter.after;
      q = q.where((eb) =>
        eb.or([eb('due_at', '>', a.at), eb.and([eb('due_at', '=', a.at), eb('resource_id', '>', a.id)])]),
      );
    }
    return q.orderBy('due_at').orderBy('resource_id').limit(limit).execute();
  }

  async blockedCounts(): Promise<Record<string, number>> {
    const rows = await this.reader
      .selectFrom('cleanup_decisions')
      .select(['reason_code', (eb) => eb.fn.countAll<number>().as('n')])
      .where('kind', '=', 'blocked')
      .groupBy('reason_code')
      .execute();
    return Object.fromEntries(rows.map((r) => [r.reason_code ?? 'unknown', Number(r.n)]));
  }
}
