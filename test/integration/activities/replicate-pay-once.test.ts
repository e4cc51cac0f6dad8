/**
 * Proof that the metered amount matters, at the activity level: the Replicate adapter reporting the estimate as the
 * cost leaves the ledger off the journal. The rows Replicate passes as it is are the conformance rows
 * (test/integration/vendors/conformance.ts, replicate-conformance.test.ts).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { createActivities, type Activities } from '../../../src/activities';
import type { CompletedStep, PaidStepInput, SubmittedStep } from '../../../src/activities/paid-steps';
import { parseAllocationKey } from '../../../src/domain/allocation-key';
import type { EpisodeId } from '../../../src/domain/episode-id';
import { meteredCents } from '../../../src/domain/metered-cost';
import { parseWeekId } from '../../../src/domain/week-id';
import { FileEpisodeStore } from '../../../src/store/file-store';
import type { ReplicateSimulator } from '../../../src/vendor-sim/replicate';
import {
  REPLICATE_TEST_ESTIMATE_CENTS as ESTIMATE_CENTS,
  REPLICATE_TEST_PRICE as PRICE,
  REPLICATE_TEST_SECONDS as SECONDS,
  replicateVendors,
  startTestReplicate,
} from '../../../testkit/replicate';
import { reportingEstimate } from '../../../testkit/unsafe-vendors';

describe('paying once at Replicate (activity level): the estimate reported as the cost', function () {
  this.timeout(30_000);
  let dir: string;
  let sim: ReplicateSimulator;
  let store: FileEpisodeStore;
  let id: EpisodeId;
  const mock = new MockActivityEnvironment({}, { logger: new DefaultLogger('ERROR') });

  beforeEach(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'replicate-pay-once-'));
    sim = await startTestReplicate();
    store = new FileEpisodeStore(dir);
    ({ episodeId: id } = await store.allocate({
      allocationKey: parseAllocationKey('replicate-test'),
      weekId: parseWeekId('2026-W32'),
      allocatedBy: { kind: 'test', note: 'replicate pay once' },
    }));
  });
  afterEach(async () => {
    await store.close();
    await sim.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('unsafe variant (test-only): the estimate reported as the cost → ledger − journal ≠ 0', async () => {
    const estimated = replicateVendors(sim, (adapter) =>
      reportingEstimate(adapter, { amount_cents: ESTIMATE_CENTS, currency: 'USD' }),
    );
    const acts = createActivities({ store, vendors: estimated, budgetCents: 20_000, pollIntervalMs: 20 });
    const input = { episodeId: id, step: 'video' as const, round: 0 };
    sim.setFaults({ meteredDrift: { count: 1, factor: 1.5 } });
    await mock.run<[PaidStepInput], SubmittedStep, Activities['submitPaidStep']>(acts.submitPaidStep, {
      ...input,
      spec: { prompt: 'a video' },
    });
    await mock.run<[Omit<PaidStepInput, 'spec'>], CompletedStep, Activities['awaitPaidStep']>(
      acts.awaitPaidStep,
      input,
    );
    const sum = (lines: { amount_cents: number }[]) => lines.reduce((s, l) => s + l.amount_cents, 0);
    const difference = sum((await store.requireEpisode(id)).ledger) - sum(sim.journal());
    assert.equal(difference, ESTIMATE_CENTS - meteredCents(SECONDS * 1.5, PRICE), 'the estimate is not the charge');
    assert.notEqual(difference, 0);
  });
});
