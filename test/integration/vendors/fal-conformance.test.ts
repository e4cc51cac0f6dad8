/** The pay-once rows (conformance.ts) for the fal adapter at the fal simulator (docs/vendors.md, fal). */
import type { FalFaults } from '../../../src/vendor-sim/fal';
import { parseJobId } from '../../../src/vendors/fal';
import { falVendors, startTestFal } from '../../../testkit/fal';
import { describeConformance } from './conformance';

describeConformance('fal', async () => {
  const sim = await startTestFal({ unitPriceCents: 7, unitsPerRequest: 5 });
  let faults: FalFaults = {};
  const add = (more: FalFaults) => sim.setFaults((faults = { ...faults, ...more }));
  return {
    vendors: falVendors(sim),
    faults: {
      dropReply: () => add({ acceptThenDrop: { count: 1 } }),
      gateway5xxAfterAccept: () => add({ gateway5xxAfterQueue: { count: 1 } }),
      lookupMisses: () => add({ loseJobs: { count: 1 } }),
      meteredDrift: () => add({ meteredUnits: { count: 1, units: 13 } }),
      expireOutput: () => add({ expireFiles: { count: 1 } }),
      // A 422 after GPU time: billed one unit (a 500 would be billed nothing).
      failJob: () => add({ failJobs: { count: 1, status: 422 } }),
    },
    sent: () => sim.requests().filter((r) => r.method === 'POST').length,
    journal: () =>
      sim.billing().map((c) => ({ job: c.request_id, ref: c.ref, amount_cents: c.amount_cents, currency: c.currency })),
    jobOf: (remoteJobId) => parseJobId(remoteJobId).requestId,
    close: () => sim.close(),
  };
});
