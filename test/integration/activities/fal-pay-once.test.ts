/**
 * Proof that fal's rules bite, at the activity level: the fal adapter given the native vendor's promises (its listing
 * believed, a resend harmless) pays a dropped reply twice. The rows fal passes with its own profile are the
 * conformance rows (test/integration/vendors/conformance.ts, fal-conformance.test.ts).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { createActivities, type Activities } from '../../../src/activities';
import type { PaidStepInput, SubmittedStep } from '../../../src/activities/paid-steps';
import { parseAllocationKey } from '../../../src/domain/allocation-key';
import type { EpisodeId } from '../../../src/domain/episode-id';
import { ErrorType } from '../../../src/domain/errors';
import { parseWeekId } from '../../../src/domain/week-id';
import { FileEpisodeStore } from '../../../src/store/file-store';
import type { FalSimulator } from '../../../src/vendor-sim/fal';
import { falVendors, startTestFal } from '../../../testkit/fal';
import { until } from '../../../testkit/wait';

describe('pay once at fal (activity level): the native rules given to fal', function () {
  this.timeout(60_000);
  let dir: string;
  let sim: FalSimulator;
  let store: FileEpisodeStore;
  let id: EpisodeId;

  beforeEach(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'fal-pay-once-'));
    store = new FileEpisodeStore(dir);
    ({ episodeId: id } = await store.allocate({
      allocationKey: parseAllocationKey('fal-pay-once'),
      weekId: parseWeekId('2026-W32'),
      allocatedBy: { kind: 'test', note: 'fal pay once' },
    }));
  });
  afterEach(async () => {
    await sim.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('proof that it bites: fal with the native rules (its listing believed) pays the dropped reply twice', async () => {
    sim = await startTestFal({ listingDelayMs: 600_000 });
    const acts = createActivities({
      store,
      vendors: falVendors(sim, { unsafe: true }),
      budgetCents: 20_000,
      pollIntervalMs: 20,
    });
    const submit = (attempt: number) =>
      new MockActivityEnvironment({ attempt }, { logger: new DefaultLogger('ERROR') }).run<
        [PaidStepInput],
        SubmittedStep,
        Activities['submitPaidStep']
      >(acts.submitPaidStep, { episodeId: id, step: 'video', round: 0, spec: { prompt: 'a lighthouse at dawn' } });
    const charges = () => sim.billing().filter((c) => c.ref === `${id}:video:r0`);
    sim.setFaults({ acceptThenDrop: { count: 1 } });
    // The listing does not show the queued request; believed, "no job" means send again.
    await assert.rejects(submit(1), (e: Error & { type?: string }) => e.type === ErrorType.VendorUnavailable);
    await submit(2);
    await until('both requests billed', () => (charges().length >= 2 ? true : undefined));
    assert.equal(sim.requests().filter((r) => r.method === 'POST').length, 2, 'sent twice');
    assert.equal(charges().length, 2, 'the step is paid twice');
  });
});
