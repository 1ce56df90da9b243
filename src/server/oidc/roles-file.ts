/**
 * The roles file (`--roles-file`): which groups and e-mail addresses have which role in which
 * project, for people who sign in through the OpenID provider. YAML, checked against a schema
 * when it is read, with every problem named by line and column as the project configuration's
 * are. The file is read again when it changes (its size, time or inode): a signed-in person's
 * request a second later sees the new roles, no restart or signal needed. A change that does not check
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
import { statSync } from 'node:fs';
import { Type, type Static } from 'typebox';
import { TendError } from '../../errors.js';
import { checkSchema, configError } from '../../config/diagnostics.js';
import { readSingleDocument } from '../../config/single-document.js';
import { everyProject, roles, type Role } from '../auth.js';
import { monotonicMs } from '../../monotonic.js';

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
  /**
   * The positions of the entries naming each e-mail address (lower-cased) and each group, in file
   * order: a lookup is a few map reads instead of a pass over every entry's lists.
   */
  private readonly byEmail = new Map<string, number[]>();
  private readonly byGroup = new Map<string, number[]>();

  constructor(private readonly entries: readonly RoleEntry[]) {
    const add = (index: Map<string, number[]>, key: string, position: number) => {
      const held = index.get(key);
      if (held === undefined) index.set(key, [position]);
      else if (held.at(-1) !== position) held.push(position);
    };
    entries.forEach((entry, position) => {
      for (const email of entry.emails ?? []) add(this.byEmail, email.toLowerCase(), position);
      for (const group of entry.groups ?? []) add(this.byGroup, group, position);
    });
  }

  /** The person's role in each project (`*`: every project); the highest of their entries wins. */
  rolesOf(person: Person): Map<string, Role> {
    const matched = new Set<number>();
    const email = person.email?.toLowerCase();
    for (const position of (email === undefined ? undefined : this.byEmail.get(email)) ?? []) {
      matched.add(position);
    }
    for (const group of person.groups) {
      for (const position of this.byGroup.get(group) ?? []) matched.add(position);
    }
    // In file order, so the projects come in the order they always have (the header lists them).
    const found = new Map<string, Role>();
    for (const position of [...matched].sort((a, b) => a - b)) {
      const entry = this.entries[position]!;
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
  const document = readSingleDocument(file, {
    what: `the roles file ${file}`,
    oneDocument: 'a roles file holds one YAML document (with a "roles:" list)',
  });
  if (document.empty) {
    throw new TendError('TEND_CONFIG_INVALID', `the roles file ${file} is empty; it needs a "roles:" list`, {
      location: { file, line: 1, column: 1 },
    });
  }
  const { locate } = document;
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

/** How often, at most, the file is looked at for a change: not a stat on every request. */
export const rolesFileCheckIntervalMs = 1000;

/**
 * The roles file, read again when it has changed: looked at (a stat) by the first lookup a second
 * or more after the last look (no watcher, no timer), so a removed role is gone within a second.
 */
export class RolesFile {
  private mapping: RolesMapping;
  private stamp: string;
  private checkedAt: number;

  /** Where a change that does not check is reported (the server sets its logger). */
  reportReloadError: (error: Error) => void = (error) => {
    process.stderr.write(
      `the roles file changed but does not check; the roles before stay in force: ${error.message}\n`,
    );
  };

  /**
   * Reads the file now: a bad file stops the server from starting. `now` is a monotonic clock in
   * milliseconds (tests pass their own).
   */
  constructor(
    readonly file: string,
    private readonly now: () => number = () => monotonicMs(),
  ) {
    this.stamp = this.currentStamp();
    this.checkedAt = this.now();
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

  /** The mapping in force: the file's, re-read if it changed (looked at once a second at most). */
  current(): RolesMapping {
    const now = this.now();
    if (now - this.checkedAt < rolesFileCheckIntervalMs) return this.mapping;
    this.checkedAt = now;
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
