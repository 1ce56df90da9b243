/**
 * Every API route against every token scope, compared with the table in docs/server.md ("Scopes
 * and roles"): the table is what users are promised, the OpenAPI document says which permission
 * each route needs (`x-permission`), and each call is answered 403 exactly where the table says
 * "—". The roles of people are the same table's columns (`viewer` is `read`).
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { roleAllows, roles, scopeAllows, tokenScopes, type Permission } from '../../src/server/auth.js';
import type { TokenScope } from '../../src/server/db/schema.js';
import { createTestServer, dialects, postEvents, session, type TestServer } from './helpers.js';

const docs = readFileSync(new URL('../../docs/server.md', import.meta.url), 'utf8');

/** The rows of the permission table: permission → the scopes it is granted to. */
function documentedTable(): Map<string, Set<TokenScope>> {
  const lines = docs.split('\n');
  const header = lines.findIndex((line) => line.startsWith('| permission | what it allows |'));
  expect(header, 'the permission table in docs/server.md').toBeGreaterThan(-1);
  const columns = lines[header]!.split('|').map((cell) => cell.trim().replace(/`/g, '').split(' ')[0]!);
  const table = new Map<string, Set<TokenScope>>();
  for (const line of lines.slice(header + 2)) {
    if (!line.startsWith('|')) break;
    const cells = line.split('|').map((cell) => cell.trim());
    const permission = cells[1]!.replace(/`/g, '');
    const granted = new Set<TokenScope>();
    cells.forEach((cell, i) => {
      if (cell === 'yes') granted.add(columns[i] as TokenScope);
    });
    table.set(permission, granted);
  }
  return table;
}

interface Operation {
  method: string;
  path: string;
  permission: Permission;
}

describe('the permission table of docs/server.md', () => {
  it('is what the code grants, for every permission, scope and role', () => {
    const table = documentedTable();
    const permissions = [...table.keys()].sort();
    expect(permissions).toEqual(
      [
        'admin',
        'agent',
        'clean-now',
        'ingest',
        'keep-alive',
        'protect',
        'read',
        'restore',
        'resume',
        'secrets',
      ].sort(),
    );
    for (const [permission, granted] of table) {
      for (const scope of tokenScopes) {
        expect(scopeAllows(scope, permission as Permission), `${scope} ${permission}`).toBe(
          granted.has(scope),
        );
      }
      for (const role of roles) {
        const column: TokenScope = role === 'viewer' ? 'read' : role;
        const expected = granted.has(column) && permission !== 'ingest' && permission !== 'agent';
        expect(roleAllows(role, permission as Permission), `${role} ${permission}`).toBe(expected);
      }
    }
  });
});

describe.each(dialects)('every API route against every scope on %s', (dialect) => {
  let s: TestServer;
  let envId: string;
  let operations: Operation[];
  beforeAll(async () => {
    s = await createTestServer(dialect);
    const a = session();
    await postEvents(s, [a.started(), a.ns('ready', { uid: 'u' })]);
    envId = (await s.database.db.selectFrom('environments').select('id').executeTakeFirstOrThrow()).id;
    const document = (await s.app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json<{
      paths: Record<string, Record<string, { 'x-permission'?: Permission }>>;
    }>();
    operations = Object.entries(document.paths).flatMap(([path, byMethod]) =>
      Object.entries(byMethod).flatMap(([method, operation]) =>
        operation['x-permission']
          ? [{ method: method.toUpperCase(), path, permission: operation['x-permission'] }]
          : [],
      ),
    );
  });
  afterAll(async () => s.close());

  it('answers 403 exactly where the table says the scope may not', async () => {
    const table = documentedTable();
    // Every route with a permission is in the document; a handful of them is far too few.
    expect(operations.length).toBeGreaterThan(20);
    const refusals: string[] = [];
    const mismatches: string[] = [];
    for (const operation of operations) {
      const url = operation.path.replace(/\{[^}]+\}/g, (name) => (name === '{id}' ? envId : 'x'));
      for (const scope of tokenScopes) {
        const res = await s.app.inject({
          method: operation.method as 'GET' | 'POST' | 'PUT' | 'DELETE',
          url,
          headers: s.auth(s.tokens[scope]),
          ...(operation.method === 'GET' || operation.method === 'DELETE' ? {} : { payload: {} }),
        });
        const refused =
          res.statusCode === 403 &&
          res.json<{ error: { code: string } }>().error.code === 'TEND_AUTH_FORBIDDEN';
        const allowed = table.get(operation.permission)!.has(scope);
        if (refused === allowed) {
          mismatches.push(
            `${scope} ${operation.method} ${operation.path}: ${res.statusCode} ${res.body.slice(0, 200)}`,
          );
        }
        if (refused) refusals.push(`${scope} ${operation.method} ${operation.path}`);
      }
    }
    expect(mismatches).toEqual([]);
    // The walk did refuse: a test whose calls all passed would prove nothing.
    expect(refusals.length).toBeGreaterThan(operations.length);
  });
});
