/**
 * The worker publishes the vendor's prices (`GET /v1/prices`, with the key it holds for paid steps anyway) to the
 * store at start and every PRICES_PUBLISH_INTERVAL_MS (src/store/published-prices.ts): the review desk shows them
 * from there and never holds a key that spends money. A failed round keeps the last list, which the desk stops
 * showing once it is stale, and logs one line per new reason.
 */
import type { EpisodeStore } from '../store/episode-store';
import { openPublishedPrices } from '../store/open-store';
import { PRICES_PUBLISH_INTERVAL_MS, type PublishedPrices } from '../store/published-prices';
import { createVendorClient } from '../vendor-api/client';
import type { CredentialsLoader } from '../vendor-api/credentials';
import type { VendorEndpoint } from '../vendor-api/endpoint';

export interface PricePublisherDeps {
  store: EpisodeStore;
  credentials: CredentialsLoader;
  vendor: VendorEndpoint;
}

/** One round: the vendor's current list, stored with the time it was fetched. */
export async function publishVendorPrices(deps: PricePublisherDeps): Promise<PublishedPrices> {
  const prices = await (await createVendorClient(deps.credentials, deps.vendor)).getPrices();
  const list: PublishedPrices = { schema: 'vendor-prices/v1', fetched_at: new Date().toISOString(), prices };
  await openPublishedPrices(deps.store).publish(list);
  return list;
}

export interface PricePublisherLog {
  info(message: string): void;
  warn(message: string): void;
}

/** Publishes now and then every `intervalMs` until the returned stop (which waits for a round in flight). */
export function startPricePublisher(
  deps: PricePublisherDeps,
  log: PricePublisherLog,
  intervalMs = PRICES_PUBLISH_INTERVAL_MS,
): () => Promise<void> {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let failing: string | undefined;
  const round = async () => {
    try {
      await publishVendorPrices(deps);
      if (failing !== undefined) log.info('vendor prices published again');
      failing = undefined;
    } catch (e) {
      const reason = e instanceof Error ? e.message : String(e);
      if (reason !== failing) log.warn(`vendor prices not published (the desk shows none once stale): ${reason}`);
      failing = reason;
    }
    if (stopped) return;
    timer = setTimeout(() => {
      inflight = round();
    }, intervalMs).unref();
  };
  let inflight = round();
  return async () => {
    stopped = true;
    clearTimeout(timer);
    await inflight;
  };
}
