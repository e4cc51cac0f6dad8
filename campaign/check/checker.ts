/**
 * The checker: independent of the code under test (it imports nothing from src/; lint enforces it). It reads the
 * vendor's billing journal, the store through the `episodes` CLI, Temporal visibility and the campaign's own plan and
 * history, replays every closed workflow history on the current workflow bundle, and reports each invariant with
 * its violations and each fault kind with injected / hit in flight / recovered.
 */
import * as path from 'node:path';
import { Worker } from '@temporalio/worker';
import { countFaults, faultInvariants, readFaultLines, type KindCount } from './fault-counts';
import {
  decisionsApplied,
  doubleCharges,
  duplicateEpisodes,
  forgottenBeforeRecorded,
  idsOwnedTwice,
  ledgerBilling,
  lostRuns,
  unfinishedWorkflows,
  type PlannedRun,
} from './invariants';
import { readBilling, StoreReader, TemporalReader, type Journal } from './reads';

export interface CheckInput {
  out: string;
  /** Each vendor simulator's billing journal: their union is the ground truth. */
  journals: Journal[];
  cliEnv: NodeJS.ProcessEnv;
  temporalAddress: string;
  /** Runs the campaign planned (slots) or started (triggers), with the reworks asked for. */
  planned: PlannedRun[];
  /** What the driver could not settle: stuck episodes (no progress, no parked reason). */
  stuck: string[];
  /**
   * Every kind injected must hit in flight (the default year). At any size a kind injected 3 times or more must
   * (fault-counts.ts).
   */
  requireEveryKind: boolean;
}

export type { KindCount } from './fault-counts';

export interface Invariant {
  name: string;
  violations: number;
  details: string[];
}

export interface CheckResult {
  invariants: Invariant[];
  faults: KindCount[];
  counts: { episodes: number; completed: number; charges: number; ledgerEntries: number; billedCents: number };
  ledgerMinusBillingCents: number;
  replayed: number;
  /** Sequence gaps the product leaves on purpose (`forgottenBeforeRecorded`), each with its evidence: not violations. */
  accountedGaps: string[];
}

export async function check(input: CheckInput): Promise<CheckResult> {
  const store = new StoreReader(input.cliEnv);
  const [episodes, ledger, verify] = [await store.episodes(), await store.ledger(), await store.verify()];
  const billing = readBilling(input.journals);
  const parked = new Map<string, string[]>();
  for (const e of episodes.filter((x) => x.status !== 'completed'))
    parked.set(e.episode_id, await store.parkedLines(e.episode_id));
  const temporal = await TemporalReader.connect(input.temporalAddress);
  let runs, replay;
  try {
    runs = await temporal.runs();
    replay = await replayClosed(temporal);
  } finally {
    await temporal.close();
  }
  const money = ledgerBilling(ledger, billing);
  const invariant = (name: string, details: string[]): Invariant => ({ name, violations: details.length, details });
  const faultLines = readFaultLines(path.join(input.out, 'history.jsonl'));
  const completed = new Set(episodes.filter((e) => e.status === 'completed').map((e) => e.episode_id));
  const faults = countFaults(faultLines, completed);
  const evidence = { runs, billing, faults: faultLines };
  const episodesOnce = duplicateEpisodes(episodes, (id) => forgottenBeforeRecorded(id, evidence));
  const invariants = [
    invariant('duplicate episodes (one per allocation key, sequences 0..n-1, one key per id in Temporal)', [
      ...episodesOnce.violations,
      ...idsOwnedTwice(runs),
    ]),
    invariant('double charges (at most one per episode, step, round)', doubleCharges(billing)),
    invariant('lost runs (every planned slot completed)', lostRuns(input.planned, episodes, parked)),
    invariant('ledger - billing, entry for entry', money.lines),
    invariant(
      'episodes verify problems',
      verify.problems.map((p) => JSON.stringify(p)),
    ),
    invariant('workflows not completed (Temporal visibility)', unfinishedWorkflows(runs)),
    invariant('histories that do not replay on the current code', replay.failures),
    invariant(
      'decisions applied other than once (reworks paid = asked)',
      decisionsApplied(input.planned, episodes, billing),
    ),
    invariant('stuck episodes (no progress, no parked reason)', input.stuck),
    ...faultInvariants(faultLines, faults, input.requireEveryKind).map((i) => invariant(i.name, i.details)),
  ];
  return {
    invariants,
    faults,
    counts: {
      episodes: episodes.length,
      completed: episodes.filter((e) => e.status === 'completed').length,
      charges: billing.length,
      ledgerEntries: ledger.length,
      billedCents: billing.reduce((n, c) => n + c.amount_cents, 0),
    },
    ledgerMinusBillingCents: money.cents,
    accountedGaps: episodesOnce.gaps,
    replayed: replay.count,
  };
}

/** Every closed workflow's history replayed on the current workflow bundle (dist/workflow-bundle.js). */
async function replayClosed(temporal: TemporalReader): Promise<{ count: number; failures: string[] }> {
  const codePath = path.resolve(__dirname, '..', '..', 'workflow-bundle.js');
  const histories = temporal.client.workflow.list({ query: `ExecutionStatus != 'Running'` }).intoHistories();
  const failures: string[] = [];
  let count = 0;
  for await (const r of Worker.runReplayHistories(
    { workflowBundle: { codePath }, replayName: 'campaign' },
    histories,
  )) {
    count += 1;
    if (r.error) failures.push(`${r.workflowId}: ${r.error.message.slice(0, 300)}`);
  }
  return { count, failures };
}
