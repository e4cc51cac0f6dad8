/**
 * What the desk checks on every request before any route: the security headers of every answer, the origin of every
 * state-changing request, and the limit on failed sign-ins.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';

/** `formTargets`: other origins a form may lead to (the OIDC provider: the sign-in form's answer redirects there). */
const csp = (formTargets: readonly string[]) =>
  "default-src 'none'; style-src 'self'; img-src 'self'; media-src 'self'; " +
  `form-action ${["'self'", ...formTargets].join(' ')}; frame-ancestors 'none'; base-uri 'none'`;

/**
 * `same-origin` rather than `no-referrer`: under no-referrer a browser sends `Origin: null` on the desk's own form
 * posts, and the origin check below needs the real origin. Other sites still get no referrer.
 */
export function securityHeaders(reply: FastifyReply, https: boolean, formTargets: readonly string[]): void {
  reply.header('content-security-policy', csp(formTargets));
  reply.header('x-content-type-options', 'nosniff');
  reply.header('referrer-policy', 'same-origin');
  reply.header('cross-origin-opener-policy', 'same-origin');
  reply.header('cross-origin-resource-policy', 'same-origin');
  reply.header(
    'permissions-policy',
    'camera=(), microphone=(), geolocation=(), payment=(), usb=(), interest-cohort=()',
  );
  if (https) reply.header('strict-transport-security', 'max-age=31536000');
  if (!reply.hasHeader('cache-control')) reply.header('cache-control', 'no-store');
}

/**
 * Whether a POST comes from the desk's own pages: `Origin` equal to the desk's origin (its public URL's, else the one
 * the request was addressed to), and `Sec-Fetch-Site`, when sent, `same-origin`. Another port of the same host is
 * another origin. A request with neither header is refused: every browser that holds a session sends them.
 */
export function fromOwnOrigin(req: FastifyRequest, publicUrl: URL | undefined): boolean {
  const site = req.headers['sec-fetch-site'];
  if (site !== undefined && site !== 'same-origin') return false;
  const origin = req.headers.origin;
  if (origin === undefined || origin === 'null') return site === 'same-origin';
  return origin === (publicUrl?.origin ?? `${req.protocol}://${req.host}`);
}

/**
 * Failed sign-ins per client address: after `max` failures within `windowMs` that address is refused until its window
 * ends. Successes never count, so a stranger's failures cannot lock out a reviewer from another address. At most
 * `maxAddresses` are remembered (the oldest window goes first).
 */
export class FailureLimit {
  private readonly failures = new Map<string, { count: number; until: number }>();

  constructor(
    readonly max: number,
    readonly windowMs: number,
    private readonly maxAddresses = 10_000,
  ) {}

  blocked(address: string, now = Date.now()): boolean {
    const f = this.failures.get(address);
    if (f !== undefined && f.until <= now) this.failures.delete(address);
    return f !== undefined && f.until > now && f.count >= this.max;
  }

  fail(address: string, now = Date.now()): void {
    const f = this.failures.get(address);
    if (f !== undefined && f.until > now) {
      f.count++;
      return;
    }
    this.failures.delete(address);
    if (this.failures.size >= this.maxAddresses) this.failures.delete(this.failures.keys().next().value!);
    this.failures.set(address, { count: 1, until: now + this.windowMs });
  }
}
