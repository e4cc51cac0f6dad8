/**
 * OpenID Connect sign-in (authorization code with PKCE, state and nonce) through openid-client. openid-client v6 is an
 * ES module: this CommonJS build loads it with `import()` (TypeScript's node16 mode refuses a static import of it).
 * The provider is discovered at the first sign-in, not at start, so token sign-in works while the provider is away.
 *
 * A transaction (verifier, state, nonce) is kept in memory under the digest of the browser's pre-session cookie, for
 * 10 minutes (PendingSignIns): a restart mid-sign-in costs one more click. A user is allowed when a verified `email`
 * is in the allowed emails or a group of the groups claim is in the allowed groups; the session is bound to issuer +
 * subject, and the allow list is checked again on every request.
 */
import type * as OpenIdClientModule from 'openid-client' with { 'resolution-mode': 'import' };
import type { Configuration } from 'openid-client' with { 'resolution-mode': 'import' };
import type { ReviewSession } from '../store/review-sessions';
import { approverProblem } from '../domain/decision';
import type { OidcSettings } from './desk-settings';
import type { NewSession } from './sessions';

type OpenIdClient = typeof OpenIdClientModule;

const PENDING_MS = 10 * 60_000;
const MAX_PENDING = 1_000;
const MAX_PENDING_PER_ADDRESS = 10;

export interface Pending {
  verifier: string;
  state: string;
  nonce: string;
  startedAt: number;
  /** The client address that started it. */
  address: string;
}

/**
 * Sign-ins under way, by pre-session key: each lasts PENDING_MS; at most MAX_PENDING_PER_ADDRESS from one address,
 * whose oldest goes first, and at most MAX_PENDING in all, past which new ones are refused: no address can push out
 * another's.
 */
export class PendingSignIns {
  private readonly byKey = new Map<string, Pending>();

  /** False when the table is full (the sign-in is refused, nothing is pushed out). */
  add(key: string, p: Pending): boolean {
    this.byKey.delete(key);
    for (const [k, old] of this.byKey) if (p.startedAt - old.startedAt > PENDING_MS) this.byKey.delete(k);
    const own = [...this.byKey].filter(([, old]) => old.address === p.address);
    if (own.length >= MAX_PENDING_PER_ADDRESS) this.byKey.delete(own[0]![0]);
    else if (this.byKey.size >= MAX_PENDING) return false;
    this.byKey.set(key, p);
    return true;
  }

  /**
   * The transaction of this key, once: a second callback finds none. Only an answer carrying its `state` takes it, so
   * a forged callback (another site's link, which the browser sends with the sign-in cookie) leaves it in place.
   */
  take(key: string, state: string, now: number): Pending | undefined {
    const p = this.byKey.get(key);
    if (p === undefined || p.state !== state) return undefined;
    this.byKey.delete(key);
    return now - p.startedAt <= PENDING_MS ? p : undefined;
  }
}

/** Names of identity-provider users without a verified email start with this; no token reviewer may. */
export const OIDC_NAME_PREFIX = 'oidc:';

/**
 * The name a provider's user decides under: the verified email, else the subject, which the provider keeps unique
 * (`preferred_username` is not: another user, or a token reviewer, could hold the same one).
 */
export function oidcReviewerName(verifiedEmail: string | null, sub: string): string {
  return verifiedEmail ?? `${OIDC_NAME_PREFIX}${sub}`;
}

/** A refused sign-in, with the reason for the audit log (the page says less). */
export class OidcRefusal extends Error {}

/**
 * A callback that finished no sign-in of this browser (none under way, or not with the answer's state): anyone's page
 * can send one, so it counts against nobody's sign-in limit.
 */
export class OidcNoSignIn extends Error {}

/** A sign-in not started: the table of sign-ins under way is full. */
export class OidcBusy extends Error {}

export class OidcSignIn {
  private lib?: Promise<OpenIdClient>;
  private config?: Promise<Configuration>;
  private readonly pending = new PendingSignIns();
  /** What the sign-in button says: the provider's host. */
  readonly label: string;

  constructor(readonly settings: OidcSettings) {
    this.label = settings.issuer.host;
  }

  /** The provider's authorization URL for a new transaction of this pre-session, or an OidcBusy. */
  async start(preKey: string, address: string, now = Date.now()): Promise<URL> {
    const [oidc, config] = [await this.openIdClient(), await this.configuration()];
    const p: Pending = {
      verifier: oidc.randomPKCECodeVerifier(),
      state: oidc.randomState(),
      nonce: oidc.randomNonce(),
      startedAt: now,
      address,
    };
    if (!this.pending.add(preKey, p)) throw new OidcBusy('too many sign-ins under way');
    return oidc.buildAuthorizationUrl(config, {
      redirect_uri: this.settings.redirectUrl.href,
      scope: this.settings.scopes,
      code_challenge: await oidc.calculatePKCECodeChallenge(p.verifier),
      code_challenge_method: 'S256',
      state: p.state,
      nonce: p.nonce,
    });
  }

  /** The reviewer the provider's answer (the callback's query) signs in, or an OidcRefusal. */
  async finish(preKey: string, query: string, now = Date.now()): Promise<Omit<NewSession, 'client_ip' | 'user_agent'>> {
    const state = new URLSearchParams(query).get('state') ?? '';
    const p = this.pending.take(preKey, state, now);
    if (p === undefined) throw new OidcNoSignIn('no sign-in in progress in this browser with that state');
    const [oidc, config] = [await this.openIdClient(), await this.configuration()];
    const current = new URL(this.settings.redirectUrl);
    current.search = query;
    let claims: Record<string, unknown>;
    try {
      const tokens = await oidc.authorizationCodeGrant(config, current, {
        pkceCodeVerifier: p.verifier,
        expectedState: p.state,
        expectedNonce: p.nonce,
        idTokenExpected: true,
      });
      const id = tokens.claims()!;
      const userInfo = config.serverMetadata().userinfo_endpoint
        ? await oidc.fetchUserInfo(config, tokens.access_token, id.sub)
        : {};
      claims = { ...userInfo, ...id };
    } catch (e) {
      throw new OidcRefusal(`the provider's answer was refused: ${describe(e)}`);
    }
    return this.reviewerOf(claims);
  }

  /** Whether a session made by this provider is still allowed under the current settings. */
  stillAllowed(s: ReviewSession): boolean {
    return s.identity.startsWith(this.identityPrefix()) && this.allowed(s.email, s.groups);
  }

  private reviewerOf(claims: Record<string, unknown>): Omit<NewSession, 'client_ip' | 'user_agent'> {
    const email =
      typeof claims.email === 'string' && claims.email_verified === true ? claims.email.toLowerCase() : null;
    const raw = claims[this.settings.groupsClaim];
    const groups = (Array.isArray(raw) ? raw : typeof raw === 'string' ? [raw] : []).filter(
      (g): g is string => typeof g === 'string' && g.length <= 256,
    );
    const sub = String(claims.sub);
    if (!this.allowed(email, groups)) {
      throw new OidcRefusal(`${email ?? `subject ${sub}`} is not among the allowed emails or groups`);
    }
    const name = oidcReviewerName(email, sub);
    const problem = approverProblem(name);
    if (problem !== undefined) throw new OidcRefusal(`the provider's name for this user is unusable: ${problem}`);
    return {
      reviewer: name,
      method: 'oidc',
      identity: `${this.identityPrefix()}${sub}`,
      email,
      groups: groups.slice(0, 256),
    };
  }

  private allowed(email: string | null, groups: readonly string[]): boolean {
    return (
      (email !== null && this.settings.allowedEmails.includes(email)) ||
      groups.some((g) => this.settings.allowedGroups.includes(g))
    );
  }

  private identityPrefix(): string {
    return `oidc:${this.settings.issuer.href} `;
  }

  private openIdClient(): Promise<OpenIdClient> {
    return (this.lib ??= import('openid-client'));
  }

  /** Discovery once; a failure is tried again at the next sign-in. */
  private configuration(): Promise<Configuration> {
    this.config ??= this.openIdClient()
      .then((oidc) =>
        oidc.discovery(
          this.settings.issuer,
          this.settings.clientId,
          undefined,
          oidc.ClientSecretBasic(this.settings.clientSecret),
          // desk-settings.ts allows plain http only to a provider on this machine (a local test provider).
          // eslint-disable-next-line @typescript-eslint/no-deprecated -- deprecated only to stand out; see above
          this.settings.issuer.protocol === 'http:' ? { execute: [oidc.allowInsecureRequests] } : undefined,
        ),
      )
      .catch((e: unknown) => {
        this.config = undefined;
        throw e;
      });
    return this.config;
  }
}

/** openid-client's message and, where it has one, its cause's (which names the check that failed). */
function describe(e: unknown): string {
  const err = e as { message?: string; code?: string; cause?: { message?: string } };
  return [err.code, err.message, err.cause?.message].filter((x) => typeof x === 'string' && x !== '').join(': ');
}
