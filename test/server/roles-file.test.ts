/**
 * The roles file (`--roles-file`) and the sign-in flags: what a person's groups and e-mail give
 * them per project, and every mistake named by file, line and column before the server starts.
 */
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { TendError } from '../../src/errors.js';
import { readRolesFile, RolesFile, rolesFileCheckIntervalMs } from '../../src/server/oidc/roles-file.js';
import { oidcSettingsOf } from '../../src/server/oidc/settings.js';
import { runTend } from '../helpers/project.js';

const dir = mkdtempSync(join(tmpdir(), 'tend-roles-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let n = 0;
const file = (text: string) => {
  const path = join(dir, `roles-${n++}.yaml`);
  writeFileSync(path, text);
  return path;
};

const errorOf = (run: () => unknown): TendError => {
  try {
    run();
  } catch (error) {
    if (error instanceof TendError) return error;
    throw error;
  }
  throw new Error('expected an error');
};

describe('roles file', () => {
  it('gives each person the highest role of their entries, per project', () => {
    const mapping = readRolesFile(
      file(`roles:
  - project: shop
    role: viewer
    groups: [everyone]
  - project: shop
    role: developer
    groups: [shop-devs]
  - project: blog
    role: developer
    emails: [Alice@Example.com]
  - project: "*"
    role: viewer
    groups: [everyone]
  - project: "*"
    role: admin
    groups: [platform]
`),
    );
    expect(mapping.rolesOf({ email: 'alice@example.com', groups: ['everyone', 'shop-devs'] })).toEqual(
      new Map([
        ['shop', 'developer'],
        ['blog', 'developer'],
        ['*', 'viewer'],
      ]),
    );
    // A role everywhere covers the same or lower roles in single projects.
    expect(mapping.rolesOf({ email: null, groups: ['platform', 'everyone'] })).toEqual(
      new Map([['*', 'admin']]),
    );
    expect(mapping.rolesOf({ email: 'nobody@example.com', groups: ['interns'] })).toEqual(new Map());
    // An e-mail the provider did not verify is not used (sign-in.ts passes null).
    expect(mapping.rolesOf({ email: null, groups: [] })).toEqual(new Map());
  });

  it('lists the projects in the order of their first entry, whether an e-mail or a group matched', () => {
    const mapping = readRolesFile(
      file(`roles:
  - project: blog
    role: viewer
    groups: [writers]
  - project: shop
    role: viewer
    emails: [BOB@example.com, bob@example.com]
  - project: blog
    role: admin
    emails: [bob@example.com]
    groups: [writers]
  - project: docs
    role: developer
    groups: [writers, writers]
`),
    );
    expect([...mapping.rolesOf({ email: 'Bob@Example.COM', groups: ['writers', 'writers'] })]).toEqual([
      ['blog', 'admin'],
      ['shop', 'viewer'],
      ['docs', 'developer'],
    ]);
    expect([...mapping.rolesOf({ email: 'bob@example.com', groups: [] })]).toEqual([
      ['shop', 'viewer'],
      ['blog', 'admin'],
    ]);
  });

  it('reads the file again when it changed, looking at most once a second; a broken change keeps the roles', () => {
    const path = file('roles:\n  - project: shop\n    role: viewer\n    groups: [devs]\n');
    let now = 0;
    const rolesFile = new RolesFile(path, () => now);
    const reported: Error[] = [];
    rolesFile.reportReloadError = (error) => reported.push(error);
    const devs = { email: null, groups: ['devs'] };
    const replace = (text: string) => {
      writeFileSync(`${path}.new`, text);
      renameSync(`${path}.new`, path); // a new inode, as the kubelet does
    };
    replace('roles:\n  - project: shop\n    role: admin\n    groups: [devs]\n');
    now = rolesFileCheckIntervalMs - 1;
    expect(rolesFile.current().rolesOf(devs)).toEqual(new Map([['shop', 'viewer']]));
    now = rolesFileCheckIntervalMs;
    expect(rolesFile.current().rolesOf(devs)).toEqual(new Map([['shop', 'admin']]));
    replace('roles:\n  - project: shop\n    role: owner\n    groups: [devs]\n');
    now += rolesFileCheckIntervalMs;
    expect(rolesFile.current().rolesOf(devs)).toEqual(new Map([['shop', 'admin']]));
    expect(reported.map((e) => e.message).join('\n')).toContain('got "owner"');
    // Reported once, not at every look while the file stays broken.
    now += rolesFileCheckIntervalMs;
    rolesFile.current();
    expect(reported).toHaveLength(1);
  });

  it('names the line and column of a role that does not exist, an unknown key and a bad project', () => {
    const path = file(`roles:
  - project: shop
    role: owner
    groups: [shop-devs]
  - project: Shop!
    role: viewer
    group: [everyone]
`);
    const error = errorOf(() => readRolesFile(path));
    expect(error.code).toBe('TEND_CONFIG_INVALID');
    // The first problem's place is the error's location (printed before the message), the others' in it.
    expect(error.location).toEqual({ file: path, line: 3, column: 11 });
    expect(error.message).toContain('roles[0].role: expected one of: viewer, developer, admin, got "owner"');
    expect(error.message).toContain(`${path}:5:14`);
    expect(error.message).toContain(`${path}:7:5`);
    expect(error.message).toContain('group');
  });

  it('refuses YAML that does not parse, an empty file, a missing file and an entry naming nobody', () => {
    const broken = file('roles:\n  - project: shop\n    role: [viewer\n');
    const syntax = errorOf(() => readRolesFile(broken));
    expect(syntax.code).toBe('TEND_CONFIG_YAML');
    expect(syntax.location).toMatchObject({ file: broken, line: 4 }); // where the unclosed [ is found out
    const empty = file('');
    expect(errorOf(() => readRolesFile(empty)).message).toContain('is empty; it needs a "roles:" list');
    expect(errorOf(() => readRolesFile(join(dir, 'missing.yaml'))).message).toContain(
      'cannot read the roles file',
    );
    const nobody = file('roles:\n  - project: shop\n    role: admin\n');
    const error = errorOf(() => readRolesFile(nobody));
    expect(error.location).toEqual({ file: nobody, line: 2, column: 5 });
    expect(error.message).toContain('names no group and no e-mail address');
  });
  it('refuses a second YAML document at its line and column', () => {
    const path = file('roles:\n  - project: shop\n    role: admin\n    groups: [devs]\n---\nroles: []\n');
    const error = errorOf(() => readRolesFile(path));
    expect(error.location).toEqual({ file: path, line: 6, column: 1 });
    expect(error.message).toContain('a roles file holds one YAML document (with a "roles:" list)');
  });
});

describe('sign-in flags', () => {
  const secret = file('a-client-secret\n');
  const roles = file('roles:\n  - project: "*"\n    role: viewer\n    groups: [everyone]\n');
  const flags = {
    oidcIssuer: 'https://login.example.com/realms/dev',
    oidcClientId: 'tend',
    oidcClientSecretFile: secret,
    rolesFile: roles,
  };
  const publicUrl = 'https://tend.example.com';

  it('reads the secret from its file and defaults the groups claim and the scopes', () => {
    const settings = oidcSettingsOf(flags, publicUrl)!;
    expect(settings).toMatchObject({
      issuer: 'https://login.example.com/realms/dev',
      clientId: 'tend',
      clientSecret: 'a-client-secret',
      groupsClaim: 'groups',
      scopes: 'openid email profile',
      publicUrl,
    });
    expect(oidcSettingsOf({}, publicUrl)).toBeUndefined();
  });

  it('allows an http:// issuer only on this host or with --oidc-allow-http', () => {
    for (const issuer of [
      'http://127.0.0.1:5556/dex',
      'http://localhost:8080/realms/dev',
      'http://[::1]:9000',
    ]) {
      expect(oidcSettingsOf({ ...flags, oidcIssuer: issuer }, publicUrl)?.issuer).toBe(issuer);
    }
    const remote = { ...flags, oidcIssuer: 'http://login.example.com' };
    expect(errorOf(() => oidcSettingsOf(remote, publicUrl)).message).toContain(
      '--oidc-issuer must be an https:// URL (http:// only for a provider on this host',
    );
    expect(oidcSettingsOf({ ...remote, oidcAllowHttp: true }, publicUrl)?.issuer).toBe(
      'http://login.example.com',
    );
    expect(errorOf(() => oidcSettingsOf({ ...flags, oidcIssuer: 'not a url' }, publicUrl)).message).toContain(
      '--oidc-issuer must be a URL',
    );
  });

  it('names what is missing or wrong', () => {
    const { rolesFile: _roles, ...withoutRoles } = flags;
    expect(errorOf(() => oidcSettingsOf(withoutRoles, publicUrl)).message).toContain('missing --roles-file');
    expect(errorOf(() => oidcSettingsOf({ oidcGroupsClaim: 'roles' }, publicUrl)).message).toContain(
      'need --oidc-issuer',
    );
    const missingSecret = { ...flags, oidcClientSecretFile: join(dir, 'no-secret') };
    expect(errorOf(() => oidcSettingsOf(missingSecret, publicUrl)).message).toContain(
      '--oidc-client-secret-file: cannot read',
    );
    const emptySecret = { ...flags, oidcClientSecretFile: file('\n') };
    expect(errorOf(() => oidcSettingsOf(emptySecret, publicUrl)).message).toContain(
      'must hold the client secret',
    );
    expect(
      errorOf(() => oidcSettingsOf({ ...flags, oidcScope: 'email profile' }, publicUrl)).message,
    ).toContain('including "openid"');
  });
});

describe('tend server with sign-in flags', () => {
  it('refuses a remote http:// issuer and a roles file that does not check, before starting', async () => {
    const secret = file('a-client-secret\n');
    const common = ['server', '--port', '0', '--data-dir', dir, '--oidc-client-id', 'tend'];
    const remote = await runTend([
      ...common,
      '--oidc-issuer',
      'http://login.example.com',
      '--oidc-client-secret-file',
      secret,
      '--roles-file',
      file('roles:\n  - project: "*"\n    role: viewer\n    groups: [everyone]\n'),
    ]);
    expect(remote.code).toBe(2);
    expect(remote.stderr).toContain('--oidc-issuer must be an https:// URL');
    expect(remote.stderr).not.toContain('a-client-secret');
    const badRoles = file('roles:\n  - project: shop\n    role: owner\n    groups: [devs]\n');
    const bad = await runTend([
      ...common,
      '--oidc-issuer',
      'https://login.example.com',
      '--oidc-client-secret-file',
      secret,
      '--roles-file',
      badRoles,
    ]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain(`${badRoles}:3:11`);
    expect(bad.stderr).toContain('expected one of: viewer, developer, admin, got "owner"');
  });

  it('refuses a host of every interface without --public-url: no redirect URI a browser could reach', async () => {
    const secret = file('a-client-secret\n');
    const roles = file('roles:\n  - project: "*"\n    role: viewer\n    groups: [everyone]\n');
    for (const host of ['0.0.0.0', '::']) {
      const run = await runTend([
        'server',
        '--host',
        host,
        '--port',
        '0',
        '--data-dir',
        dir,
        '--oidc-issuer',
        'https://login.example.com',
        '--oidc-client-id',
        'tend',
        '--oidc-client-secret-file',
        secret,
        '--roles-file',
        roles,
      ]);
      expect(run.code).toBe(2);
      expect(run.stderr).toContain(`--oidc-issuer with --host ${host} needs --public-url`);
    }
  });
});
