/**
 * The roles file (`--roles-file`): which groups and e-mail addresses have which role in which
 * project, for people who sign in through the OpenID provider. YAML, checked against a schema
 * when it is read, with every problem named by line and column as the project configuration's
 * are. The file is read again when it changes (its size, time or inode): the next request of a
 * signed-in person sees the new roles, no restart or signal needed. A change that does not check
 * keeps the roles that were in force, and the error is logged.
 *
 * ```yaml
 * roles:
 *   - project: "*"          # every project
 *     role: admin
 *     groups: [platform]
 *   - project: shop
 *     role: developer
 *     groups: [shop-devs]
 *     emails: [alice@example.com]
 * ```
 */
import { readFileSync, statSync } from 'node:fs';
import { Type, type Static } from 'typebox';
import { TendError } from '../../errors.js';
import { checkSchema, configError } from '../../config/diagnostics.js';
import { SourceFile } from '../../config/source.js';
import { everyProject, roles, type Role } from '../auth.js';

const ProjectPattern = '^(\\*|[a-z0-9]([-a-z0-9]{0,251}[a-z0-9])?)$';

const RoleEntry = Type.Object(
  {
    project: Type.String({
      pattern: ProjectPattern,
      description: 'a project name, or "*" for every project',
    }),
    role: Type.Enum(roles, { description: 'viewer, developer or admin' }),
    groups: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 256 }), { maxItems: 1000 })),
    emails: Type.Optional(
      Type.Array(Type.String({ pattern: '^[^@\\s]+@[^@\\s]+$', maxLength: 320 }), { maxItems: 1000 }),
    ),
  },
  { additionalProperties: false },
);

const RolesDocument = Type.Object(
  { roles: Type.Array(RoleEntry, { maxItems: 10_000 }) },
  { additionalProperties: false },
);

type RoleEntry = Static<typeof RoleEntry>;

const rank: Record<Role, number> = { viewer: 0, developer: 1, admin: 2 };

/** Who the roles are looked up for: the groups and the (verified) e-mail of the ID token. */
export interface Person {
  email: string | null;
  groups: readonly string[];
}

/** The roles file as read: each person's role per project. */
export class RolesMapping {
  constructor(private readonly entries: readonly RoleEntry[]) {}

  /** The person's role in each project (`*`: every project); the highest of their entries wins. */
  rolesOf(person: Person): Map<string, Role> {
    const email = person.email?.toLowerCase() ?? null;
    const groups = new Set(person.groups);
    const found = new Map<string, Role>();
    for (const entry of this.entries) {
      const matches =
        (entry.groups ?? []).some((g) => groups.has(g)) ||
        (email !== null && (entry.emails ?? []).some((e) => e.toLowerCase() === email));
      if (!matches) continue;
      const held = found.get(entry.project);
      if (held === undefined || rank[entry.role] > rank[held]) found.set(entry.project, entry.role);
    }
    // A role for every project covers the same or a lower one in a project.
    const everywhere = found.get(everyProject);
    if (everywhere !== undefined) {
      for (const [project, role] of found) {
        if (project !== everyProject && rank[role] <= rank[everywhere]) found.delete(project);
      }
    }
    return found;
  }
}

/** Reads and checks a roles file; errors name the file, line and column. */
export function readRolesFile(file: string): RolesMapping {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new TendError(
      'TEND_CONFIG_INVALID',
      `cannot read the roles file ${file}: ${(error as Error).message}`,
    );
  }
  const source = new SourceFile(file, text);
  const { documents, problems } = source.parse();
  if (problems.length > 0) throw configError(problems);
  const [document, second] = documents;
  if (!document) {
    throw new TendError('TEND_CONFIG_INVALID', `the roles file ${file} is empty; it needs a "roles:" list`, {
      location: { file, line: 1, column: 1 },
    });
  }
  if (second) {
    throw configError([
      {
        code: 'TEND_CONFIG_INVALID',
        message: 'a roles file holds one YAML document (with a "roles:" list)',
        location: second.location,
      },
    ]);
  }
  const locate = (at: readonly (string | number)[], target?: 'key' | 'value') =>
    source.locate(document.index, at, target);
  const shape = checkSchema(RolesDocument, document.value, {
    basePath: [],
    rootLabel: 'the roles file',
    locate,
  });
  if (shape.length > 0) throw configError(shape);
  const entries = (document.value as Static<typeof RolesDocument>).roles;
  const empty = entries.flatMap((entry, index) =>
    (entry.groups ?? []).length + (entry.emails ?? []).length === 0
      ? [
          {
            code: 'TEND_CONFIG_INVALID' as const,
            message: `roles[${index}] names no group and no e-mail address: it would give nobody the role "${entry.role}"`,
            location: locate(['roles', index], 'value'),
          },
        ]
      : [],
  );
  if (empty.length > 0) throw configError(empty);
  return new RolesMapping(entries);
}

/**
 * The roles file, read again when it has changed: a stat per lookup (no watcher, no timer), so a
 * removed role holds from the next request on.
 */
export class RolesFile {
  private mapping: RolesMapping;
  private stamp: string;

  /** Where a change that does not check is reported (the server sets its logger). */
  reportReloadError: (error: Error) => void = (error) => {
    process.stderr.write(
      `the roles file changed but does not check; the roles before stay in force: ${error.message}\n`,
    );
  };

  /** Reads the file now: a bad file stops the server from starting. */
  constructor(readonly file: string) {
    this.stamp = this.currentStamp();
    this.mapping = readRolesFile(file);
  }

  private currentStamp(): string {
    try {
      const s = statSync(this.file, { bigint: true });
      return `${s.ino}:${s.size}:${s.mtimeNs}`;
    } catch {
      return 'missing';
    }
  }

  /** The mapping in force: the file's, re-read if it changed since the last lookup. */
  current(): RolesMapping {
    const stamp = this.currentStamp();
    if (stamp !== this.stamp) {
      this.stamp = stamp;
      try {
        this.mapping = readRolesFile(this.file);
      } catch (error) {
        this.reportReloadError(error as Error);
      }
    }
    return this.mapping;
  }
}
