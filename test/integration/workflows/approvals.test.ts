/**
 * Approvals that answer (updates with validators), late signals that are kept, what the UI shows, and one search for
 * all runs of an episode. Real dev server, vendor simulator over HTTP, the `episodes` CLI as an operator runs it.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { WorkflowUpdateFailedError, type WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { MAX_APPROVER, MAX_NOTES, decisionInputProblem } from '../../../src/domain/decision';
import { parseAllocationKey } from '../../../src/domain/allocation-key';
import type { EpisodeId } from '../../../src/domain/episode-id';
import { parseWeekId } from '../../../src/domain/week-id';
import { ErrorType } from '../../../src/domain/errors';
import { episodeProductionWorkflow, weeklyEpisodeWorkflow } from '../../../src/workflows';
import {
  approveSignal,
  approveUpdate,
  requestReworkSignal,
  requestReworkUpdate,
  statusQuery,
  type ProductionStatus,
} from '../../../src/workflows/messages';
import { sendDecision } from '../../../src/review/decision-updates';
import { runCli } from '../../../testkit/processes';
import { capturedLogs } from '../../../testkit/setup';
import { temporalCliPath } from '../../../testkit/temporal';
import { useWorkflowHarness } from '../../../testkit/workflow-harness';
import { until } from '../../../testkit/wait';
import {
  decisionUpdateId,
  paidStepWorkflowId,
  productionWorkflowId,
  reassemblyWorkflowId,
} from '../../../src/domain/names';

const execFileAsync = promisify(execFile);

/** The refusal type of a rejected update (its validator's ApplicationFailure). */
function refusalType(e: unknown): string | undefined {
  return e instanceof WorkflowUpdateFailedError && e.cause instanceof ApplicationFailure
    ? (e.cause.type ?? undefined)
    : undefined;
}

describe('approvals that answer, late signals, UI details, one search per episode', function () {
  this.timeout(180_000);
  const t = useWorkflowHarness('approvals');
  const cli = (...args: string[]) => runCli(args, t.operatorEnv());

  let weekCounter = 10;
  async function startProduction(key: string): Promise<[EpisodeId, WorkflowHandle<typeof episodeProductionWorkflow>]> {
    const { episodeId } = await t.store.allocate({
      allocationKey: parseAllocationKey(key),
      weekId: parseWeekId(`2027-W${weekCounter++}`),
      allocatedBy: { kind: 'test', note: 'approvals' },
    });
    const h = await t.env.client.workflow.start(episodeProductionWorkflow, {
      workflowId: productionWorkflowId(episodeId),
      taskQueue: t.taskQueue,
      args: [{ episodeId }],
    });
    return [episodeId, h];
  }

  const awaitingApproval = (h: WorkflowHandle<typeof episodeProductionWorkflow>, round = 0) =>
    until('awaiting approval', async () => {
      const s = await h.query(statusQuery);
      return s.phase === 'awaiting_approval' && s.reworkRound === round && s.decisions?.length === round
        ? s
        : undefined;
    });

  /** One vendor charge per step of this episode, and the ledger holds exactly those. */
  async function assertChargedOnce(id: EpisodeId, kinds: string[]): Promise<void> {
    const charges = t.vendor.billing().filter((c) => c.episode_id === id);
    assert.deepEqual(charges.map((c) => c.kind).sort(), [...kinds].sort(), `${id}: one charge per step`);
    const state = await t.store.requireEpisode(id);
    assert.deepEqual(state.ledger.map((l) => l.remote_job_id).sort(), charges.map((c) => c.job_id).sort());
  }

  it('refused while no round is open: nothing changes, the CLI exits 1 with the reason', async () => {
    // Slow jobs keep production in its video/cover phase long enough to be asked.
    await t.restartVendor({ jobDurationMs: 4000 });
    await t.withWorker(async () => {
      const [id, h] = await startProduction('no-round-open');
      await until('producing', async () => ((await h.query(statusQuery)).steps.length === 2 ? true : undefined));
      await assert.rejects(
        h.executeUpdate(approveUpdate, { args: [{ by: 'early' }] }),
        (e) => refusalType(e) === ErrorType.InvalidState,
      );
      const refused = await cli('approve', id, '--by', 'early');
      assert.equal(refused.code, 1, refused.stderr);
      assert.match(refused.stderr, /^episodes: InvalidState: refused by episode-.*: .* is not waiting for a decision/);
      const s = await h.query(statusQuery);
      assert.equal(s.phase, 'producing');
      assert.deepEqual(s.decisions, [], 'no decision taken');
      await awaitingApproval(h);
      const accepted = await cli('approve', id, '--by', 'editor');
      assert.equal(accepted.code, 0, accepted.stderr);
      assert.match(accepted.stdout, /round 0 approved by editor/);
      assert.equal((await h.result()).outcome, 'completed');
      const after = await cli('approve', id, '--by', 'editor2');
      assert.equal(after.code, 1, 'a completed production takes no decision');
      assert.match(after.stderr, /^episodes: InvalidState: /);
      await assertChargedOnce(id, ['video', 'cover', 'assembly']);
    });
  });

  it('two operators at once: one accepted, one refused; a retried CLI call gets the first answer; a late signal is kept', async () => {
    await t.withWorker(async () => {
      const [id, h] = await startProduction('two-operators');
      await awaitingApproval(h);
      // The vendor refuses the assembly's first three submissions (retried after 2, 4 and 8 s): production stays
      // open for the late signal and the retry, and then finishes by itself.
      t.vendor.setFaults({ fail5xx: { count: 3, scope: 'submit' } });
      const [a, b] = await Promise.all([cli('approve', id, '--by', 'alice'), cli('approve', id, '--by', 'bob')]);
      assert.deepEqual([a.code, b.code].sort(), [0, 1], `${a.stderr} ${b.stderr}`);
      const [winner, loser] = a.code === 0 ? (['alice', b] as const) : (['bob', a] as const);
      // Refused either in the same round (already decided) or because production has moved on: never taken twice.
      assert.match(
        loser.stderr,
        /^episodes: InvalidState: refused by episode-.*: (round 0 already has a decision: approve by |.* is not waiting for a decision)/,
      );

      await h.signal(approveSignal, { by: 'late-editor' });
      const s = await until('the late signal in status', async () => {
        const st = await h.query(statusQuery);
        return st.lateDecisions?.length ? st : undefined;
      });
      assert.deepEqual(
        s.decisions?.map(({ round, kind, by, channel }) => ({ round, kind, by, channel })),
        [{ round: 0, kind: 'approve', by: winner, channel: 'cli' }],
        'one decision, whoever asked how often',
      );
      assert.equal(s.lateDecisions?.[0]?.by, 'late-editor');
      assert.equal(s.lateDecisions?.[0]?.kind, 'approve');
      const status = await cli('status', id);
      assert.match(status.stdout, /LATE +approve by late-editor/);
      const retried = await cli('approve', id, '--by', winner);
      assert.equal(retried.code, 0, retried.stderr);
      assert.equal(retried.stdout, (a.code === 0 ? a : b).stdout, 'the same answer');
      assert.equal((await h.query(statusQuery)).decisions?.length, 1, 'the retry took no second decision');

      const result = await h.result();
      assert.equal(result.outcome === 'completed' && result.approvedBy, winner, 'the late signal changed nothing');
      assert.ok(
        capturedLogs.some((l) => l.includes('outside an open round') && l.includes('late-editor')),
        'the late signal is logged with its sender',
      );
      await assertChargedOnce(id, ['video', 'cover', 'assembly']);
    });
  });

  it('rework notes and approver names out of bounds are refused; nothing changes', async () => {
    await t.withWorker(async () => {
      const [id, h] = await startProduction('bad-notes');
      await awaitingApproval(h);
      for (const args of [
        { notes: '', by: 'editor' },
        { notes: '   ', by: 'editor' },
        { notes: 'x'.repeat(MAX_NOTES + 1), by: 'editor' },
        { notes: 'fine', by: '' },
        { notes: 'fine', by: 'x'.repeat(MAX_APPROVER + 1) },
      ]) {
        await assert.rejects(
          h.executeUpdate(requestReworkUpdate, { args: [args] }),
          (e) => refusalType(e) === ErrorType.InvalidInput,
          JSON.stringify(args).slice(0, 60),
        );
      }
      const empty = await cli('rework', id, '--notes', ' ', '--by', 'editor');
      assert.equal(empty.code, 2, empty.stderr);
      assert.match(empty.stderr, /^episodes: InvalidInput: rework notes must not be empty/);
      const s: ProductionStatus = await h.query(statusQuery);
      assert.equal(s.phase, 'awaiting_approval');
      assert.equal(s.reworkRound, 0);
      assert.deepEqual(s.decisions, []);
      const rework = await cli('rework', id, '--notes', 'warmer', '--by', 'editor');
      assert.equal(rework.code, 0, rework.stderr);
      assert.match(rework.stdout, /rework of round 0 requested by editor/);
      await awaitingApproval(h, 1);
      assert.equal((await cli('approve', id, '--by', 'editor')).code, 0);
      assert.equal((await h.result()).outcome, 'completed');
      await assertChargedOnce(id, ['video', 'cover', 'rework', 'assembly']);
    });
  });

  it('decision signals pass the updates’ checks: an invalid one is dropped, logged and listed, and pays nothing', async () => {
    await t.withWorker(async () => {
      const [id, h] = await startProduction('bad-signals');
      await awaitingApproval(h);
      const bad = [
        { kind: 'approve', input: { by: '', round: 0 } }, // approved under an empty name before the check
        { kind: 'approve', input: { by: '   ' } },
        { kind: 'approve', input: { by: 'x'.repeat(MAX_APPROVER + 1) } },
        { kind: 'approve', input: { by: 42 } },
        { kind: 'rework', input: { notes: '', by: 'editor' } },
        { kind: 'rework', input: { notes: 'x'.repeat(MAX_NOTES + 1), by: 'editor' } },
        { kind: 'rework', input: { notes: 'ring \u0007 the bell', by: 'editor' } },
        { kind: 'rework', input: { by: 'editor' } },
      ] as const;
      for (const b of bad) {
        await h.signal(b.kind === 'approve' ? approveSignal : requestReworkSignal, b.input as never);
      }
      const s = await until('every invalid signal listed (or one taken)', async () => {
        const st = await h.query(statusQuery);
        return st.droppedDecisions?.length === bad.length || st.decisions?.length ? st : undefined;
      });
      assert.deepEqual(s.decisions, [], 'no invalid signal is taken as a decision');
      assert.deepEqual(
        s.droppedDecisions?.map((d) => [d.kind, d.reason]),
        bad.map((b) => [b.kind, decisionInputProblem(b.kind, b.input)]),
      );
      assert.equal(s.droppedDecisions?.[2]?.by, 'x'.repeat(MAX_APPROVER), 'an over-long name is kept cut');
      assert.equal(s.droppedDecisions?.[3]?.by, null);
      assert.deepEqual([s.phase, s.reworkRound, s.decisions, s.lateDecisions], ['awaiting_approval', 0, [], []]);
      assert.equal((await t.store.requireEpisode(id)).approval?.status, 'pending');
      assert.ok(
        capturedLogs.some((l) => l.includes('decision signal refused: dropped') && l.includes(id)),
        'each one is logged',
      );
      const status = await cli('status', id);
      assert.match(status.stdout, /DROPPED +approve signal by "" at .*: the approver name must not be empty/);

      await h.signal(approveSignal, { by: 'editor', round: 0 });
      const result = await h.result();
      assert.equal(result.outcome === 'completed' && result.approvedBy, 'editor');
      await assertChargedOnce(id, ['video', 'cover', 'assembly']);
    });
  });

  it('each decision records its channel and who made it: signal, Temporal update, review desk, CLI', async () => {
    await t.withWorker(async () => {
      const [id, h] = await startProduction('channels');
      await awaitingApproval(h);
      await h.signal(requestReworkSignal, { notes: 'one', by: 'sam', round: 0 });
      await awaitingApproval(h, 1);
      // The Temporal UI's "Send an Update" under an ID of the user's own.
      const updateId = `ui-${id}-r1-rework-uma`;
      await h.executeUpdate(requestReworkUpdate, { args: [{ notes: 'two', by: 'uma', round: 1 }], updateId });
      await awaitingApproval(h, 2);
      await sendDecision(t.env.client, id, { kind: 'rework', by: 'dee', notes: 'three' }, { pinned: 2, door: 'desk' });
      await awaitingApproval(h, 3);
      assert.equal((await cli('approve', id, '--by', 'cai', '--round', '3')).code, 0);
      await h.result();
      const expected = [
        [0, 'rework', 'sam', 'signal'],
        [1, 'rework', 'uma', 'update'],
        [2, 'rework', 'dee', 'desk'],
        [3, 'approve', 'cai', 'cli'],
      ];
      const facts = (d: { round: number; kind: string; by: string; channel?: string }) => [
        d.round,
        d.kind,
        d.by,
        d.channel,
      ];
      const s = await h.query(statusQuery);
      assert.deepEqual(s.decisions?.map(facts), expected, 'in the status query');
      const stored = (await t.store.requireEpisode(id)).approval;
      assert.deepEqual(stored?.decisions?.map(facts), expected, 'in the store');
      assert.deepEqual(
        stored?.decisions?.map((d) => d.at),
        s.decisions?.map((d) => d.at),
        'at the workflow time of each',
      );
      const status = await cli('status', id);
      assert.match(status.stdout, /round 2: rework by dee through the review desk/);
      assert.match(status.stdout, /round 1: rework by uma through a Temporal update/);
      await assertChargedOnce(id, ['video', 'cover', 'rework', 'rework', 'rework', 'assembly']);
    });
  });

  it('a rework retried with --round after its new round opened gets the first answer, not a second paid rework', async () => {
    await t.withWorker(async () => {
      const [id, h] = await startProduction('rework-retry');
      await awaitingApproval(h);
      const bad = await cli('rework', id, '--notes', 'warmer', '--by', 'editor', '--round', 'one');
      assert.equal(bad.code, 2, bad.stderr);
      assert.match(bad.stderr, /^episodes: InvalidInput: --round must be a round number/);
      const first = await cli('rework', id, '--notes', 'warmer', '--by', 'editor', '--round', '0');
      assert.equal(first.code, 0, first.stderr);
      assert.match(first.stdout, /rework of round 0 requested by editor/);
      await awaitingApproval(h, 1);
      // The operator's retry (a lost answer, say) once round 1 waits for a decision.
      const retried = await cli('rework', id, '--notes', 'warmer', '--by', 'editor', '--round', '0');
      assert.equal(retried.code, 0, retried.stderr);
      assert.equal(retried.stdout, first.stdout, 'the same answer');
      const s = await h.query(statusQuery);
      assert.equal(s.reworkRound, 1, 'no second rework round');
      assert.deepEqual(
        s.decisions?.map(({ round, kind, by, channel }) => ({ round, kind, by, channel })),
        [{ round: 0, kind: 'rework', by: 'editor', channel: 'cli' }],
      );
      // A decision pinned to a round that is not open is refused, and changes nothing.
      const stale = await cli('approve', id, '--by', 'other', '--round', '0');
      assert.equal(stale.code, 1, stale.stderr);
      assert.match(stale.stderr, /^episodes: InvalidState: refused by episode-/);
      assert.equal((await cli('approve', id, '--by', 'editor', '--round', '1')).code, 0);
      assert.equal((await h.result()).outcome, 'completed');
      await assertChargedOnce(id, ['video', 'cover', 'rework', 'assembly']);
    });
  });

  it('one search lists the weekly run, the production and every step; the UI gets summaries, details and descriptions', async () => {
    await t.withWorker(async () => {
      const weekly = await t.env.client.workflow.execute(weeklyEpisodeWorkflow, {
        workflowId: 'search-run',
        taskQueue: t.taskQueue,
        args: [{ week: '2027-W40' }],
      });
      const id = weekly.episodeId as EpisodeId;
      const h = t.env.client.workflow.getHandle<typeof episodeProductionWorkflow>(weekly.production.workflowId);
      await awaitingApproval(h);

      const metadata = await until('current details', async () => {
        const m = await h.query<UiMetadata>('__temporal_workflow_metadata');
        return m.currentDetails ? m : undefined;
      });
      assert.match(metadata.currentDetails, /Waiting for approval of round 0 since \d{4}-/);
      assert.ok(metadata.currentDetails.includes(`npx episodes approve ${id} --by NAME`), metadata.currentDetails);
      assert.match(metadata.currentDetails, /update or signal `requestRework`/);
      // An update ID of the UI's own: the CLI's would record the decision as the CLI's.
      assert.ok(metadata.currentDetails.includes(`ui-${id}-r0-approve-NAME`), metadata.currentDetails);
      assert.ok(!metadata.currentDetails.includes(decisionUpdateId(id, 0, 'approve', 'NAME')), metadata.currentDetails);
      const described = [
        ...metadata.definition.queryDefinitions,
        ...metadata.definition.signalDefinitions,
        ...metadata.definition.updateDefinitions,
      ];
      for (const name of ['status', 'approve', 'requestRework']) {
        assert.ok(
          described.some((d) => d.name === name && (d.description ?? '').length > 10),
          `${name} described`,
        );
      }
      assert.equal(metadata.definition.updateDefinitions.length, 2);
      assert.equal(
        await (await t.env.client.workflow.getHandle(paidStepWorkflowId(id, 'video', 0)).describe()).staticSummary(),
        `Episode ${id}: paid step video-r0`,
      );

      assert.equal((await cli('approve', id, '--by', 'editor')).code, 0);
      await h.result();
      const reassembled = await cli('reassemble', id);
      assert.equal(reassembled.code, 0, reassembled.stderr);
      assert.match(reassembled.stdout, /\(8\.00 USD\)/, 'money as money');

      const expected = [
        'search-run',
        productionWorkflowId(id),
        paidStepWorkflowId(id, 'video', 0),
        paidStepWorkflowId(id, 'cover', 0),
        paidStepWorkflowId(id, 'assembly', 0),
        reassemblyWorkflowId(id, 1),
        paidStepWorkflowId(id, 'assembly', 1),
      ].sort();
      const listed = (query: string) =>
        until(`visibility: ${query}`, async () => {
          const { stdout } = await execFileAsync(temporalCliPath(), [
            'workflow',
            'list',
            '--query',
            query,
            '--output',
            'json',
            '--address',
            t.env.address,
          ]);
          const ids = (JSON.parse(stdout || '[]') as { execution: { workflowId: string } }[])
            .map((w) => w.execution.workflowId)
            .sort();
          return ids.length === expected.length ? ids : undefined;
        });
      assert.deepEqual(await listed(`EpisodeId="${id}"`), expected);
      assert.deepEqual(await listed(`WeekId="2027-W40"`), expected);

      const show = await cli('show', id);
      assert.match(show.stdout, /charge +video-r0 +42\.00 USD/);
      assert.match(show.stdout, /ledger +4 charges, 61\.00 USD/);
      const status = await cli('status', id, '--json');
      assert.deepEqual(JSON.parse(status.stdout).cost, { amount_cents: 6100, currency: 'USD' });
      const ledger = await cli('ledger');
      assert.match(ledger.stdout, /all +total +61\.00 USD/);
    });
  });
});

interface UiMetadata {
  definition: {
    queryDefinitions: { name: string; description?: string }[];
    signalDefinitions: { name: string; description?: string }[];
    updateDefinitions: { name: string; description?: string }[];
  };
  currentDetails: string;
}
