/** The SQL condition that keeps a query to the projects a principal may see. */
import { sql, type Expression, type SqlBool } from 'kysely';

/**
 * The projects a principal may see: `all` (a grant for every project: an unbound token, a person
 * with a role for `*`), or the projects it holds a grant in (a project-bound token's one project,
 * a person's projects in the roles file; none for a person with no role). Everything a principal
 * reads is narrowed to these; another project's environment is not found, not forbidden
 * (auth.ts `visibleProjects` works them out).
 */
export type VisibleProjects = 'all' | ReadonlySet<string>;

/** `<column> in (…)` (the query's `project` column by default); no projects matches nothing. */
export function inVisibleProjects(
  visible: Exclude<VisibleProjects, 'all'>,
  column = 'project',
): Expression<SqlBool> {
  if (visible.size === 0) return sql<SqlBool>`1 = 0`;
  return sql<SqlBool>`${sql.ref(column)} in (${sql.join([...visible])})`;
}

export function canSee(visible: VisibleProjects, project: string): boolean {
  return visible === 'all' || visible.has(project);
}

/**
 * What a principal sees of a request for one project (or of every project, `undefined`): that
 * project if visible, else nothing.
 */
export function narrowTo(visible: VisibleProjects, project: string | undefined): VisibleProjects {
  if (project === undefined) return visible;
  return new Set(canSee(visible, project) ? [project] : []);
}
