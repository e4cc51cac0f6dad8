/** The pay-once rows (conformance.ts) for the Replicate adapter at the Replicate simulator (docs/vendors.md). */
import type { ReplicateFaults } from '../../../src/vendor-sim/replicate';
import { replicateVendors, startTestReplicate } from '../../../testkit/replicate';
import { describeConformance } from './conformance';

describeConformance('replicate', async () => {
  const sim = await startTestReplicate();
  let faults: ReplicateFaults = {};
  const add = (more: ReplicateFaults) => sim.setFaults((faults = { ...faults, ...more }));
  return {
    vendors: replicateVendors(sim),
    faults: {
      dropReply: () => add({ acceptThenDrop: { count: 1 } }),
      gateway5xxAfterAccept: () => add({ fail5xx: { count: 1, created: true } }),
      // The undocumented worst case: billed, then unknown to get and to the list.
      lookupMisses: () => add({ losePredictions: { count: 1, mode: 'vanished' } }),
      meteredDrift: () => add({ meteredDrift: { count: 1, factor: 1.5 } }),
      expireOutput: () => add({ expireOutputs: { count: 1 } }),
      failJob: () => add({ failPredictions: { count: 1 } }),
    },
    sent: () => sim.creates(),
    journal: () =>
      sim.journal().map((c) => ({ job: c.id, ref: c.correlation, amount_cents: c.amount_cents, currency: c.currency })),
    jobOf: (remoteJobId) => remoteJobId,
    close: () => sim.close(),
  };
});
