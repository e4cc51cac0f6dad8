/**
 * Test-only: vendor adapters with one protection taken away, the proofs that the tests of that protection can fail.
 * Production code has no option or variable for any of these.
 */
import type { Money } from '../src/domain/episode-state';
import type { VendorAdapter } from '../src/vendors/port';

/**
 * The metered amount replaced by the estimate: a finished job reports `estimate` as its cost, whatever the vendor
 * measured, as an adapter would that priced a step before it ran and never looked again.
 */
export function reportingEstimate(adapter: VendorAdapter, estimate: Money): VendorAdapter {
  const estimated = <J extends { cost: Money | null }>(job: J): J =>
    job.cost === null ? job : { ...job, cost: estimate };
  return {
    ...adapter,
    get: async (jobId) => estimated(await adapter.get(jobId)),
    find: async (ref, since) => {
      const jobs = await adapter.find(ref, since);
      return jobs === 'unsupported' ? jobs : jobs.map(estimated);
    },
  };
}
