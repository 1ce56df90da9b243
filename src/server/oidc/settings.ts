/**
 * `tend server`'s sign-in flags, checked before anything starts: `--oidc-issuer`,
 * `--oidc-client-id`, `--oidc-client-secret-file` and `--roles-file` go together; an http://
 * issuer only on the loopback interface or with `--oidc-allow-http`.
 */
import { TendError } from '../../errors.js';
import { RolesFile } from './roles-file.js';
import { insecureIssuerAllowed, readClientSecret, type OidcSettings } from './sign-in.js';

export interface OidcFlags {
  oidcIssuer?: string;
  oidcClientId?: string;
  oidcClientSecretFile?: string;
  oidcGroupsClaim?: string;
  oidcScope?: string;
  oidcAllowHttp?: boolean;
  rolesFile?: string;
}

const required = ['oidcIssuer', 'oidcClientId', 'oidcClientSecretFile', 'rolesFile'] as const;
const flagName: Record<(typeof required)[number], string> = {
  oidcIssuer: '--oidc-issuer',
  oidcClientId: '--oidc-client-id',
  oidcClientSecretFile: '--oidc-client-secret-file',
  rolesFile: '--roles-file',
};

/**
 * The sign-in settings, or undefined when no sign-in flag is given (token login only).
 * `publicUrl` is `--public-url`; without it the redirect URI is where the server listens.
 */
export function oidcSettingsOf(flags: OidcFlags, publicUrl: string | undefined): OidcSettings | undefined {
  const given = required.filter((key) => flags[key] !== undefined);
  if (given.length === 0) {
    if (flags.oidcGroupsClaim !== undefined || flags.oidcScope !== undefined || flags.oidcAllowHttp) {
      throw new TendError(
        'TEND_USAGE',
        '--oidc-groups-claim, --oidc-scope and --oidc-allow-http need --oidc-issuer',
      );
    }
    return undefined;
  }
  const missing = required.filter((key) => flags[key] === undefined);
  if (missing.length > 0) {
    throw new TendError(
      'TEND_USAGE',
      `signing in through an OpenID provider needs ${required.map((k) => flagName[k]).join(', ')}; missing ${missing.map((k) => flagName[k]).join(', ')}`,
    );
  }
  let issuer: URL;
  try {
    issuer = new URL(flags.oidcIssuer!);
  } catch {
    throw new TendError(
      'TEND_USAGE',
      `--oidc-issuer must be a URL, got "${flags.oidcIssuer!.slice(0, 100)}"`,
    );
  }
  if (!insecureIssuerAllowed(issuer, flags.oidcAllowHttp ?? false)) {
    throw new TendError(
      'TEND_USAGE',
      `--oidc-issuer must be an https:// URL (http:// only for a provider on this host, 127.0.0.1 or localhost, or with --oidc-allow-http), got "${issuer.href.slice(0, 100)}"`,
    );
  }
  const clientId = flags.oidcClientId!;
  if (clientId.length === 0 || clientId.length > 512) {
    throw new TendError('TEND_USAGE', '--oidc-client-id must be 1 to 512 characters');
  }
  const groupsClaim = flags.oidcGroupsClaim ?? 'groups';
  if (!/^[\w.:/-]{1,256}$/.test(groupsClaim)) {
    throw new TendError(
      'TEND_USAGE',
      `--oidc-groups-claim must be a claim name, got "${groupsClaim.slice(0, 100)}"`,
    );
  }
  const scopes = flags.oidcScope ?? 'openid email profile';
  if (!scopes.split(' ').includes('openid') || !/^[\x21-\x7e ]{1,1024}$/.test(scopes)) {
    throw new TendError(
      'TEND_USAGE',
      `--oidc-scope must be space-separated scopes including "openid", got "${scopes.slice(0, 100)}"`,
    );
  }
  return {
    // The issuer exactly as given: the ID token's `iss` must equal it (a trailing slash counts).
    issuer: flags.oidcIssuer!,
    clientId,
    clientSecret: readClientSecret(flags.oidcClientSecretFile!),
    groupsClaim,
    scopes,
    ...(publicUrl !== undefined ? { publicUrl } : {}),
    roles: new RolesFile(flags.rolesFile!),
    allowHttp: flags.oidcAllowHttp ?? false,
  };
}
