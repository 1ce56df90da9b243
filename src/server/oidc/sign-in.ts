/**
 * Signing people in through the company's OpenID provider: the authorization code flow with PKCE
 * through openid-client (state and nonce checked, the ID token's issuer, audience, expiry and
 * signature verified against the provider's JWKS), and the cookies that carry a sign-in in
 * progress and a signed-in session, both signed with a key derived from the client secret (so
 * every replica on one database accepts the others' cookies, and nobody without the secret can
 * make one).
 */
import { createHmac } from 'node:crypto';
import type * as OpenIdClient from 'openid-client';
import { TendError } from '../../errors.js';
import { importModule } from '../../import-module.js';
import { constantTimeEqual } from '../auth.js';
import { readSecretText } from '../secret-file.js';
import type { RolesFile } from './roles-file.js';

export interface OidcSettings {
  /** The provider's issuer URL (its discovery document is `<issuer>/.well-known/openid-configuration`). */
  issuer: string;
  clientId: string;
  /** Read from `--oidc-client-secret-file`; never logged. */
  clientSecret: string;
  /** The ID token claim holding the person's groups (default `groups`). */
  groupsClaim: string;
  /** The scopes asked for (default `openid email profile`). */
  scopes: string;
  /**
   * `--public-url`: the redirect URI is `<publicUrl>/auth/callback`. Absent: the address the
   * server listens on, known once it listens (`OidcSignIn.listeningAt`).
   */
  publicUrl?: string;
  /** Who has which role in which project. */
  roles: RolesFile;
  /** An http:// issuer that is not on the loopback interface (`--oidc-allow-http`). */
  allowHttp?: boolean;
}

export const callbackPath = '/auth/callback';
/** How long a sign-in may take between leaving for the provider and coming back. */
export const signInTtlMs = 10 * 60_000;

/** Whether an http:// issuer may be used: a loopback one (a provider on this host), or when allowed. */
export function insecureIssuerAllowed(issuer: URL, allowHttp: boolean): boolean {
  if (issuer.protocol === 'https:') return true;
  if (issuer.protocol !== 'http:') return false;
  const host = issuer.hostname.replace(/^\[|\]$/g, '');
  return allowHttp || host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/** What a sign-in in progress keeps in its cookie until the browser comes back. */
export interface PendingSignIn {
  state: string;
  nonce: string;
  verifier: string;
  next: string;
  /** Expiry, ms since the epoch. */
  expires: number;
}

/** The person as the verified ID token names them. */
export interface SignedInPerson {
  issuer: string;
  subject: string;
  /** Null when the token has none, or says it is not verified (`email_verified: false`). */
  email: string | null;
  name: string | null;
  groups: string[];
}

/** Why a sign-in failed, worded for the person at the browser (the cause goes to the log). */
export class SignInFailed extends Error {
  constructor(message: string, cause?: unknown) {
    super(message, { cause });
  }
}

export class OidcSignIn {
  private readonly cookieKey: Buffer;
  private configuration: Promise<OpenIdClient.Configuration> | undefined;
  private listeningUrl: string | undefined;

  constructor(readonly settings: OidcSettings) {
    this.cookieKey = createHmac('sha256', settings.clientSecret).update('tend dashboard cookies').digest();
  }

  /**
   * Where the server listens, told once it does: without --public-url the browser comes back
   * there (with --port 0 the port is known only now).
   */
  listeningAt(url: string): void {
    this.listeningUrl = url;
  }

  /** `--public-url`, else where the server listens. */
  get publicUrl(): string {
    const url = this.settings.publicUrl ?? this.listeningUrl;
    if (url === undefined) {
      throw new TendError('TEND_INTERNAL', 'sign-in was used before the server listened (no public URL yet)');
    }
    return url;
  }

  get redirectUri(): string {
    return new URL(callbackPath, this.publicUrl).href;
  }

  /** The cookies are marked Secure when browsers reach the server over https. */
  get secureCookies(): boolean {
    return new URL(this.publicUrl).protocol === 'https:';
  }

  /** Signs a cookie value: `<value>.<HMAC>`. */
  sign(value: string): string {
    return `${value}.${createHmac('sha256', this.cookieKey).update(value).digest('base64url')}`;
  }

  /** The value of a signed cookie, or undefined when the signature does not match. */
  unsign(signed: string): string | undefined {
    const dot = signed.lastIndexOf('.');
    if (dot <= 0) return undefined;
    const value = signed.slice(0, dot);
    return constantTimeEqual(this.sign(value), signed) ? value : undefined;
  }

  private client(): Promise<typeof OpenIdClient> {
    return importModule<typeof OpenIdClient>('openid-client');
  }

  /** The provider's configuration, discovered once (again after a failure). */
  private discover(): Promise<OpenIdClient.Configuration> {
    this.configuration ??= (async () => {
      const client = await this.client();
      const { issuer, clientId, clientSecret, allowHttp } = this.settings;
      const url = new URL(issuer);
      const insecure = url.protocol === 'http:';
      const configuration = await client.discovery(
        url,
        clientId,
        undefined,
        client.ClientSecretBasic(clientSecret),
        {
          // http only for a provider on this host, or behind --oidc-allow-http (checked at start).
          execute:
            insecure && insecureIssuerAllowed(url, allowHttp ?? false) ? [client.allowInsecureRequests] : [],
          timeout: 10,
        },
      );
      // Verify the ID token's signature with the provider's JWKS even though it comes straight
      // from the token endpoint: over http (a loopback provider) nothing else vouches for it.
      client.enableNonRepudiationChecks(configuration);
      return configuration;
    })();
    this.configuration.catch(() => {
      this.configuration = undefined;
    });
    return this.configuration;
  }

  /** Where to send the browser, and the pending sign-in to keep in its cookie. */
  async start(next: string, now: Date): Promise<{ url: string; pending: PendingSignIn }> {
    const client = await this.client();
    let configuration: OpenIdClient.Configuration;
    try {
      configuration = await this.discover();
    } catch (error) {
      throw new SignInFailed(
        `the identity provider ${this.settings.issuer} could not be reached or did not describe itself`,
        error,
      );
    }
    const pending: PendingSignIn = {
      state: client.randomState(),
      nonce: client.randomNonce(),
      verifier: client.randomPKCECodeVerifier(),
      next,
      expires: now.getTime() + signInTtlMs,
    };
    const url = client.buildAuthorizationUrl(configuration, {
      redirect_uri: this.redirectUri,
      scope: this.settings.scopes,
      response_type: 'code',
      code_challenge: await client.calculatePKCECodeChallenge(pending.verifier),
      code_challenge_method: 'S256',
      state: pending.state,
      nonce: pending.nonce,
    });
    return { url: url.href, pending };
  }

  encodePending(pending: PendingSignIn): string {
    return this.sign(Buffer.from(JSON.stringify(pending)).toString('base64url'));
  }

  decodePending(cookie: string | undefined, now: Date): PendingSignIn | undefined {
    const value = cookie === undefined || cookie.length > 4096 ? undefined : this.unsign(cookie);
    if (value === undefined) return undefined;
    try {
      const pending = JSON.parse(Buffer.from(value, 'base64url').toString('utf8')) as PendingSignIn;
      return typeof pending.expires === 'number' && pending.expires > now.getTime() ? pending : undefined;
    } catch {
      return undefined;
    }
  }

  /**
   * The provider's answer: the code exchanged (with the PKCE verifier), state and nonce checked,
   * the ID token verified. `callbackUrl` is the URL the browser came back to, query included.
   */
  async finish(callbackUrl: URL, pending: PendingSignIn): Promise<SignedInPerson> {
    const client = await this.client();
    const configuration = await this.discover().catch((error: unknown) => {
      throw new SignInFailed(`the identity provider ${this.settings.issuer} could not be reached`, error);
    });
    let tokens;
    try {
      tokens = await client.authorizationCodeGrant(
        configuration,
        callbackUrl,
        {
          pkceCodeVerifier: pending.verifier,
          expectedState: pending.state,
          expectedNonce: pending.nonce,
          idTokenExpected: true,
        },
        { redirect_uri: this.redirectUri },
      );
    } catch (error) {
      throw new SignInFailed(describeFailure(error), error);
    }
    const claims = tokens.claims();
    if (!claims) throw new SignInFailed('the identity provider sent no ID token');
    const text = (value: unknown, max: number) =>
      typeof value === 'string' && value.length > 0 && value.length <= max ? value : null;
    const subject = text(claims.sub, 255);
    if (!subject) throw new SignInFailed('the ID token names no subject (or one over 255 characters)');
    const groupsClaim = claims[this.settings.groupsClaim];
    const groups = Array.isArray(groupsClaim)
      ? groupsClaim.filter((g): g is string => typeof g === 'string' && g.length <= 256).slice(0, 1000)
      : typeof groupsClaim === 'string'
        ? [groupsClaim]
        : [];
    return {
      issuer: claims.iss,
      subject,
      email: claims.email_verified === false ? null : text(claims.email, 320),
      name: text(claims.name, 200),
      groups,
    };
  }
}

/**
 * openid-client's errors in words a person can pass on to their platform team: its message and
 * those of its causes (where the claim that failed is named), never a token.
 */
function describeFailure(error: unknown): string {
  const e = error as { name?: string; message?: string; error?: string; error_description?: string };
  if (e.name === 'AuthorizationResponseError' || e.name === 'ResponseBodyError') {
    const description = e.error_description ? `: ${e.error_description}` : '';
    return `the identity provider refused the sign-in (${e.error ?? 'error'}${description})`.slice(0, 300);
  }
  const reasons: string[] = [];
  let cause: unknown = error;
  for (let depth = 0; depth < 4 && typeof cause === 'object' && cause !== null; depth++) {
    const { message, claim } = cause as { message?: unknown; claim?: unknown };
    if (typeof message === 'string' && message) reasons.push(message);
    if (typeof claim === 'string') reasons.push(`claim "${claim}"`);
    cause = (cause as { cause?: unknown }).cause;
  }
  return `the identity provider's answer did not check: ${reasons.join('; ').slice(0, 300) || String(error)}`;
}

/** Reads `--oidc-client-secret-file`: the secret, trimmed, never echoed. */
export function readClientSecret(file: string): string {
  const secret = readSecretText('--oidc-client-secret-file', file);
  if (secret.length === 0 || secret.length > 4096) {
    throw new TendError(
      'TEND_USAGE',
      `--oidc-client-secret-file: ${file} must hold the client secret (1 to 4096 characters)`,
    );
  }
  return secret;
}
