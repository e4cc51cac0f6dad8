/**
 * Commands that lead to spending money. None of them creates an episode: each takes an explicit episode id and
 * checks that it exists before it touches Temporal, the credentials or the vendor.
 */
import * as os from 'node:os';
import { WorkflowIdReusePolicy } from '@temporalio/common';
import type { Command } from 'commander';
import { parseEpisodeId, type EpisodeId } from '../domain/episode-id';
import type { EpisodeState, Money } from '../domain/episode-state';
import type { PaidStep } from '../domain/paid-step';
import { PipelineError, ErrorType } from '../domain/errors';
import { vendorsFromEnv } from '../vendors/directory';
import { episodeProductionWorkflow, episodeReassemblyWorkflow } from '../workflows';
import { reconciledSignal, statusQuery, type ProductionStatus } from '../workflows/messages';
import { sendDecision } from '../review/decision-updates';
import { episodeRunTags } from '../workflows/episode-tags';
import { CHANNEL_LABELS, approverProblem, notesProblem } from '../domain/decision';
import { formatMoney } from '../domain/money';
import { paidStepWorkflowId, productionWorkflowId, reassemblyWorkflowId, stepKey } from '../domain/names';
import { printJson, type CliContext } from './context';

export function registerPaidCommands(program: Command, ctx: CliContext): void {
  registerGenerate(program, ctx);
  registerApprove(program, ctx);
  registerRework(program, ctx);
  registerReassemble(program, ctx);
  registerStatus(program, ctx);
  registerReconcile(program, ctx);
}

/** The guard shared by every paid command: a parsed id of an episode that exists. */
async function existing(ctx: CliContext, raw: string): Promise<{ id: EpisodeId; state: EpisodeState }> {
  const { episodeId } = parseEpisodeId(raw);
  return { id: episodeId, state: await ctx.getStore().requireEpisode(episodeId) };
}

function registerGenerate(program: Command, ctx: CliContext): void {
  program
    .command('generate')
    .description('start production of an existing episode (video, cover, approval, assembly)')
    .argument('<episode_id>')
    .option('--approval-timeout <duration>', "give up waiting for approval after this long, e.g. '7 days'")
    .action(async (raw: string, opts: { approvalTimeout?: string }) => {
      const { id } = await existing(ctx, raw);
      const client = await ctx.getClient();
      const workflowId = productionWorkflowId(id);
      try {
        await client.workflow.start(episodeProductionWorkflow, {
          workflowId,
          taskQueue: ctx.config.taskQueue,
          args: [{ episodeId: id, approvalTimeout: opts.approvalTimeout }],
          workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE_FAILED_ONLY,
          ...episodeRunTags(id, 'production'),
        });
        console.log(`started ${workflowId}`);
      } catch (e) {
        const { WorkflowExecutionAlreadyStartedError } = await import('@temporalio/client');
        if (!(e instanceof WorkflowExecutionAlreadyStartedError)) throw e;
        throw new PipelineError(ErrorType.InvalidState, `${workflowId} is already running or has completed`);
      }
    });
}

function registerApprove(program: Command, ctx: CliContext): void {
  program
    .command('approve')
    .description('approve the cut of the current round (update `approve`; answers accepted or refused, with why)')
    .argument('<episode_id>')
    .option('--by <name>', 'who approves', os.userInfo().username)
    .option('--round <n>', ROUND_HELP)
    .action(async (raw: string, opts: { by: string; round?: string }) => {
      const by = checked(ErrorType.InvalidInput, approverProblem(opts.by), opts.by);
      const pinned = parseRound(opts.round);
      const { id } = await existing(ctx, raw);
      const d = await sendDecision(await ctx.getClient(), id, { kind: 'approve', by }, { pinned, door: 'cli' });
      console.log(`${id}: round ${d.round} approved by ${d.by} (${productionWorkflowId(id)})`);
    });
}

function registerRework(program: Command, ctx: CliContext): void {
  program
    .command('rework')
    .description('ask for a rework round with notes (update `requestRework`; one paid rework job)')
    .argument('<episode_id>')
    .requiredOption('--notes <text>', 'what to change')
    .option('--by <name>', 'who asks', os.userInfo().username)
    .option('--round <n>', ROUND_HELP)
    .action(async (raw: string, opts: { notes: string; by: string; round?: string }) => {
      const notes = checked(ErrorType.InvalidInput, notesProblem(opts.notes.trim()), opts.notes.trim());
      const by = checked(ErrorType.InvalidInput, approverProblem(opts.by), opts.by);
      const pinned = parseRound(opts.round);
      const { id } = await existing(ctx, raw);
      const d = await sendDecision(await ctx.getClient(), id, { kind: 'rework', by, notes }, { pinned, door: 'cli' });
      console.log(`${id}: rework of round ${d.round} requested by ${d.by} (${productionWorkflowId(id)})`);
    });
}

function registerReassemble(program: Command, ctx: CliContext): void {
  program
    .command('reassemble')
    .description('assemble the final video of a completed episode again (one paid assembly job)')
    .argument('<episode_id>')
    .action(async (raw: string) => {
      const { id, state } = await existing(ctx, raw);
      if (state.status !== 'completed') {
        throw new PipelineError(
          ErrorType.InvalidState,
          `${id} is ${state.status}; only a completed episode is reassembled`,
        );
      }
      const rounds = Object.values(state.steps)
        .filter((s) => s.step === 'assembly')
        .map((s) => s.round);
      const round = Math.max(...rounds, 0) + 1;
      const cut = latestJob(state, ['rework', 'video']);
      const cover = latestJob(state, ['cover']);
      const client = await ctx.getClient();
      const workflowId = reassemblyWorkflowId(id, round);
      const handle = await client.workflow.start(episodeReassemblyWorkflow, {
        workflowId,
        taskQueue: ctx.config.taskQueue,
        args: [{ episodeId: id, round, videoJob: cut, coverJob: cover }],
        workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
        ...episodeRunTags(id, `reassembly r${round}`),
      });
      const result = await handle.result();
      console.log(`${workflowId}: new final video sha256=${result.artifact.sha256} (${formatMoney(result.costCents)})`);
    });
}

function registerStatus(program: Command, ctx: CliContext): void {
  program
    .command('status')
    .description('production status of an episode (query `status`) and its stored steps')
    .argument('<episode_id>')
    .option('--json', 'machine-readable output')
    .action(async (raw: string, opts: { json?: boolean }) => {
      const { id, state } = await existing(ctx, raw);
      const client = await ctx.getClient();
      let production: ProductionStatus | null = null;
      try {
        production = await client.workflow.getHandle(productionWorkflowId(id)).query(statusQuery);
      } catch (e) {
        const { WorkflowNotFoundError } = await import('@temporalio/client');
        if (!(e instanceof WorkflowNotFoundError)) throw e;
      }
      const steps = Object.entries(state.steps).map(([key, s]) => ({
        step: key,
        status: s.status,
        remote_job_id: s.remote_job_id,
      }));
      const cost = {
        amount_cents: state.ledger.reduce((sum, l) => sum + l.amount_cents, 0),
        currency: currencyOf(state),
      };
      if (opts.json) return printJson({ episode_id: id, status: state.status, production, steps, cost });
      printStatus(state, production, steps, cost);
    });
}

function printStatus(
  state: EpisodeState,
  production: ProductionStatus | null,
  steps: { step: string; status: string; remote_job_id: string | null }[],
  cost: { amount_cents: number; currency: string },
): void {
  console.log(`${state.episode_id}: ${state.status}${production ? ` (workflow phase: ${production.phase})` : ''}`);
  if (production?.phase === 'awaiting_approval') {
    console.log(`  waiting for a decision on round ${production.reworkRound} since ${production.awaitingSince ?? '?'}`);
  }
  for (const s of steps) console.log(`  ${s.step.padEnd(12)} ${s.status.padEnd(20)} job=${s.remote_job_id ?? '-'}`);
  printParked(state);
  console.log(`  cost so far  ${formatMoney(cost.amount_cents, cost.currency)}`);
  for (const d of production?.decisions ?? []) {
    const via = d.channel ? ` through ${CHANNEL_LABELS[d.channel]}` : '';
    console.log(`  decision     round ${d.round}: ${d.kind} by ${d.by}${via}`);
  }
  for (const l of production?.lateDecisions ?? []) {
    console.log(`  LATE         ${l.kind} by ${l.by} at ${l.at}, ignored: ${l.reason}`);
  }
  for (const l of production?.droppedDecisions ?? []) {
    console.log(`  DROPPED      ${l.kind} signal by ${JSON.stringify(l.by)} at ${l.at}: ${l.reason}`);
  }
}

/** One line per parked step: why, and the command that settles it (after checking the vendor's billing for its key). */
function printParked(state: EpisodeState): void {
  const id = state.episode_id;
  for (const [key, s] of Object.entries(state.steps).filter(([, r]) => r.status === 'needs_reconciliation')) {
    console.log(
      `  PARKED       ${key}: ${(s.error ?? 'outcome unknown').replace(/\s+/g, ' ')}; settle it with ` +
        `\`episodes reconcile ${id} --step ${key} (--remote-job J | --not-submitted)\` (vendor key ${s.idempotency_key})`,
    );
  }
}

interface ReconcileOptions {
  step: string;
  remoteJob?: string;
  notSubmitted?: boolean;
  by: string;
}

function registerReconcile(program: Command, ctx: CliContext): void {
  program
    .command('reconcile')
    .description('settle a step whose submission outcome is unknown, then let production continue')
    .argument('<episode_id>')
    .requiredOption('--step <step>', 'the step, e.g. video-r0 (or video for round 0)')
    .option('--remote-job <job_id>', 'the vendor did accept it: this is its job')
    .option('--not-submitted', 'the vendor has no such job: it may be submitted again')
    .option('--by <name>', 'who settles it', os.userInfo().username)
    .action((raw: string, opts: ReconcileOptions) => reconcile(ctx, raw, opts));
}

async function reconcile(ctx: CliContext, raw: string, opts: ReconcileOptions): Promise<void> {
  if (Boolean(opts.remoteJob) === Boolean(opts.notSubmitted)) {
    throw new PipelineError(ErrorType.InvalidInput, 'give exactly one of --remote-job J and --not-submitted');
  }
  const { step, round } = parseStep(opts.step);
  const { id, state } = await existing(ctx, raw);
  const key = stepKey(step, round);
  const record = state.steps[key];
  const resolution = opts.remoteJob ? ('remote-job' as const) : ('not-submitted' as const);
  // The same settlement again (its signal was lost: Temporal unreachable): signal again, write nothing.
  const already =
    record?.status !== 'needs_reconciliation' &&
    record?.reconciliation?.resolution === resolution &&
    (opts.remoteJob === undefined || record.remote_job_id === opts.remoteJob);
  if (record?.status !== 'needs_reconciliation' && !already) {
    throw new PipelineError(
      ErrorType.InvalidState,
      `${id} ${key} is ${record?.status ?? 'not started'}; nothing to reconcile`,
    );
  }
  const where = { id, step, key };
  const parked = record?.status === 'needs_reconciliation' ? record : undefined;
  // The operator's claim is checked with the vendor first, then Temporal is reached, and only then is it written.
  const quoted = parked && opts.remoteJob ? await checkedQuote(parked.vendor ?? 'native', where, opts.remoteJob) : null;
  const client = await ctx.getClient();
  if (parked) await settleParked(ctx, { id, key }, quoted, opts);
  try {
    await client.workflow.getHandle(paidStepWorkflowId(id, step, round)).signal(reconciledSignal);
    console.log(
      `${id} ${key} ${already ? 'was already reconciled; signalled again' : 'reconciled'}; production continues`,
    );
  } catch (e) {
    const { WorkflowNotFoundError } = await import('@temporalio/client');
    if (!(e instanceof WorkflowNotFoundError)) throw e;
    console.log(`${id} ${key} reconciled; no step workflow is waiting (run \`episodes generate ${id}\` to resume)`);
  }
}

/** Writes the operator's settlement of a parked step (`quoted`: the claimed job's cost, checked with its vendor). */
async function settleParked(
  ctx: CliContext,
  { id, key }: { id: EpisodeId; key: string },
  quoted: Money | null,
  opts: ReconcileOptions,
): Promise<void> {
  const at = new Date().toISOString();
  await ctx.getStore().updateEpisode(id, (s) => {
    const r = s.steps[key]!;
    const settled = opts.remoteJob
      ? { ...r, status: 'submitted' as const, remote_job_id: opts.remoteJob, submitted_at: at, quoted_cost: quoted }
      : { ...r, status: 'not_submitted' as const };
    const reconciliation = {
      resolution: opts.remoteJob ? ('remote-job' as const) : ('not-submitted' as const),
      by: opts.by,
      at,
    };
    return { ...s, steps: { ...s.steps, [key]: { ...settled, reconciliation, error: null } } };
  });
}

/**
 * Checks the operator's claim with the vendor the step's job went to before it becomes the step's reference; returns
 * the job's cost so far (a quote; null for a metered job not finished).
 */
async function checkedQuote(vendorName: string, at: { id: EpisodeId; step: PaidStep; key: string }, remoteJob: string) {
  const { id, step, key } = at;
  const vendor = await vendorsFromEnv().open(vendorName);
  const job = await vendor.get(remoteJob);
  if (job.episode_id !== id || job.kind !== step) {
    throw new PipelineError(
      ErrorType.InvalidInput,
      `vendor job ${job.job_id} is a ${job.kind} of ${job.episode_id}, not ${key} of ${id}`,
    );
  }
  return job.cost;
}

/** A round number as the CLI takes it, alone (`--round 1`) or in a step key (`rework-r1`). */
const ROUND_NUMBER = String.raw`(0|[1-9]\d{0,3})`;

const ROUND_HELP =
  'the round you reviewed (`episodes status` shows it): the decision is for that round only, and a retry after ' +
  'it was taken gets the first answer back, even once the next round is open (default: the current round)';

/** `--round`: a round number as `episodes status` prints it, or undefined when not given. */
function parseRound(raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const problem = new RegExp(`^${ROUND_NUMBER}$`).test(raw)
    ? undefined
    : `--round must be a round number (0, 1, 2 ...), got ${JSON.stringify(raw)}`;
  return Number(checked(ErrorType.InvalidInput, problem, raw));
}

function currencyOf(state: EpisodeState): string {
  return state.ledger[0]?.currency ?? 'USD';
}

function checked(type: ErrorType, problem: string | undefined, value: string): string {
  if (problem !== undefined) throw new PipelineError(type, problem);
  return value;
}

export function parseStep(raw: string): { step: PaidStep; round: number } {
  const m = new RegExp(`^(video|cover|rework|assembly)(?:-r${ROUND_NUMBER})?$`).exec(raw);
  if (!m)
    throw new PipelineError(ErrorType.InvalidInput, `invalid step ${JSON.stringify(raw)}: expected e.g. video-r0`);
  return { step: m[1] as PaidStep, round: Number(m[2] ?? 0) };
}

function latestJob(state: EpisodeState, steps: PaidStep[]): string {
  const done = Object.values(state.steps)
    .filter((s) => steps.includes(s.step) && s.status === 'succeeded' && s.remote_job_id)
    .sort((a, b) => steps.indexOf(a.step) - steps.indexOf(b.step) || b.round - a.round);
  const job = done[0]?.remote_job_id;
  if (!job)
    throw new PipelineError(ErrorType.InvalidState, `${state.episode_id} has no finished ${steps.join('/')} job`);
  return job;
}
