/**
 * The vendor's published prices (`GET /v1/prices`), which the desk shows before a click. Fetched with the worker's
 * vendor settings, kept for a minute and never shown past that: when the vendor cannot be reached the desk says
 * "price unavailable" and why, not an older number (a paid step could not be sent then either). Within the minute a
 * changed price is not seen; the step's own submission asks the vendor again and checks the budget with that quote.
 */
import { isPipelineError } from '../domain/errors';
import { ErrorType } from '../domain/errors';
import type { Prices } from '../vendor-api/api';
import { createVendorClient } from '../vendor-api/client';
import type { CredentialsLoader } from '../vendor-api/credentials';
import type { VendorEndpoint } from '../vendor-api/endpoint';
import { VendorError } from '../vendor-api/vendor-error';

export type PriceList = { ok: true; prices: Prices; at: Date } | { ok: false; reason: string };

export interface PriceSource {
  current(): Promise<PriceList>;
}

/** How long a price list is shown as the current one. */
export const PRICES_FRESH_MS = 60_000;
/** How long a failure is remembered, so a vendor that is down costs each page at most one wait every 10 s. */
export const PRICES_RETRY_MS = 10_000;
/** A page waits at most this long for the vendor (less than the worker's 10 s default). */
export const PRICES_TIMEOUT_MS = 3_000;

export interface PriceCacheOptions {
  freshMs?: number;
  retryMs?: number;
  now?: () => number;
  /** Where the full error of a failed fetch goes (the page shows a short reason). Default: stderr. */
  log?: (line: string) => void;
}

/** One fetch at a time; its answer (price list or failure) is shared until it is too old. */
export function cachedPriceSource(fetch: () => Promise<Prices>, o: PriceCacheOptions = {}): PriceSource {
  const now = o.now ?? Date.now;
  const log = o.log ?? ((line: string) => process.stderr.write(`review desk: ${line}\n`));
  let kept: { list: PriceList; until: number } | undefined;
  let inflight: Promise<PriceList> | undefined;
  const load = async (): Promise<PriceList> => {
    try {
      const list: PriceList = { ok: true, prices: await fetch(), at: new Date(now()) };
      kept = { list, until: now() + (o.freshMs ?? PRICES_FRESH_MS) };
      return list;
    } catch (e) {
      log(`vendor prices unavailable: ${e instanceof Error ? e.message : String(e)}`);
      const list: PriceList = { ok: false, reason: priceProblem(e) };
      kept = { list, until: now() + (o.retryMs ?? PRICES_RETRY_MS) };
      return list;
    } finally {
      inflight = undefined;
    }
  };
  return {
    current() {
      if (kept && now() < kept.until) return Promise.resolve(kept.list);
      inflight ??= load();
      return inflight;
    },
  };
}

/** The prices the worker would be quoted: its vendor URL, timeout (capped for a page) and API key. */
export function vendorPriceSource(credentials: CredentialsLoader, endpoint: VendorEndpoint): PriceSource {
  const timeoutMs = Math.min(endpoint.timeoutMs, PRICES_TIMEOUT_MS);
  return cachedPriceSource(async () =>
    (await createVendorClient(credentials, { baseUrl: endpoint.baseUrl, timeoutMs })).getPrices(),
  );
}

/** A reason a reviewer can act on, without paths or vendor bodies (those go to the log). */
export function priceProblem(e: unknown): string {
  if (e instanceof VendorError) {
    if (e.reason === 'http-status') return `the vendor answered HTTP ${e.status ?? '?'}`;
    if (e.reason === 'malformed-response') return 'the vendor’s answer is not a price list';
    return `the vendor did not answer (${e.reason})`;
  }
  if (isPipelineError(e, ErrorType.CredentialsMissing)) return 'the desk has no vendor API key';
  return 'unexpected error (see the desk’s log)';
}
