/**
 * The worker publishes each step's price at its assigned vendor (with the key it holds for paid steps anyway) to the
 * store at start and every PRICES_PUBLISH_INTERVAL_MS (src/store/published-prices.ts): the review desk shows them
 * from there and never holds a key that spends money. A failed round keeps the last list, which the desk stops
 * showing once it is stale, and logs one line per new reason.
 */
import type { EpisodeStore } from '../store/episode-store';
import { openPublishedPrices } from '../store/open-store';
import { PRICES_PUBLISH_INTERVAL_MS, type PublishedPrices } from '../store/published-prices';
import { PAID_STEPS, type PaidStep } from '../domain/paid-step';
import type { PriceRange, Vendors } from '../vendors/port';

export interface PricePublisherDeps {
  store: EpisodeStore;
  vendors: Vendors;
}

/** One round: each step's price at the vendor it is assigned to (a range for metered steps), with the time. */
export async function publishVendorPrices(deps: PricePublisherDeps): Promise<PublishedPrices> {
  const ranges = {} as Record<PaidStep, PriceRange>;
  const lists = new Map<string, Promise<Record<PaidStep, PriceRange>>>();
  for (const step of PAID_STEPS) {
    const vendor = deps.vendors.assigned(step);
    if (!lists.has(vendor))
      lists.set(
        vendor,
        deps.vendors.open(vendor).then((adapter) => adapter.prices()),
      );
    ranges[step] = (await lists.get(vendor)!)[step];
  }
  const price = (r: PriceRange) => ({
    amount_cents: r.min_cents,
    currency: r.currency,
    ...(r.max_cents > r.min_cents ? { max_cents: r.max_cents } : {}),
  });
  const prices = {
    video: price(ranges.video),
    cover: price(ranges.cover),
    rework: price(ranges.rework),
    assembly: price(ranges.assembly),
  };
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
