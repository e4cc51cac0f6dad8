/** The Replicate simulator and adapter for activity tests: every kind at `replicate:<model>` on the simulator. */
import { meteredCents } from '../src/domain/metered-cost';
import type { PaidStep } from '../src/domain/paid-step';
import { startReplicateSimulator, type ReplicateSimulator } from '../src/vendor-sim/replicate';
import { vendorDirectory, type AdapterOpener } from '../src/vendors/directory';
import type { VendorAdapter, Vendors } from '../src/vendors/port';
import { replicateAdapter, replicateCallbackReader } from '../src/vendors/replicate';

/** Distinctive, so a leak anywhere is unmistakable. */
export const REPLICATE_TEST_TOKEN = 'r8_activity-test-SECRET-41f0';
export const REPLICATE_TEST_PRICE = 0.0014;
/** A prediction's usual compute time, seconds. */
export const REPLICATE_TEST_SECONDS = 120;
/** What a step costs when it runs its usual time: the estimate a metered amount may differ from. */
export const REPLICATE_TEST_ESTIMATE_CENTS = meteredCents(REPLICATE_TEST_SECONDS, REPLICATE_TEST_PRICE);
export const REPLICATE_TEST_MAX_CENTS: Record<PaidStep, number> = {
  video: 1000,
  cover: 300,
  rework: 1000,
  assembly: 500,
};

export function startTestReplicate(): Promise<ReplicateSimulator> {
  return startReplicateSimulator({
    token: REPLICATE_TEST_TOKEN,
    predictionMs: 40,
    predictSeconds: REPLICATE_TEST_SECONDS,
    usdPerSecond: REPLICATE_TEST_PRICE,
    media: 'synthetic',
  });
}

/** `wrap` (test-only): what the opener does to each adapter, e.g. take a protection away. */
export function replicateVendors(
  sim: ReplicateSimulator,
  wrap: (adapter: VendorAdapter) => VendorAdapter = (adapter) => adapter,
): Vendors {
  const opener: AdapterOpener = (model, logger) =>
    Promise.resolve(
      wrap(
        replicateAdapter({
          baseUrl: sim.url,
          token: REPLICATE_TEST_TOKEN,
          model: model ?? 'acme/media-model',
          usdPerSecond: REPLICATE_TEST_PRICE,
          maxCents: REPLICATE_TEST_MAX_CENTS,
          timeoutMs: 2_000,
          logger,
        }),
      ),
    );
  const callbacks = replicateCallbackReader({ baseUrl: sim.url, token: REPLICATE_TEST_TOKEN, timeoutMs: 2_000 });
  return vendorDirectory({ replicate: opener }, () => 'replicate:acme/media-model', undefined, {
    replicate: () => Promise.resolve(callbacks),
  });
}
