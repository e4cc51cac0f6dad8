/**
 * The worker process's telemetry, end to end: a real worker (`node dist/src/worker.js`) on the real dev server and
 * the vendor simulator over HTTP, with EPISODES_METRICS_ADDRESS and EPISODES_LOG_FORMAT=json. After one full episode,
 * the scraped /metrics counts one created allocation, three charges and the episode's cents, even though the first
 * allocation attempt and the first charge attempt failed after their writes (failpoints) and were retried: a retried
 * allocation counts as `existing`, a retried charge counts nothing. Every stdout line is one JSON object, and the
 * vendor key appears nowhere. `promtool check metrics` finds nothing to say about the scraped text (counters end in
 * `_total`, labels are snake_case).
 */
import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { parseEpisodeId } from '../../../src/domain/episode-id';
import type { EpisodeState, LedgerEntry } from '../../../src/domain/episode-state';
import { FileEpisodeStore } from '../../../src/store/file-store';
import { startVendorSimulator, type VendorSimulator } from '../../../src/vendor-sim/simulator';
import { resolveWorkflowSource } from '../../../src/process/workflow-bundle';
import { collect, runCli, spawnNode } from '../../../testkit/processes';
import { promtool } from '../../../testkit/promtool';
import { createTestEnv, uniqueTaskQueue } from '../../../testkit/temporal';
import { closedPort } from '../../../testkit/vendor';
import { until } from '../../../testkit/wait';
import { SDK_FAMILIES } from '../../../testkit/exported-metrics';
import { parsePrometheus, sumOf } from '../../../testkit/prometheus';

const KEY = 'sk-telemetry-SECRET-61c0d2e9a4';
const W32 = '2026-W32';

describe('worker telemetry: Prometheus metrics and JSON logs of a real worker process', function () {
  this.timeout(180_000);
  let env: TestWorkflowEnvironment;
  let vendor: VendorSimulator;
  let root: string;
  before(async () => {
    env = await createTestEnv();
    root = await fs.mkdtemp(path.join(os.tmpdir(), 'telemetry-'));
    vendor = await startVendorSimulator({ apiKey: KEY, jobDurationMs: 30 });
  });
  after(async () => {
    await vendor?.close();
    await env?.teardown();
    await fs.rm(root, { recursive: true, force: true });
  });

  it('one full episode, retried allocation and retried charge: created 1, existing 1, charges 3, its cents', async () => {
    const dataDir = path.join(root, 'data');
    // Group-readable on purpose: the loader's warning is application output, so it must come as JSON too.
    const keyFile = path.join(root, 'vendor.key');
    await fs.writeFile(keyFile, `${KEY}\n`, { mode: 0o644 });
    const address = `127.0.0.1:${await closedPort()}`;
    const common = {
      TEMPORAL_ADDRESS: env.address,
      EPISODES_TASK_QUEUE: uniqueTaskQueue('telemetry'),
      EPISODES_DATA_DIR: dataDir,
      EPISODES_STORE_URL: '',
    };
    const worker = spawnNode('src/worker.js', [], {
      ...common,
      EPISODES_VENDOR_BASE_URL: vendor.url,
      EPISODES_VENDOR_API_KEY: '',
      EPISODES_VENDOR_API_KEY_FILE: keyFile,
      EPISODES_METRICS_ADDRESS: address,
      EPISODES_LOG_FORMAT: 'json',
      EPISODES_LOG_LEVEL: 'DEBUG',
      EPISODES_STATE_METRICS_INTERVAL_MS: '200',
      // Both fail after their write is durable, so the retry finds the episode, and the ledger entry, already there.
      EPISODES_FAILPOINTS: 'allocation.before-return=throw@1,submission.ledger-written=throw@1',
    });
    const output = collect(worker);
    const scrape = async () => parsePrometheus((text = await (await fetch(`http://${address}/metrics`)).text()));
    let samples;
    let text = '';
    let state: EpisodeState | undefined;
    try {
      const cliEnv = {
        ...common,
        EPISODES_VENDOR_API_KEY: '',
        EPISODES_VENDOR_API_KEY_FILE: '',
        EPISODES_FAILPOINTS: '',
      };
      const run = await runCli(['run', '--key', 'telemetry-run', '--week', W32, '--json'], cliEnv);
      assert.equal(run.code, 0, run.stderr);
      const id = parseEpisodeId((JSON.parse(run.stdout) as { episodeId: string }).episodeId).episodeId;
      const store = new FileEpisodeStore(dataDir);
      const reached = (want: EpisodeState['status']) => async () => {
        const s = await store.getEpisode(id);
        return s?.status === want ? s : undefined;
      };
      const waiting = await until('awaiting_approval', reached('awaiting_approval'), 90_000);
      // The state gauges: one episode waits for a person, none stalls, the budget is partly spent.
      const spent = waiting.ledger.reduce((sum, l) => sum + l.amount_cents, 0);
      const parked = await until('the gauges see the waiting episode', async () => {
        const s = await scrape();
        return sumOf(s, 'episodes_unfinished', { status: 'awaiting_approval' }) === 1 ? s : undefined;
      });
      assert.ok(sumOf(parked, 'episodes_parked_seconds', { reason: 'awaiting_approval' }) > 0);
      assert.equal(sumOf(parked, 'episodes_parked_seconds', { reason: 'needs_reconciliation' }), 0);
      assert.equal(sumOf(parked, 'episodes_stalled_seconds', {}), 0);
      assert.ok(spent > 0);
      assert.equal(sumOf(parked, 'episodes_budget_left_ratio', {}), (20_000 - spent) / 20_000);
      // The cluster gauges: this worker polls the current build (the deployment's first); no schedule, then one.
      await until('the current build polled', async () =>
        sumOf(await scrape(), 'episodes_current_build_pollers', {}) >= 1 ? true : undefined,
      );
      assert.equal(sumOf(parked, 'episodes_schedule_active', {}), 0, 'no schedule yet');
      const ensure = await runCli(['schedule', 'ensure'], cliEnv);
      assert.equal(ensure.code, 0, ensure.stderr);
      await until('the schedule active', async () =>
        sumOf(await scrape(), 'episodes_schedule_active', {}) === 1 ? true : undefined,
      );
      const approve = await runCli(['approve', id, '--by', 'editor'], cliEnv);
      assert.equal(approve.code, 0, approve.stderr);
      state = await until('completed', reached('completed'), 90_000);
      // The store says completed a moment before the production workflow itself completes: wait for the SDK's count
      // of the five workflows (weekly run, production, video, cover, assembly) rather than race it.
      samples = await until('five completed workflows and no unfinished episode on /metrics', async () => {
        const scraped = await scrape();
        const finished = sumOf(scraped, 'episodes_unfinished', {}) === 0;
        return sumOf(scraped, 'temporal_workflow_completed_total', {}) >= 5 && finished ? scraped : undefined;
      });
    } finally {
      worker.kill('SIGTERM');
    }
    const w = await output;
    assert.equal(w.code, 0, `worker exit: ${w.stderr}`);
    const lint = promtool(['check', 'metrics'], text);
    assert.deepEqual(lint, { code: 0, output: '' }, "promtool check metrics on the worker's /metrics");
    // The alert rules and the dashboard are checked against SDK_FAMILIES: each must really be served.
    for (const [type, names] of Object.entries(SDK_FAMILIES)) {
      for (const name of names) assert.ok(text.includes(`\n# TYPE ${name} ${type}\n`), `${name} (${type}) exported`);
    }

    const cents = state.ledger.reduce((sum, l) => sum + l.amount_cents, 0);
    assert.equal(state.ledger.length, 3, 'video, cover, assembly in the ledger');
    assert.ok(cents > 0);
    assert.equal(sumOf(samples, 'episodes_allocations_total', { outcome: 'created' }), 1);
    assert.equal(
      sumOf(samples, 'episodes_allocations_total', { outcome: 'existing' }),
      1,
      'the retry found its episode',
    );
    assert.equal(sumOf(samples, 'episodes_allocations_total', { outcome: 'refused' }), 0);
    assert.equal(sumOf(samples, 'episodes_charges_total', {}), 3, 'the retried charge counted once');
    assert.equal(sumOf(samples, 'episodes_charged_cents_total', {}), cents);
    for (const step of ['video', 'cover', 'assembly']) {
      const entry: LedgerEntry | undefined = state.ledger.find((l) => l.step === step);
      assert.equal(sumOf(samples, 'episodes_charged_cents_total', { step }), entry?.amount_cents, step);
      assert.equal(sumOf(samples, 'episodes_vendor_submissions_total', { step, outcome: 'accepted' }), 1, step);
    }
    assert.equal(sumOf(samples, 'episodes_budget_refusals_total', {}), 0);
    assert.equal(
      sumOf(samples, 'temporal_workflow_completed_total', {}),
      5,
      'the SDK metrics are on the same endpoint',
    );
    const charged = samples.find((s) => s.name === 'episodes_charged_cents_total');
    assert.deepEqual(Object.keys(charged?.labels ?? {}).sort(), [
      'activity_type',
      'job_status',
      'namespace',
      'step',
      'task_queue',
    ]);

    // Logs: one JSON object per line, correlated; the key nowhere.
    const lines = w.stdout.split('\n').filter((l) => l.length > 0);
    const records = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.ok(records.every((r) => typeof r.ts === 'string' && typeof r.level === 'string' && 'message' in r));
    const id = state.episode_id;
    const activity = records.find((r) => r.activity_type === 'awaitPaidStep' && r.episode_id === id);
    assert.ok(activity && typeof activity.workflow_id === 'string', 'an activity line names workflow and episode');
    assert.ok(
      records.some((r) => String(r.message).startsWith('worker: task queue')),
      'the worker line is JSON too',
    );
    assert.ok(records.some((r) => r.level === 'WARN' && /readable by group or others/.test(String(r.message))));
    const source = await resolveWorkflowSource({});
    const started = records.map((r) => String(r.message)).join('\n');
    if (source.kind === 'bundle') assert.ok(started.includes(`workflow bundle sha256 ${source.sha256}`));
    else assert.ok(started.includes('bundling workflows from sources'), source.reason);
    for (const text of [w.stdout, w.stderr]) assert.ok(!text.includes(KEY), 'the vendor key leaked into the logs');
  });
});
