/**
 * `npm run campaign`: a seeded, simulated year of weekly runs under faults, then an independent checker. Options and
 * exit codes: `npm run campaign -- --help` (campaign/options.ts).
 */
import { mkdtempSync, promises as fs, readFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { gitFacts } from '../testkit/machine';
import { check, type CheckResult } from './check/checker';
import { campaignTable, exitCode, violationDetails, violations, type ReportHeader } from './check/report';
import { writeCampaignDocs } from './docs';
import { Driver } from './driver';
import { parseOptions, unsafeStoreError, USAGE } from './options';
import { FAULT_TITLES, freezesAtAllocations, generatePlan, planSchema, replayCommand, type Plan } from './plan';

const REPO_ROOT = path.resolve(__dirname, '..', '..');

function log(line: string): void {
  process.stderr.write(`campaign ${new Date().toISOString().slice(11, 19)}: ${line}\n`);
}

async function main(): Promise<number> {
  const parsed = parseOptions(process.argv.slice(2));
  if (parsed.kind === 'help') {
    process.stdout.write(USAGE);
    return 0;
  }
  if (parsed.kind === 'error') {
    process.stderr.write(`campaign: ${parsed.error}\n\n${USAGE}`);
    return 2;
  }
  const o = parsed.options;
  if (o.docs && o.vendor !== 'native' && !o.unsafe) {
    process.stderr.write(
      'campaign: --docs writes the native tables of docs/reliability.md (and the --unsafe lines, of any vendor); drop it with --vendor\n',
    );
    return 2;
  }
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const drawn: Plan = o.replay
    ? planSchema.parse(JSON.parse(readFileSync(o.replay, 'utf8')))
    : generatePlan({
        seed: o.seed,
        store: o.store,
        vendor: o.vendor,
        weeks: o.weeks,
        perWeek: o['per-week'],
        faults: o.faults,
        workers: o.workers,
        without: o.without,
      });
  // The no-fence proof freezes lock holders where a takeover follows (a replayed plan.json is aimed already).
  const plan = o.unsafe === 'no-fence' && !o.replay ? freezesAtAllocations(drawn) : drawn;
  const refused = unsafeStoreError(o.unsafe, plan.store);
  if (refused) {
    process.stderr.write(`campaign: ${refused}\n`);
    return 2;
  }
  const out = path.resolve(o.out ?? mkdtempSync(path.join(os.tmpdir(), 'episodes-campaign-')));
  await fs.mkdir(out, { recursive: true });
  await fs.rm(path.join(out, 'history.jsonl'), { force: true });
  await fs.writeFile(path.join(out, 'plan.json'), JSON.stringify(plan, null, 2) + '\n');
  const weeks = new Set(plan.slots.map((s) => s.week)).size;
  const perWeek = Math.round(plan.slots.length / Math.max(1, weeks));
  log(
    `seed ${plan.seed}, ${plan.store} store, vendor ${plan.vendor}, ${weeks} weeks x ${perWeek}, ${plan.faults.length} faults, out ${out}`,
  );
  const started = Date.now();
  const loadStart = os.loadavg();
  const driver = new Driver({ plan, out, unsafe: o.unsafe, stuckMs: 180_000, settleMs: 25 * 60_000, log });
  // Ctrl-C or a CI timeout: stop the stack (servers, workers, PostgreSQL) before going.
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      log(`${signal}: stopping the stack`);
      void driver.stop().finally(() => process.exit(130));
    });
  }
  let result: CheckResult;
  try {
    const run = await driver.run();
    log('checking');
    result = await check({
      out,
      journals: run.journals,
      cliEnv: run.cliEnv,
      temporalAddress: run.temporalAddress,
      planned: [
        ...plan.slots.map((s) => ({ key: s.key, week: s.week, reworks: reworksOf(s.decisions) })),
        ...run.triggerKeys.map((key, i) => ({ key, reworks: reworksOf(plan.triggers[i]?.decisions ?? []) })),
      ],
      stuck: run.stuck,
      requireEveryKind: weeks >= 52,
    });
    await fs.writeFile(path.join(out, 'driver.json'), JSON.stringify({ ...run, cliEnv: undefined }, null, 2) + '\n');
  } finally {
    await driver.stop();
  }
  const header: ReportHeader = {
    store: plan.store,
    vendor: plan.vendor,
    seed: plan.seed,
    weeks,
    perWeek,
    wallSeconds: (Date.now() - started) / 1000,
    replay: replayCommand(plan, path.join(out, 'plan.json'), o.unsafe),
    commit: commitLine(gitFacts(REPO_ROOT)),
    machine: machineLine(loadStart),
    titles: FAULT_TITLES,
  };
  const table = campaignTable(result, header);
  const bad = violations(result);
  await fs.writeFile(
    path.join(out, 'report.json'),
    JSON.stringify(
      { ...header, titles: undefined, git: gitFacts(REPO_ROOT), unsafe: o.unsafe ?? null, ...result },
      null,
      2,
    ) + '\n',
  );
  process.stdout.write(`\n${table}\n\n`);
  if (bad > 0) process.stdout.write(`VIOLATIONS (${bad}):\n${violationDetails(result)}\n\nkept in ${out}\n`);
  if (o.docs) {
    const written = await writeCampaignDocs({ ...header, unsafe: o.unsafe ?? null, ...result });
    written.forEach((w) => log(`wrote ${w}`));
  }
  if (bad === 0 && !o.out) await fs.rm(out, { recursive: true, force: true });
  return exitCode(result);
}

function reworksOf(decisions: readonly { kind: string }[]): number {
  return decisions.filter((d) => d.kind === 'rework').length;
}

/** The code a run checked: its commit, and whether the tree had changes on top. */
function commitLine(git: { commit: string; dirty: boolean }): string {
  return `${git.commit.slice(0, 7)}${git.dirty ? ' (uncommitted changes)' : ''}`;
}

function machineLine(loadStart: number[]): string {
  const cpu = os.cpus()[0]?.model.trim() ?? 'unknown CPU';
  const load = (l: number[]) => l.map((x) => x.toFixed(1)).join(' ');
  return `${os.cpus().length} cores (${cpu}), load ${load(loadStart)} at start, ${load(os.loadavg())} at end`;
}

main().then(
  (code) => process.exit(code),
  (e: unknown) => {
    log(e instanceof Error ? (e.stack ?? e.message) : String(e));
    process.exit(1);
  },
);
