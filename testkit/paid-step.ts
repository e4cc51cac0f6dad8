/** One paid step (a cover) run through the real activities, outside Temporal, against a vendor simulator. */
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { createPaidStepActivities, type CompletedStep } from '../src/activities/paid-steps';
import type { EpisodeStore } from '../src/store/episode-store';
import type { VendorSimulator } from '../src/vendor-sim/simulator';
import type { CredentialsLoader } from '../src/vendor-api/credentials';
import { spyingCredentials } from './deps';
import { nativeVendors } from '../src/vendors/directory';

export interface CoverStep {
  /** Submits the cover job (saves intent and reference). */
  submit(): Promise<unknown>;
  /** Waits for the job, downloads the artifact into the episode's media dir, records the charge. */
  complete(): Promise<CompletedStep>;
}

export function coverStep(
  store: EpisodeStore,
  vendor: VendorSimulator,
  episodeId: string,
  credentials: CredentialsLoader = spyingCredentials(),
): CoverStep {
  const acts = createPaidStepActivities({
    store,
    vendors: nativeVendors(credentials, { baseUrl: new URL(vendor.url), timeoutMs: 2_000 }),
    budgetCents: 20_000,
    pollIntervalMs: 20,
  });
  const env = new MockActivityEnvironment({}, { logger: new DefaultLogger('ERROR') });
  const step = { episodeId, step: 'cover' as const, round: 0 };
  return {
    submit: () => env.run(acts.submitPaidStep, { ...step, spec: { style: 'calm' } }),
    complete: () => env.run<[typeof step], CompletedStep, typeof acts.awaitPaidStep>(acts.awaitPaidStep, step),
  };
}
