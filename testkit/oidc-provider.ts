/**
 * A real OpenID provider for the tests: panva's oidc-provider on 127.0.0.1 with its own development login page (any
 * login name, any password). Each account's claims come from `accounts`: a verified email `<login>@example.org` and
 * the groups listed for it. One client, a confidential one with a secret, for the desk's redirect URL.
 */
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * What a man in the middle would change, set by a test for its next sign-in: the authorization request as it reaches
 * the provider, the redirect back to the desk as it leaves it. (A browser route cannot change a redirect's hop.)
 */
export interface Tampering {
  request?: (query: Record<string, unknown>) => void;
  redirect?: (location: URL) => void;
}

interface KoaContext {
  path: string;
  status: number;
  query: Record<string, unknown>;
  response: { get(name: string): string };
  redirect(url: string): void;
}

export interface TestProvider {
  tamper: Tampering;
  issuer: string;
  clientId: string;
  clientSecret: string;
  close(): Promise<void>;
}

type ProviderClass = new (
  issuer: string,
  config: Record<string, unknown>,
) => { callback(): http.RequestListener; use(m: (ctx: KoaContext, next: () => Promise<void>) => Promise<void>): void };

export async function startTestProvider(redirectUrl: string, groups: Record<string, string[]>): Promise<TestProvider> {
  // ESM-only and untyped: loaded at run time (a string specifier TypeScript does not resolve).
  const specifier: string = 'oidc-provider';
  const { default: Provider } = (await import(specifier)) as { default: ProviderClass };
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const client = { client_id: 'review-desk', client_secret: 'test-client-secret-0123456789abcdef' };
  const provider = new Provider(issuer, {
    clients: [
      { ...client, redirect_uris: [redirectUrl], grant_types: ['authorization_code'], response_types: ['code'] },
    ],
    claims: { openid: ['sub'], email: ['email', 'email_verified'], groups: ['groups'] },
    findAccount: (_ctx: unknown, sub: string) => ({
      accountId: sub,
      claims: () => ({ sub, email: `${sub}@example.org`, email_verified: true, groups: groups[sub] ?? [] }),
    }),
    features: { devInteractions: { enabled: true } },
    cookies: { keys: ['a-test-only-cookie-signing-key'] },
  });
  const tamper: Tampering = {};
  provider.use(async (ctx, next) => {
    if (ctx.path === '/auth' && tamper.request) ctx.query = { ...ctx.query, ...mutated(ctx.query, tamper.request) };
    await next();
    const location = ctx.status === 303 || ctx.status === 302 ? ctx.response.get('location') : '';
    if (tamper.redirect && location.startsWith(redirectUrl)) {
      const url = new URL(location);
      tamper.redirect(url);
      ctx.redirect(url.href);
    }
  });
  server.on('request', provider.callback());
  return {
    tamper,
    issuer,
    clientId: client.client_id,
    clientSecret: client.client_secret,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

function mutated(
  query: Record<string, unknown>,
  change: (q: Record<string, unknown>) => void,
): Record<string, unknown> {
  const copy = { ...query };
  change(copy);
  return copy;
}
