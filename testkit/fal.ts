/** The fal simulator and adapter for tests: simulators always closed, adapters pointed at them. */
import type { PaidStep } from '../src/domain/paid-step';
import type { VendorProfile } from '../src/domain/vendor-profile';
import { startFalSimulator, type FalSimulator, type FalSimulatorOptions } from '../src/vendor-sim/fal';
import { vendorDirectory, type AdapterOpener } from '../src/vendors/directory';
import { falAdapter, falCallbackReader, falJwks, type FalAdapterOptions } from '../src/vendors/fal';
import type { VendorAdapter, Vendors } from '../src/vendors/port';

/** Distinctive, so a leak anywhere is unmistakable. */
export const FAL_TEST_KEY = 'fal-test-key-SECRET-91c2e7';
export const FAL_TEST_MODEL = 'fal-ai/kling-video/v2.1/standard/text-to-video';
export const FAL_TEST_MAX_CENTS: Record<PaidStep, number> = { video: 6000, cover: 500, rework: 3000, assembly: 1500 };

export function startTestFal(options: Partial<FalSimulatorOptions> = {}): Promise<FalSimulator> {
  return startFalSimulator({
    apiKey: FAL_TEST_KEY,
    jobDurationMs: 30,
    media: 'synthetic',
    listingDelayMs: 0,
    ...options,
  });
}

/** `options`: e.g. a clock (`now`) or a JWKS (`jwks`) shared with other adapters. */
export function testFalAdapter(
  sim: FalSimulator,
  model = FAL_TEST_MODEL,
  options: Partial<FalAdapterOptions> = {},
): VendorAdapter {
  return falAdapter({
    queueUrl: sim.queueUrl,
    apiUrl: sim.apiUrl,
    jwksUrl: sim.jwksUrl,
    apiKey: FAL_TEST_KEY,
    model,
    maxCents: FAL_TEST_MAX_CENTS,
    timeoutMs: 2_000,
    ...options,
  });
}

/**
 * Every step on fal at the simulator. `unsafe` (test-only, the proof that the fal rules bite): the fal adapter with the
 * native vendor's promises: its listing sees every job and its resend is harmless, as if fal took idempotency keys.
 */
export function falVendors(sim: FalSimulator, options: { unsafe?: boolean } = {}): Vendors {
  // One JWKS kept for the opener's adapters and its callback reader (in production each opener keeps its own).
  const jwks = falJwks({ jwksUrl: sim.jwksUrl, timeoutMs: 2_000 });
  const callbacks = falCallbackReader({ jwksUrl: sim.jwksUrl, jwks });
  const opener: AdapterOpener = (model) => {
    const adapter = testFalAdapter(sim, model ?? FAL_TEST_MODEL, { jwks });
    if (!options.unsafe) return Promise.resolve(adapter);
    const native: VendorProfile = { ...adapter.profile, idempotency: 'key', lookupSeesEveryJob: true };
    return Promise.resolve({ ...adapter, profile: native });
  };
  return vendorDirectory({ fal: opener }, () => `fal:${FAL_TEST_MODEL}`, undefined, {
    fal: () => Promise.resolve(callbacks),
  });
}
