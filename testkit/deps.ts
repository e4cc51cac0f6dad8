/** Real activity dependencies for workflow tests: a store, the vendor simulator over HTTP, a spying key loader. */
import type { ActivityDeps } from '../src/activities';
import type { EpisodeStore } from '../src/store/episode-store';
import type { CredentialsLoader } from '../src/vendor-api/credentials';
import { startVendorSimulator, type VendorSimulator, type VendorSimulatorOptions } from '../src/vendor-sim/simulator';
import { nativeVendors } from '../src/vendors/directory';

/** Distinctive, so that a leak into a history, a log or a file is unmistakable. */
export const WORKFLOW_TEST_API_KEY = 'sk-wf-test-SECRET-5b1e0c9d';

export interface SpyingCredentials extends CredentialsLoader {
  loads: number;
}

export function spyingCredentials(key = WORKFLOW_TEST_API_KEY): SpyingCredentials {
  const spy: SpyingCredentials = {
    loads: 0,
    load() {
      spy.loads += 1;
      return Promise.resolve(key);
    },
  };
  return spy;
}

export function startTestVendor(options: Partial<VendorSimulatorOptions> = {}): Promise<VendorSimulator> {
  return startVendorSimulator({ apiKey: WORKFLOW_TEST_API_KEY, jobDurationMs: 30, ...options });
}

export function testDeps(
  store: EpisodeStore,
  vendor: VendorSimulator,
  credentials: CredentialsLoader = spyingCredentials(),
  extra: Partial<ActivityDeps> = {},
): ActivityDeps {
  return {
    store,
    vendors: nativeVendors(credentials, { baseUrl: new URL(vendor.url), timeoutMs: 2_000 }),
    budgetCents: 20_000,
    pollIntervalMs: 20,
    ...extra,
  };
}
