/**
 * fal's webhook keys (its JWKS), kept between callbacks: a callback costs no fetch while the keys are fresh, and no
 * flood of callbacks (forged ones included) turns into a flood of fetches: one at a time, at most one a minute.
 */
import { ErrorType } from '../domain/errors';
import { VendorError } from '../vendor-api/vendor-error';

export type Jwk = Readonly<Record<string, unknown>>;

/**
 * The stored fal docs state no lifetime for its keys. A day bounds how long a key fal has withdrawn (a leak) is still
 * believed, at one fetch a day; a new key is seen sooner, on the first signature that matches no kept key.
 */
export const FAL_JWKS_TTL_MS = 24 * 3600_000;
/** The least time between two fetches: a signature matching no key refetches (a rotation) at most this often. */
export const FAL_JWKS_REFETCH_MS = 60_000;

export class FalJwks {
  #keys: readonly Jwk[] | null = null;
  #fetchedAt = 0;
  #attemptedAt: number | null = null;
  #inFlight: Promise<readonly Jwk[]> | null = null;

  constructor(
    private readonly fetchKeys: () => Promise<readonly Jwk[]>,
    private readonly now: () => number = Date.now,
  ) {}

  /** The keys kept, fetched first when there are none or they are older than FAL_JWKS_TTL_MS. */
  async current(): Promise<readonly Jwk[]> {
    if (this.#keys && this.now() - this.#fetchedAt < FAL_JWKS_TTL_MS) return this.#keys;
    if (this.#inFlight) return this.#inFlight;
    if (!this.#mayFetch()) {
      throw new VendorError({
        type: ErrorType.VendorUnavailable,
        message: 'fal readCallback: the JWKS fetch failed under a minute ago; not asked again yet',
        operation: 'readCallback',
        reason: 'aborted',
        outcome: null,
      });
    }
    return this.#fetch();
  }

  /** After a signature matched none of `seen`: the keys fetched again (a rotation), or null if fetched too lately. */
  async refetched(seen: readonly Jwk[]): Promise<readonly Jwk[] | null> {
    if (this.#keys !== seen) return this.#keys;
    if (this.#inFlight) return this.#inFlight;
    return this.#mayFetch() ? this.#fetch() : null;
  }

  #mayFetch(): boolean {
    return this.#attemptedAt === null || this.now() - this.#attemptedAt >= FAL_JWKS_REFETCH_MS;
  }

  #fetch(): Promise<readonly Jwk[]> {
    this.#attemptedAt = this.now();
    this.#inFlight = this.fetchKeys()
      .then((keys) => {
        this.#keys = keys;
        this.#fetchedAt = this.now();
        return keys;
      })
      .finally(() => {
        this.#inFlight = null;
      });
    return this.#inFlight;
  }
}
