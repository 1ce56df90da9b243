/**
 * A real OpenID provider on 127.0.0.1: oidc-provider with its own RSA signing key, one
 * confidential client, and accounts whose e-mail and groups the caller chooses (sign in as any of
 * them on the provider's own login page, any password). The tests start it (test/server/
 * sign-in.test.ts) and so does `npm run sso-sandbox` (scripts/sso-sandbox.ts), to try tend's
 * sign-in locally: one implementation for both. For the tests, `tamperIdToken` rewrites the ID
 * token the token endpoint sends — re-signed with the provider's key (an expired token, another
 * audience) or with a key of the test's own (a forged one) — to check that the server refuses it.
 */
import { createPrivateKey, generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto';
import type { Server } from 'node:http';
import net from 'node:net';
import Provider from 'oidc-provider';

export interface TestAccount {
  email?: string;
  email_verified?: boolean;
  name?: string;
  groups?: string[];
}

export type IdTokenClaims = Record<string, unknown>;

export interface TestProvider {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** Keep the browser at the provider instead of sending it back with its answer (the code). */
  holdAnswers: boolean;
  /** The last answer held back: the redirect URI with code and state. */
  heldAnswer: string | undefined;
  /** Rewrites the next ID tokens the token endpoint sends (undefined: send them as issued). */
  tamperIdToken: ((idToken: string) => string) | undefined;
  /** The provider's signing key: re-signs claims as the provider would. */
  signAsProvider(claims: IdTokenClaims): string;
  /** Another key with the provider's key id: a forgery. */
  signWithOtherKey(claims: IdTokenClaims): string;
  close(): Promise<void>;
}

const keyId = 'test-signing-key';

function signJwt(claims: IdTokenClaims, key: KeyObject): string {
  const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const input = `${part({ alg: 'RS256', typ: 'JWT', kid: keyId })}.${part(claims)}`;
  return `${input}.${sign('sha256', Buffer.from(input), key).toString('base64url')}`;
}

export function claimsOf(idToken: string): IdTokenClaims {
  return JSON.parse(Buffer.from(idToken.split('.')[1]!, 'base64url').toString('utf8')) as IdTokenClaims;
}

/** A TCP port that was free a moment ago on 127.0.0.1 (the issuer URL names its port). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

export async function startTestProvider(options: {
  /** Where the client may be sent back to: tend's `<public-url>/auth/callback` (the first one is held). */
  redirectUri: string;
  accounts: Record<string, TestAccount>;
  /** Default: a free port. */
  port?: number;
  /** Default: a fixed test secret. */
  clientSecret?: string;
}): Promise<TestProvider> {
  const port = options.port ?? (await freePort());
  const issuer = `http://127.0.0.1:${port}`;
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const other = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
  const jwk = { ...privateKey.export({ format: 'jwk' }), kid: keyId, use: 'sig', alg: 'RS256' };
  const clientId = 'tend-dashboard';
  const clientSecret = options.clientSecret ?? 'a-client-secret-of-the-test-provider';
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: [options.redirectUri],
        grant_types: ['authorization_code'],
        response_types: ['code'],
      },
    ],
    jwks: { keys: [jwk] },
    claims: {
      openid: ['sub'],
      email: ['email', 'email_verified'],
      profile: ['name', 'groups'],
    },
    // The claims go into the ID token itself (what tend reads), not only the userinfo endpoint.
    conformIdTokenClaims: false,
    cookies: { keys: [randomBytes(32).toString('base64url')] },
    features: { devInteractions: { enabled: true } },
    findAccount: async (_ctx, id) => {
      const account = options.accounts[id];
      if (!account) return undefined;
      return { accountId: id, claims: async () => ({ sub: id, ...account }) };
    },
  });
  const fixture: TestProvider = {
    issuer,
    clientId,
    clientSecret,
    holdAnswers: false,
    heldAnswer: undefined,
    tamperIdToken: undefined,
    signAsProvider: (claims) => signJwt(claims, createPrivateKey({ key: jwk, format: 'jwk' })),
    signWithOtherKey: (claims) => signJwt(claims, other),
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        // A browser's keep-alive connections would hold the close until they time out.
        server.closeAllConnections();
      }),
  };
  provider.use(async (ctx, next) => {
    await next();
    const body = ctx.body as { id_token?: unknown } | undefined;
    if (ctx.path === '/token' && fixture.tamperIdToken && typeof body?.id_token === 'string') {
      ctx.body = { ...body, id_token: fixture.tamperIdToken(body.id_token) };
    }
    const location = String(ctx.response.get('location') ?? '');
    if (fixture.holdAnswers && location.startsWith(`${options.redirectUri}?`)) {
      fixture.heldAnswer = location;
      ctx.remove('location');
      ctx.status = 200;
      ctx.type = 'text/plain';
      ctx.body = 'answer held';
    }
  });
  const server: Server = provider.listen(port, '127.0.0.1');
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  return fixture;
}
