/** The pay-once rows (conformance.ts) for the native adapter at the native simulator (docs/vendor-api.md). */
import type { VendorFaults } from '../../../src/vendor-sim/simulator';
import { nativeVendors } from '../../../src/vendors/directory';
import { spyingCredentials, startTestVendor } from '../../../testkit/deps';
import { describeConformance } from './conformance';

describeConformance('native', async () => {
  const sim = await startTestVendor();
  let faults: VendorFaults = {};
  const add = (more: VendorFaults) => sim.setFaults((faults = { ...faults, ...more }));
  return {
    vendors: nativeVendors(spyingCredentials(), { baseUrl: new URL(sim.url), timeoutMs: 2_000 }),
    // No gateway5xxAfterAccept (a 5xx is answered before any state change), no meteredDrift (fixed prices), no
    // expireOutput (artifacts are kept).
    faults: {
      dropReply: () => add({ acceptThenDrop: { count: 1 } }),
      lookupMisses: () => add({ loseJobs: { count: 1 } }),
      failJob: () => add({ failJobs: { count: 1 } }),
    },
    sent: () => sim.requests().filter((r) => r.method === 'POST' && r.path === '/v1/jobs').length,
    journal: () =>
      sim
        .billing()
        .map((c) => ({ job: c.job_id, ref: c.client_ref, amount_cents: c.amount_cents, currency: c.currency })),
    jobOf: (remoteJobId) => remoteJobId,
    close: () => sim.close(),
  };
});
