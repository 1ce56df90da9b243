/** The SQL condition that keeps a query to the projects a principal may see. */
import { sql, type Expression, type SqlBool } from 'kysely';
import type { VisibleProjects } from '../auth.js';

/** `<column> in (…)` (the query's `project` column by default); no projects matches nothing. */
export function inVisibleProjects(
  visible: Exclude<VisibleProjects, 'all'>,
  column = 'project',
): Expression<SqlBool> {
  if (visible.size === 0) return sql<SqlBool>`1 = 0`;
  return sql<SqlBool>`${sql.ref(column)} in (${sql.join([...visible])})`;
}
