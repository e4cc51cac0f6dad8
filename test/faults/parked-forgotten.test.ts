/**
 * A step parked in its workflow (waiting for `reconciled`) whose parked record a restore forgot: `episodes repair`
 * writes the record back from Temporal's history, `episodes status` shows the PARKED line, and `episodes reconcile`
 * settles it. Real dev server, real worker, vendor simulator over HTTP, the CLI as an operator runs it.
 */
import assert from 'node:assert/strict';
import { parseAllocationKey } from '../../src/domain/allocation-key';
import { paidStepWorkflowId } from '../../src/domain/names';
import { parseWeekId } from '../../src/domain/week-id';
import { paidStepWorkflow } from '../../src/workflows';
import { stepStatusQuery } from '../../src/workflows/messages';
import { runCli } from '../../testkit/processes';
import { until } from '../../testkit/wait';
import { useWorkflowHarness } from '../../testkit/workflow-harness';

describe('a parked step whose parked record a restore forgot', function () {
  this.timeout(180_000);
  const h = useWorkflowHarness('parked-forgotten');

  it('episodes repair writes it back from Temporal: status shows PARKED, reconcile settles it, one charge', async () => {
    const { episodeId: id } = await h.store.allocate({
      allocationKey: parseAllocationKey('parked-forgotten'),
      weekId: parseWeekId('2026-W32'),
      allocatedBy: { kind: 'test', note: 'parked record forgotten' },
    });
    const parkedLines = async () => {
      const status = await runCli(['status', id], h.operatorEnv());
      assert.equal(status.code, 0, status.stderr);
      return status.stdout.split('\n').filter((l) => l.includes('PARKED'));
    };
    // A dropped reply at a vendor that can neither replay a key nor look one up: the outcome is unknown.
    h.vendor.setFaults({ noIdempotency: true, acceptThenDrop: { count: 1 } });
    await h.withWorker(async () => {
      const step = await h.env.client.workflow.start(paidStepWorkflow, {
        workflowId: paidStepWorkflowId(id, 'video', 0),
        taskQueue: h.taskQueue,
        args: [{ episodeId: id, step: 'video', round: 0, spec: { format: 'mp4' } }],
      });
      await until('the step parked', async () =>
        (await step.query(stepStatusQuery)).phase === 'needs_reconciliation' ? true : undefined,
      );
      assert.equal((await h.store.requireEpisode(id)).steps['video-r0']?.status, 'needs_reconciliation');
      // The restore: the state from before the intent is back; the step workflow waits on.
      await h.store.updateEpisode(id, (s) => ({ ...s, steps: {} }));
      assert.deepEqual(await parkedLines(), [], 'before the repair nobody sees it');

      const repair = await runCli(['repair'], h.operatorEnv());
      assert.equal(repair.code, 0, repair.stdout + repair.stderr);
      assert.match(repair.stdout, new RegExp(`${id}\\s+step-parked\\s+video-r0`));
      const lines = await parkedLines();
      assert.equal(lines.length, 1, 'one PARKED line after the repair');
      assert.ok(lines[0]!.includes(`episodes reconcile ${id} --step video-r0`), lines[0]);
      assert.match(lines[0]!, /cannot look it up/, 'with the reason Temporal recorded');

      const charge = h.vendor.billing().find((c) => c.client_ref === `${id}:video:r0`)!;
      h.vendor.setFaults({});
      const done = await runCli(
        ['reconcile', id, '--step', 'video-r0', '--remote-job', charge.job_id, '--by', 'ops'],
        h.operatorEnv(),
      );
      assert.equal(done.code, 0, done.stderr);
      const result = await step.result();
      assert.equal(result.remoteJobId, charge.job_id, 'the step settles on the job the vendor charged');
      assert.equal(h.vendor.billing().length, 1, 'charged once');
      const again = await runCli(['repair'], h.operatorEnv());
      assert.equal(again.code, 0, again.stderr);
      assert.doesNotMatch(again.stdout, /step-parked/, 'a second repair finds nothing to do');
    });
  });
});
