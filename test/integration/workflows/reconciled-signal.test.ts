/**
 * A paid step parked for `episodes reconcile` wakes on the operator's `reconciled` signal even when the signal reaches
 * the step before the refusal it answers: the operator settled the record between the activity's write and its
 * failure arriving in the workflow (seen in the campaign: seed 13091 on PostgreSQL left a step waiting forever).
 * Real dev server, file store, vendor simulator over HTTP; the operator's write is the one `episodes reconcile` makes.
 */
import assert from 'node:assert/strict';
import type { EpisodeId } from '../../../src/domain/episode-id';
import type { EpisodeState } from '../../../src/domain/episode-state';
import { parseAllocationKey } from '../../../src/domain/allocation-key';
import { parseWeekId } from '../../../src/domain/week-id';
import { idempotencyKey, paidStepWorkflowId } from '../../../src/domain/names';
import { FileEpisodeStore } from '../../../src/store/file-store';
import { paidStepWorkflow } from '../../../src/workflows';
import { reconciledSignal } from '../../../src/workflows/messages';
import { sleep, until } from '../../../testkit/wait';
import { useWorkflowHarness } from '../../../testkit/workflow-harness';

/** A file store that runs `whenParked` once, right after a step's record is written as `needs_reconciliation`. */
class ParkWatchingStore extends FileEpisodeStore {
  whenParked: ((state: EpisodeState) => Promise<void>) | undefined;

  override async updateEpisode(id: EpisodeId, update: (s: EpisodeState) => EpisodeState): Promise<EpisodeState> {
    const next = await super.updateEpisode(id, update);
    const hook = this.whenParked;
    if (hook && Object.values(next.steps).some((r) => r.status === 'needs_reconciliation')) {
      this.whenParked = undefined;
      await hook(next);
    }
    return next;
  }
}

describe('a reconciled signal that arrives before the refusal it answers', function () {
  this.timeout(120_000);
  const t = useWorkflowHarness('reconciled-signal');

  it('still wakes the parked step: it finishes on the reconciled job, charged once', async () => {
    const store = new ParkWatchingStore(t.dir);
    t.store = store;
    const { episodeId: id } = await store.allocate({
      allocationKey: parseAllocationKey('reconciled-early'),
      weekId: parseWeekId('2027-W20'),
      allocatedBy: { kind: 'test', note: 'reconciled signal' },
    });
    const workflowId = paidStepWorkflowId(id, 'video', 0);
    // The vendor charges and drops the reply, and cannot look jobs up: the submission parks for an operator.
    t.vendor.setFaults({ noIdempotency: true, acceptThenDrop: { count: 1 } });
    store.whenParked = async (parked) => {
      const job = t.vendor.billing().find((c) => c.client_ref === idempotencyKey(id, 'video', 0));
      assert.ok(job, 'the vendor charged the dropped submission');
      const record = parked.steps['video-r0']!;
      await store.updateEpisode(id, (s) => ({
        ...s,
        steps: { ...s.steps, 'video-r0': { ...record, status: 'submitted', remote_job_id: job.job_id, error: null } },
      }));
      t.vendor.setFaults({});
      await t.env.client.workflow.getHandle(workflowId).signal(reconciledSignal);
      // The signal's workflow task runs before the activity's refusal reaches the workflow.
      await sleep(2000);
    };
    await t.withWorker(async () => {
      const handle = await t.env.client.workflow.start(paidStepWorkflow, {
        workflowId,
        taskQueue: t.taskQueue,
        args: [{ episodeId: id, step: 'video', round: 0, spec: { format: 'mp4' } }],
      });
      await until('the step parked and reconciled', () => (store.whenParked ? undefined : true));
      const done = await until(
        'the step to finish after its reconciled signal',
        async () => ((await handle.describe()).status.name === 'COMPLETED' ? handle.result() : undefined),
        30_000,
      );
      const charges = t.vendor.billing();
      assert.equal(charges.length, 1, 'charged once: nothing sent again');
      assert.equal(done.remoteJobId, charges[0]!.job_id, 'the reconciled job');
      const state = await store.requireEpisode(id);
      assert.deepEqual(
        state.ledger.map((l) => l.remote_job_id),
        [charges[0]!.job_id],
      );
    });
  });
});
